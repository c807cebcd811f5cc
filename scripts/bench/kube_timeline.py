#!/usr/bin/env python3
"""Where the time of one kratix-rs run of scripts/bench/kubernetes.sh went, from the objects
the run left in its namespace (`kubectl get pipelineruns,jobs,pods,works,<requests> -o json`,
saved by `kubernetes.sh --keep DIR`) and the moment the requests were applied.

Usage: kube_timeline.py OBJECTS.json START_EPOCH_SECONDS

Prints a Markdown table: for each step of a pipeline run (PipelineRun created, its Job
created, its pod started, the pipeline's container started, the pod's last container ended,
the Job Complete, the run finished, the Work written, its WorkPlacement created and written to
the state store, the request settled) the first, median and last time in seconds after the
requests were applied; then the median and the longest gap between consecutive steps of one
request. Kubernetes 1.20 stamps its times in whole seconds; kratix-rs writes its conditions'
times with milliseconds.
"""
import json
import statistics
import sys
from datetime import datetime, timezone


def at(stamp):
    """Seconds since the epoch of an RFC 3339 time, UTC, with or without a fraction of a second
    (the API server stamps whole seconds; kratix-rs writes its conditions' times with
    milliseconds)."""
    if not stamp:
        return None
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


# Steps of which a request's latest counts (it has one per pipeline); of the others, the earliest.
ENDINGS = ("pod ended", "Job Complete", "run finished", "Work written", "placement created",
           "placement written", "request settled")


def true_since(obj, kind):
    """When the condition `kind` of `obj` turned True, if it is."""
    for cond in obj.get("status", {}).get("conditions", []):
        if cond.get("type") == kind and cond.get("status") == "True":
            return at(cond.get("lastTransitionTime"))
    return None


def main():
    items = json.load(open(sys.argv[1]))["items"]
    start = float(sys.argv[2])
    by_kind = {}
    for item in items:
        by_kind.setdefault(item["kind"], []).append(item)

    def label(obj, key):
        return obj["metadata"].get("labels", {}).get(key)

    steps = {}  # request name -> step -> seconds since start

    def note(request, step, when):
        if request is None or when is None:
            return
        current = steps.setdefault(request, {})
        # The earliest of its kind for "created"/"started" steps, the latest for endings.
        if step in current:
            keep = max if step in ENDINGS else min
            current[step] = keep(current[step], when - start)
        else:
            current[step] = when - start

    for run in by_kind.get("PipelineRun", []):
        request = run["spec"].get("resourceName")
        note(request, "run created", at(run["metadata"]["creationTimestamp"]))
        note(request, "run finished", at(run.get("status", {}).get("completionTime")))
    for job in by_kind.get("Job", []):
        request = label(job, "kratix.io/resource-name")
        note(request, "Job created", at(job["metadata"]["creationTimestamp"]))
        note(request, "Job Complete", true_since(job, "Complete"))
    for pod in by_kind.get("Pod", []):
        request = label(pod, "kratix.io/resource-name")
        status = pod.get("status", {})
        note(request, "pod started", at(status.get("startTime")))
        containers = status.get("initContainerStatuses", []) + status.get("containerStatuses", [])
        ended = [c["state"]["terminated"] for c in containers if "terminated" in c.get("state", {})]
        if ended:
            note(request, "first container started", min(at(t["startedAt"]) for t in ended))
            note(request, "pod ended", max(at(t["finishedAt"]) for t in ended))
    requests_of_works = {}
    for work in by_kind.get("Work", []):
        request = label(work, "kratix.io/resource-name")
        requests_of_works[work["metadata"]["name"]] = request
        note(request, "Work written", at(work["metadata"]["creationTimestamp"]))
    for placement in by_kind.get("WorkPlacement", []):
        request = requests_of_works.get(label(placement, "kratix.io/work"))
        note(request, "placement created", at(placement["metadata"]["creationTimestamp"]))
        note(request, "placement written", true_since(placement, "WriteSucceeded"))
    for kind, objects in by_kind.items():
        if kind in ("PipelineRun", "Job", "Pod", "Work", "WorkPlacement"):
            continue
        for obj in objects:
            note(obj["metadata"]["name"], "request settled", true_since(obj, "WorksSucceeded"))

    order = ["run created", "Job created", "pod started", "first container started", "pod ended",
             "Job Complete", "Work written", "run finished", "placement created",
             "placement written", "request settled"]
    # Objects a run did not keep (older runs kept no WorkPlacements) leave their steps out.
    order = [step for step in order if any(step in s for s in steps.values())]
    print("| step (seconds after the requests were applied) | requests | first | median | last |")
    print("|---|---|---|---|---|")
    for step in order:
        values = sorted(s[step] for s in steps.values() if step in s)
        if values:
            print(f"| {step} | {len(values)} | {values[0]:.0f} | {statistics.median(values):.0f} | {values[-1]:.0f} |")
    print()
    print("| gap within one request | median | longest |")
    print("|---|---|---|")
    for a, b in zip(order, order[1:]):
        gaps = sorted(s[b] - s[a] for s in steps.values() if a in s and b in s)
        if gaps:
            print(f"| {a} → {b} | {statistics.median(gaps):.0f} s | {gaps[-1]:.0f} s |")


if __name__ == "__main__":
    main()
