#!/usr/bin/env python3
"""Where the time of one kratix-rs run of scripts/bench/kubernetes.sh went, from the objects
the run left in its namespace (`kubectl get pipelineruns,jobs,pods,works,<requests> -o json`,
saved by `kubernetes.sh --keep DIR`) and the moment the requests were applied.

Usage: kube_timeline.py OBJECTS.json START_EPOCH_SECONDS

Prints a Markdown table: for each step of a pipeline run (PipelineRun created, its Job
created, its pod started, the pipeline's container started, the pod's last container ended,
the Work written, the request settled) the first, median and last time in seconds after the
requests were applied; then the median and the longest gap between consecutive steps of one
request. The API server stamps times in whole seconds.
"""
import json
import statistics
import sys
from datetime import datetime


def at(stamp):
    if not stamp:
        return None
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").timestamp()


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
            keep = max if step in ("pod ended", "Work written", "request settled") else min
            current[step] = keep(current[step], when - start)
        else:
            current[step] = when - start

    for run in by_kind.get("PipelineRun", []):
        note(run["spec"].get("resourceName"), "run created", at(run["metadata"]["creationTimestamp"]))
    for job in by_kind.get("Job", []):
        note(label(job, "kratix.io/resource-name"), "Job created", at(job["metadata"]["creationTimestamp"]))
    for pod in by_kind.get("Pod", []):
        request = label(pod, "kratix.io/resource-name")
        status = pod.get("status", {})
        note(request, "pod started", at(status.get("startTime")))
        containers = status.get("initContainerStatuses", []) + status.get("containerStatuses", [])
        ended = [c["state"]["terminated"] for c in containers if "terminated" in c.get("state", {})]
        if ended:
            note(request, "first container started", min(at(t["startedAt"]) for t in ended))
            note(request, "pod ended", max(at(t["finishedAt"]) for t in ended))
    for work in by_kind.get("Work", []):
        note(label(work, "kratix.io/resource-name"), "Work written", at(work["metadata"]["creationTimestamp"]))
    for kind, objects in by_kind.items():
        if kind in ("PipelineRun", "Job", "Pod", "Work"):
            continue
        for obj in objects:
            for cond in obj.get("status", {}).get("conditions", []):
                if cond.get("type") == "WorksSucceeded" and cond.get("status") == "True":
                    note(obj["metadata"]["name"], "request settled", at(cond.get("lastTransitionTime")))

    order = ["run created", "Job created", "pod started", "first container started", "pod ended",
             "Work written", "request settled"]
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


main()
