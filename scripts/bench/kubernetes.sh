#!/usr/bin/env bash
# Kubernetes benchmark, on a real node with kratix-rs installed (the tests' node: `scripts/testworld
# start DIR --node`, the image from scripts/test-image.sh, `kubectl apply -k deploy`). In one run:
#   - floor "one container": N plain Jobs of one busybox container (`true`), created at once,
#     until every one is Complete;
#   - floor "Kratix's pod shape": N plain Jobs shaped like Kratix's (init containers reader,
#     the pipeline's, work-writer; container status-writer; three emptyDirs), all busybox `true`;
#   - kratix-rs: N requests of a Promise with P no-op pipelines (P = 1, then 2), applied at once,
#     until every request has ConfigureWorkflowCompleted and WorksSucceeded True; the most
#     pipeline pods seen with a container running at once; the controller container's CPU
#     seconds and peak memory (its cgroup, read on this host through the node's engine).
# Prints a Markdown section on standard output; progress on standard error.
# With --keep DIR, each kratix-rs run's objects (requests, PipelineRuns, Jobs, pods, Works) are
# kept in DIR as they were once every request settled, with the controller's log at the end,
# and the section gains where the time went (scripts/bench/kube_timeline.py).
# Usage: KUBECONFIG=… DOCKER_HOST=… NODE_IP=… scripts/bench/kubernetes.sh [--requests N]
#        [--pipelines "1 2"] [--skip-floors] [--keep DIR]
# (`eval "$(scripts/testworld env DIR)"` sets the three.)
set -euo pipefail

n=100
pipelines="1 2"
floors=yes
keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --requests) n="$2"; shift ;;
        --pipelines) pipelines="$2"; shift ;;
        --skip-floors) floors=no ;;
        --keep) keep="$2"; mkdir -p "$keep"; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
: "${KUBECONFIG:?KUBECONFIG must name the kubeconfig of the node}"
: "${DOCKER_HOST:?DOCKER_HOST must name the engine of the node}"
: "${NODE_IP:?NODE_IP must be the address of the node}"

repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=scripts/bench/common.sh
source "$repo/scripts/bench/common.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/kratix-bench-kube.XXXXXX")"
daemon_pid=""
cleanup() {
    if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; fi
    kubectl delete namespace kbench-floor kbench1 kbench2 --wait=false --ignore-not-found >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
ns=kratix-platform-system
image=local/busybox:1

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# How many pods labelled $1 (in every namespace) have a container running.
running_pods() {
    kubectl get pods -A -l "$1" -o json |
        jq '[.items[] | select([(.status.initContainerStatuses // [])[], (.status.containerStatuses // [])[]] | any(.state.running != null))] | length'
}

# Waits until `kubectl get $2 -n $1 -o json | jq $3` prints $4; echoes the most pods labelled
# $5 seen running meanwhile.
wait_count() {
    local namespace=$1 kind=$2 filter=$3 want=$4 pods=$5 most=0 got r
    while :; do
        got=$(kubectl get "$kind" -n "$namespace" -o json | jq "$filter")
        r=$(running_pods "$pods")
        [ "$r" -gt "$most" ] && most=$r
        [ "$got" -ge "$want" ] && break
        sleep 0.5
    done
    echo "$most"
}

# A plain Job: $1 name, $2 shape (one|kratix).
floor_job() {
    local c='{name: %s, image: '"$image"', command: [sh, -c, "true"], resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 200m, memory: 256Mi}}, volumeMounts: [{name: shared-input, mountPath: /kratix/input}, {name: shared-output, mountPath: /kratix/output}, {name: shared-metadata, mountPath: /kratix/metadata}]}'
    local init main
    if [ "$2" = one ]; then
        init="[]"
        main="[$(printf "$c" pipeline)]"
    else
        init="[$(printf "$c" reader), $(printf "$c" pipeline), $(printf "$c" work-writer)]"
        main="[$(printf "$c" status-writer)]"
    fi
    cat <<YAML
---
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: kbench-floor, labels: {kbench: floor}}
spec:
  backoffLimit: 0
  template:
    metadata: {labels: {kbench: floor}}
    spec:
      restartPolicy: Never
      initContainers: $init
      containers: $main
      volumes: [{name: shared-input, emptyDir: {}}, {name: shared-output, emptyDir: {}}, {name: shared-metadata, emptyDir: {}}]
YAML
}

# Seconds and most pods at once for N plain Jobs of shape $1.
floor() {
    kubectl create namespace kbench-floor >/dev/null
    until kubectl get serviceaccount default -n kbench-floor >/dev/null 2>&1; do sleep 0.5; done
    for i in $(seq 1 "$n"); do floor_job "floor-$i" "$1"; done > "$work/floor.yaml"
    local start most end
    start=$(now)
    kubectl apply -f "$work/floor.yaml" >/dev/null
    most=$(wait_count kbench-floor jobs '[.items[] | select(.status.succeeded == 1)] | length' "$n" kbench=floor)
    end=$(now)
    kubectl delete namespace kbench-floor --wait=true --timeout=300s >/dev/null
    echo "$(elapsed "$start" "$end") $most"
}

# The controller container's cgroup folder (memory controller) and its cpuacct folder.
controller_cgroup() {
    local id pid
    id=$(kubectl get pods -n "$ns" -l app.kubernetes.io/component=controller -o json |
        jq -r '[.items[] | select(.metadata.deletionTimestamp == null)][0].status.containerStatuses[0].containerID' | sed 's|docker://||')
    pid=$(docker inspect --format '{{.State.Pid}}' "$id")
    mem=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" { print $3 }' "/proc/$pid/cgroup")
    cpu=/sys/fs/cgroup/cpuacct$(awk -F: '$2 ~ /cpuacct/ { print $3 }' "/proc/$pid/cgroup")
}

# The platform: a store served by git daemon on the node's address, the Destination and the
# Promise of the other benches (common.sh), with $1 pipelines.
platform() {
    bench_platform_head kbench "git://$NODE_IP:$port/store.git"
    for p in $(seq 1 "$1"); do
        cat <<YAML
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {name: p$p}
          spec:
            containers:
              - name: write
                image: $image
                command: [sh, -c, 'printf "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s-p$p, namespace: default}\n" \$KRATIX_OBJECT_NAME > \$KRATIX_OUTPUT_DIR/p$p.yaml']
YAML
    done
}

# Seconds, most pipeline pods at once, controller CPU seconds and peak MiB for N requests (in
# namespace kbench$1) of the Promise with $1 pipelines. The Promise stays between runs, changed;
# the previous run's requests are deleted first, so that the change re-runs none.
kratix() {
    local previous
    for previous in $(kubectl get namespaces -o name | grep '^namespace/kbench[0-9]'); do
        kubectl delete "$previous" --wait=true --timeout=600s >/dev/null
    done
    platform "$1" | kubectl apply -f - >/dev/null
    until kubectl get crd things.bench.kratix.io >/dev/null 2>&1; do sleep 0.5; done
    kubectl wait --for=condition=Established crd/things.bench.kratix.io --timeout=120s >/dev/null
    until [ "$(kubectl get promise thing -o jsonpath='{.status.status}')" = Available ]; do sleep 0.5; done
    local namespace="kbench$1"
    kubectl create namespace "$namespace" >/dev/null
    for i in $(seq 1 "$n"); do
        printf -- '---\napiVersion: bench.kratix.io/v1\nkind: Thing\nmetadata: {name: r%s, namespace: %s}\nspec: {size: 1}\n' "$i" "$namespace"
    done > "$work/requests.yaml"
    controller_cgroup
    echo 0 > "$mem/memory.max_usage_in_bytes" 2>/dev/null || true
    local cpu0 start most end cpu1 peak
    cpu0=$(cat "$cpu/cpuacct.usage")
    start=$(now)
    kubectl apply -f "$work/requests.yaml" >/dev/null
    most=$(wait_count "$namespace" things.bench.kratix.io \
        '[.items[] | select((.status.conditions // []) | (any(.type == "ConfigureWorkflowCompleted" and .status == "True") and any(.type == "WorksSucceeded" and .status == "True")))] | length' \
        "$n" app.kubernetes.io/managed-by=Kratix)
    end=$(now)
    cpu1=$(cat "$cpu/cpuacct.usage")
    if [ -n "$keep" ]; then
        echo "$start" > "$keep/kbench$1.start"
        kubectl get things.bench.kratix.io,pipelineruns.platform.kratix.io,works.platform.kratix.io,jobs,pods \
            -n "$namespace" -o json > "$keep/kbench$1.json"
    fi
    peak=$(awk '{ printf "%.0f", $1 / 1048576 }' "$mem/memory.max_usage_in_bytes")
    echo "$(elapsed "$start" "$end") $most $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') $peak"
}

# The Git server the controller's pod writes to.
mkdir -p "$work/git"
git init --quiet --bare --initial-branch=main "$work/git/store.git"
git -C "$work/git/store.git" config receive.denyCurrentBranch ignore
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("'"$NODE_IP"'", 0)); print(s.getsockname()[1])')
git daemon --reuseaddr --export-all --enable=receive-pack --base-path="$work/git" \
    --listen="$NODE_IP" --port="$port" "$work/git" >/dev/null 2>&1 &
daemon_pid=$!

shape=$(kubectl get deployment kratix-rs-controller -n "$ns" -o json |
    jq -r '[.spec.template.spec.containers[0].env[] | select(.name == "KRATIX_PIPELINE_POD_SHAPE") | .value][0] // "lean"')
cap=$(kubectl get deployment kratix-rs-controller -n "$ns" -o json |
    jq -r '[.spec.template.spec.containers[0].env[] | select(.name == "KRATIX_MAX_PARALLEL") | .value][0] // "none"')

if [ "$floors" = yes ]; then
    echo "floor: $n Jobs of one container…" >&2
    read -r one_s one_most <<<"$(floor one)"
    echo "  $one_s s, $one_most at once" >&2
    echo "floor: $n Jobs of Kratix's pod shape…" >&2
    read -r kx_s kx_most <<<"$(floor kratix)"
    echo "  $kx_s s, $kx_most at once" >&2
fi
declare -A k_s k_most k_cpu k_peak
for p in $pipelines; do
    echo "kratix-rs: $n requests x $p pipeline(s)…" >&2
    read -r k_s[$p] k_most[$p] k_cpu[$p] k_peak[$p] <<<"$(kratix "$p")"
    echo "  ${k_s[$p]} s, ${k_most[$p]} at once, ${k_cpu[$p]} s CPU, ${k_peak[$p]} MiB" >&2
done

echo "## On Kubernetes"
echo
echo "One node (\`scripts/testworld start DIR --node\`: Kubernetes 1.20 with a kubelet on a Docker Engine, $(nproc) cores shared"
echo "with the control plane), kratix-rs from \`deploy/\` (pod shape \`$shape\`, pipeline cap: $cap), $n requests"
echo "applied at once, each until \`ConfigureWorkflowCompleted\` and \`WorksSucceeded\`; the floors are $n"
echo "plain Jobs created at once in the same run, until every one is Complete. Every container is busybox."
echo
echo "| run | settle time | most pipeline pods running at once | controller CPU | controller peak memory | ÷ Kratix-shape floor | ÷ one-container floor |"
echo "|---|---|---|---|---|---|---|"
if [ "$floors" = yes ]; then
    echo "| $n plain Jobs of one container | ${one_s} s | $one_most | | | | 1.00 |"
    echo "| $n plain Jobs of Kratix's pod shape (4 containers) | ${kx_s} s | $kx_most | | | 1.00 | $(ratio "$kx_s" "$one_s") |"
fi
for p in $pipelines; do
    if [ "$floors" = yes ]; then
        r1=$(ratio "${k_s[$p]}" "$kx_s"); r2=$(ratio "${k_s[$p]}" "$one_s")
    else
        r1=""; r2=""
    fi
    echo "| kratix-rs, $n requests × $p pipeline(s) | ${k_s[$p]} s | ${k_most[$p]} | ${k_cpu[$p]} s | ${k_peak[$p]} MiB | $r1 | $r2 |"
done
if [ -n "$keep" ]; then
    kubectl logs -n "$ns" -l app.kubernetes.io/component=controller --tail=-1 > "$keep/controller.log" 2>&1 || true
    for p in $pipelines; do
        echo
        echo "Where the time went, $n requests × $p pipeline(s) (the objects as they were once every request settled):"
        echo
        python3 "$repo/scripts/bench/kube_timeline.py" "$keep/kbench$p.json" "$(cat "$keep/kbench$p.start")"
    done
fi
