#!/usr/bin/env python3
"""From the pods' own timestamps (`kubectl get pods -o json` on standard input; other kinds in
the list are skipped): the most pods alive at one moment, and the seconds from START (seconds
since the epoch) to the end of the last pod to end. A pod is alive from its `status.startTime` to the `finishedAt` of the last of
its containers to end (init containers included). Pods that have not ended count until the
last moment any pod ended.

Kubernetes 1.20 stamps these times in whole seconds, so intervals are taken as closed: two pods
of which one ended in the second the other started count as alive at once.

Usage: kubectl get pods -n NS -o json | kube_pods.py START
"""
import json
import sys

# Run from the repository: no __pycache__ beside the scripts.
sys.dont_write_bytecode = True
from kube_timeline import at  # noqa: E402


def interval(pod):
    status = pod.get("status", {})
    start = at(status.get("startTime"))
    containers = status.get("initContainerStatuses", []) + status.get("containerStatuses", [])
    ends = [at(c["state"]["terminated"].get("finishedAt"))
            for c in containers if "terminated" in c.get("state", {})]
    ends = [e for e in ends if e is not None]
    # An init container that never ran leaves the pod's story unfinished: it counts as alive.
    finished = ends and len(ends) == len(containers)
    return start, (max(ends) if finished else None)


def most_at_once(intervals):
    """The most closed intervals [start, end] covering one moment; `end` None is open-ended."""
    known = [e for _, e in intervals if e is not None] + [s for s, _ in intervals]
    horizon = max(known) if known else 0
    events = []
    for start, end in intervals:
        # At equal times starts come first (0 before 1): closed intervals touching overlap.
        events.append((start, 0))
        events.append((horizon if end is None else end, 1))
    events.sort()
    alive = most = 0
    for _, kind in events:
        alive += 1 if kind == 0 else -1
        most = max(most, alive)
    return most


def main():
    pods = [i for i in json.load(sys.stdin)["items"] if i.get("kind", "Pod") == "Pod"]
    intervals = [i for i in map(interval, pods) if i[0] is not None]
    ends = [e for _, e in intervals if e is not None]
    last = f"{max(ends) - float(sys.argv[1]):.0f}" if ends else "n/a"
    print(most_at_once(intervals), last)


if __name__ == "__main__":
    main()
