#!/usr/bin/env bash
# Kubernetes benchmark, on a real node with kratix-rs installed (the tests' node: `scripts/testworld
# start DIR --node`, the image from scripts/test-image.sh, `kubectl apply -k deploy`). In one run:
#   - three floors, each N plain Jobs created at once, until every one is Complete, every
#     container busybox `true`: "one container"; kratix-rs's lean pod shape (the pipeline's
#     container; hand-back, as src/jobs/job.rs builds them, the input folder a ConfigMap of each
#     Job's own); Kratix's pod shape (init containers reader, the pipeline's, work-writer;
#     container status-writer; three emptyDirs);
#   - kratix-rs: N requests of a Promise with P no-op pipelines (P = 1, then 2), applied at once,
#     until every request has ConfigureWorkflowCompleted and WorksSucceeded True; the controller
#     container's CPU seconds and peak memory (its cgroup, read on this host through the node's
#     engine).
# For every run, from the pods' own timestamps once it is done: the most pods alive at once and
# when the last one ended (scripts/bench/kube_pods.py).
# Prints a Markdown section on standard output; progress on standard error.
# With --keep DIR, each kratix-rs run's objects (requests, PipelineRuns, Jobs, pods, Works,
# WorkPlacements) are kept in DIR as they were once every request settled, with the
# controller's log at the end, and the section gains where the time went
# (scripts/bench/kube_timeline.py).
# Usage: KUBECONFIG=… DOCKER_HOST=… NODE_IP=… scripts/bench/kubernetes.sh [--requests N]
#        [--pipelines "1 2"] [--skip-floors] [--floors "one lean kratix"] [--keep DIR]
# (--floors picks among one, lean, lean-downward, kratix: see floor_job.)
# (`eval "$(scripts/testworld env DIR)"` sets the three.)
set -euo pipefail

n=100
pipelines="1 2"
floors=yes
floor_shapes="one lean kratix"
keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --requests) n="$2"; shift ;;
        --pipelines) pipelines="$2"; shift ;;
        --skip-floors) floors=no ;;
        --floors) floor_shapes="$2"; shift ;;
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

# Waits until `kubectl get $2 -n $1 -o json | jq $3` prints $4.
wait_count() {
    local namespace=$1 kind=$2 filter=$3 want=$4
    until [ "$(kubectl get "$kind" -n "$namespace" -o json | jq "$filter")" -ge "$want" ]; do
        sleep 0.5
    done
}

# The most pods of namespace $1 alive at one moment and the seconds from $2 (from `now`) to the
# end of the last one, from the pods' own timestamps (a poll rarely catches a busybox container
# running).
pods_story() {
    kubectl get pods -n "$1" -o json | python3 "$repo/scripts/bench/kube_pods.py" "$2"
}

# A busybox container `true` named $1 with Kratix's default CPU and memory and $2 more fields
# (YAML flow-mapping entries, starting with a comma).
floor_container() {
    printf '{name: %s, image: %s, command: [sh, -c, "true"], resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 200m, memory: 256Mi}}%s}' "$1" "$image" "$2"
}
# A container of a lean pod: also the ephemeral storage and the termination message policy
# kratix-rs sets.
lean_container() {
    printf '{name: %s, image: %s, command: [sh, -c, "true"], resources: {requests: {cpu: 100m, memory: 128Mi, ephemeral-storage: 128Mi}, limits: {cpu: 200m, memory: 256Mi, ephemeral-storage: 256Mi}}, terminationMessagePolicy: FallbackToLogsOnError%s}' "$1" "$image" "$2"
}

# A plain Job: $1 name, $2 shape (one|kratix|lean|lean-downward).
#   one: one container;
#   kratix: Kratix's (init containers reader, the pipeline's, work-writer; container
#     status-writer; three emptyDirs);
#   lean: kratix-rs's default shape as src/jobs/job.rs builds it for a one-container pipeline
#     (init container: the pipeline's; container: hand-back, with Kratix's security context and
#     the Job's uid from the pod's labels; the input folder a ConfigMap of its own, made with the
#     Job; the output and metadata folders emptyDirs; a pipeline service account; restart policy
#     OnFailure). busybox runs as root, which runAsNonRoot refuses: hand-back runs as 65532, the
#     user of kratix-rs's image.
#   lean-downward: lean, but `object.yaml` from an annotation of the pod through the downward API
#     instead of a ConfigMap (a kubelet reads each ConfigMap a pod mounts from the API server:
#     this floor measures that cost).
floor_job() {
    local all='volumeMounts: [{name: shared-input, mountPath: /kratix/input}, {name: shared-output, mountPath: /kratix/output}, {name: shared-metadata, mountPath: /kratix/metadata}]'
    local init main volumes='[{name: shared-input, emptyDir: {}}, {name: shared-output, emptyDir: {}}, {name: shared-metadata, emptyDir: {}}]'
    local extra="restartPolicy: Never" annotations=""
    case "$2" in
        one)
            init="[]"
            main="[$(floor_container pipeline ", $all")]" ;;
        kratix)
            init="[$(floor_container reader ", $all"), $(floor_container pipeline ", $all"), $(floor_container work-writer ", $all")]"
            main="[$(floor_container status-writer ", $all")]" ;;
        lean | lean-downward)
            local user=', volumeMounts: [{name: shared-input, mountPath: /kratix/input, readOnly: true}, {name: shared-output, mountPath: /kratix/output}, {name: shared-metadata, mountPath: /kratix/metadata}]'
            local hand_back=', env: [{name: KRATIX_JOB_UID, valueFrom: {fieldRef: {fieldPath: "metadata.labels['"'"'controller-uid'"'"']"}}}], securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}, privileged: false}, volumeMounts: [{name: shared-output, mountPath: /kratix/output, readOnly: true}, {name: shared-metadata, mountPath: /kratix/metadata, readOnly: true}]'
            init="[$(lean_container pipeline "$user")]"
            main="[$(lean_container hand-back "$hand_back")]"
            volumes="[{name: shared-input, configMap: {name: $1-input, items: [{key: object.yaml, path: object.yaml}]}}, {name: shared-output, emptyDir: {}}, {name: shared-metadata, emptyDir: {}}]"
            extra="restartPolicy: OnFailure, serviceAccountName: pipeline"
            local object="apiVersion: bench.kratix.io/v1\\nkind: Thing\\nmetadata: {name: $1}\\nspec: {size: 1}\\n"
            if [ "$2" = lean-downward ]; then
                volumes="[{name: shared-input, downwardAPI: {items: [{path: object.yaml, fieldRef: {fieldPath: \"metadata.annotations['kratix.io/object']\"}}]}}, {name: shared-output, emptyDir: {}}, {name: shared-metadata, emptyDir: {}}]"
                annotations=", annotations: {kratix.io/object: \"$object\"}"
            else
                cat <<YAML
---
apiVersion: v1
kind: ConfigMap
metadata: {name: $1-input, namespace: kbench-floor, labels: {kbench: floor}}
data: {object.yaml: "$object"}
YAML
            fi
            ;;
    esac
    cat <<YAML
---
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: kbench-floor, labels: {kbench: floor}}
spec:
  backoffLimit: 0
  template:
    metadata: {labels: {kbench: floor}$annotations}
    spec: {$extra, initContainers: $init, containers: $main, volumes: $volumes}
YAML
}

# Seconds, most pods at once and seconds to the last pod's end for N plain Jobs of shape $1.
floor() {
    kubectl create namespace kbench-floor >/dev/null
    kubectl create serviceaccount pipeline -n kbench-floor >/dev/null
    until kubectl get serviceaccount default -n kbench-floor >/dev/null 2>&1; do sleep 0.5; done
    for i in $(seq 1 "$n"); do floor_job "floor-$i" "$1"; done > "$work/floor.yaml"
    local start story end
    start=$(now)
    kubectl apply -f "$work/floor.yaml" >/dev/null
    wait_count kbench-floor jobs '[.items[] | select(.status.succeeded == 1)] | length' "$n"
    end=$(now)
    story=$(pods_story kbench-floor "$start")
    kubectl delete namespace kbench-floor --wait=true --timeout=300s >/dev/null
    echo "$(elapsed "$start" "$end") $story"
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
    local cpu0 start story end cpu1 peak
    cpu0=$(cat "$cpu/cpuacct.usage")
    start=$(now)
    kubectl apply -f "$work/requests.yaml" >/dev/null
    wait_count "$namespace" things.bench.kratix.io \
        '[.items[] | select((.status.conditions // []) | (any(.type == "ConfigureWorkflowCompleted" and .status == "True") and any(.type == "WorksSucceeded" and .status == "True")))] | length' \
        "$n"
    end=$(now)
    cpu1=$(cat "$cpu/cpuacct.usage")
    story=$(pods_story "$namespace" "$start")
    if [ -n "$keep" ]; then
        echo "$start" > "$keep/kbench$1.start"
        kubectl get things.bench.kratix.io,pipelineruns.platform.kratix.io,works.platform.kratix.io,workplacements.platform.kratix.io,jobs,pods \
            -n "$namespace" -o json > "$keep/kbench$1.json"
    fi
    peak=$(awk '{ printf "%.0f", $1 / 1048576 }' "$mem/memory.max_usage_in_bytes")
    echo "$(elapsed "$start" "$end") $story $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') $peak"
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

declare -A f_s f_most f_last
# Ratios against these (those measured of them).
ratio_shapes=$(for f in one lean kratix; do case " $floor_shapes " in *" $f "*) echo "$f" ;; esac; done)
declare -A f_name=(
    [one]="one container"
    [lean]="kratix-rs's lean pod shape (pipeline; hand-back)"
    [lean-downward]="the lean shape, \`object.yaml\` from the downward API instead of a ConfigMap"
    [kratix]="Kratix's pod shape (reader, pipeline, work-writer; status-writer)"
)
if [ "$floors" = yes ]; then
    for f in $floor_shapes; do
        echo "floor: $n Jobs of ${f_name[$f]}…" >&2
        read -r f_s[$f] f_most[$f] f_last[$f] <<<"$(floor "$f")"
        echo "  ${f_s[$f]} s, ${f_most[$f]} at once, last pod ended at ${f_last[$f]} s" >&2
    done
fi
declare -A k_s k_most k_last k_cpu k_peak
for p in $pipelines; do
    echo "kratix-rs: $n requests x $p pipeline(s)…" >&2
    read -r k_s[$p] k_most[$p] k_last[$p] k_cpu[$p] k_peak[$p] <<<"$(kratix "$p")"
    echo "  ${k_s[$p]} s, ${k_most[$p]} at once, last pod ended at ${k_last[$p]} s, ${k_cpu[$p]} s CPU, ${k_peak[$p]} MiB" >&2
done

# The ratios of $1 seconds to each floor, as table cells.
ratios() {
    local f
    for f in $ratio_shapes; do
        if [ "$floors" = yes ]; then printf ' %s |' "$(ratio "$1" "${f_s[$f]}")"; else printf ' |'; fi
    done
}

echo "## On Kubernetes"
echo
echo "One node (\`scripts/testworld start DIR --node\`: Kubernetes 1.20 with a kubelet on a Docker Engine, $(nproc) cores shared"
echo "with the control plane), kratix-rs from \`deploy/\` (pod shape \`$shape\`, pipeline cap: $cap), $n requests"
echo "applied at once, each until \`ConfigureWorkflowCompleted\` and \`WorksSucceeded\`; the floors are $n"
echo "plain Jobs created at once in the same run, until every one is Complete. Every container is busybox."
echo "Pods at once and the last pod's end come from the pods' own timestamps, which Kubernetes 1.20 writes"
echo "in whole seconds: a pod is alive from its start to its last container's end, both seconds counted."
echo
declare -A ratio_name=([one]="one-container floor" [lean]="lean-shape floor" [kratix]="Kratix-shape floor")
head="| run | settle time | last pod ended | most pipeline pods alive at once | controller CPU | controller peak memory |"
rule="|---|---|---|---|---|---|"
for f in $ratio_shapes; do head+=" ÷ ${ratio_name[$f]} |"; rule+="---|"; done
echo "$head"
echo "$rule"
if [ "$floors" = yes ]; then
    for f in $floor_shapes; do
        echo "| $n plain Jobs of ${f_name[$f]} | ${f_s[$f]} s | ${f_last[$f]} s | ${f_most[$f]} | | |$(ratios "${f_s[$f]}")"
    done
fi
for p in $pipelines; do
    echo "| kratix-rs, $n requests × $p pipeline(s) | ${k_s[$p]} s | ${k_last[$p]} s | ${k_most[$p]} | ${k_cpu[$p]} s | ${k_peak[$p]} MiB |$(ratios "${k_s[$p]}")"
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
