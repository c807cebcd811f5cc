#!/usr/bin/env bash
# The platform's API benchmark. Prints a Markdown section on standard output.
#  1. `kubectl get things -A` of N requests through the API (`serve --api-addr`, the home's
#     kubeconfig) against `kratix-rs get things -A` of the same home, measured in the same run
#     once `serve` is idle; medians of 3 rounds each.
#  2. A pipeline's `kubectl get` of its own request from inside its engine container (in-cluster
#     configuration: the run's service account), averaged over 20 calls, against the engine's
#     start of a container of the same image (`docker run --rm`, median of 5): what a call to
#     the platform costs beside what the pipeline's container costs anyway.
# Needs kubectl (a static binary: it is copied into the pipeline's image) and, for part 2, an
# engine: DOCKER_HOST, or KRATIX_TEST_ENGINE_DIR where `scripts/testworld start DIR --engine` runs.
# Usage: scripts/bench/api.sh [--quick] [--requests N] [--bin PATH]
set -euo pipefail

n=10000
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) n=500 ;;
        --requests) n="$2"; shift ;;
        --bin) bin="$2"; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=scripts/bench/common.sh
source "$repo/scripts/bench/common.sh"
kubectl="${KRATIX_TEST_KUBECTL:-}"
[ -n "$kubectl" ] || { [ -x /usr/lib/google-cloud-sdk/bin/kubectl ] && kubectl=/usr/lib/google-cloud-sdk/bin/kubectl; } || true
[ -n "$kubectl" ] || kubectl="$(readlink -f "$(command -v kubectl || true)" 2>/dev/null || true)"
echo "## Platform API"
echo
if [ -z "$kubectl" ] || [ ! -x "$kubectl" ]; then
    echo "Not measured: no kubectl (set KRATIX_TEST_KUBECTL)."
    echo
    exit 0
fi
bin=$(bench_bin "$bin")
work="$(mktemp -d "${TMPDIR:-/tmp}/kratix-bench-api.XXXXXX")"
serve_pid=""
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
export HOME="$work/user" KRATIX_ISOLATION=process
mkdir -p "$HOME"

# Milliseconds count here: three decimals.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

requests() {
    local n="$1" i
    for ((i = 0; i < n; i++)); do
        printf -- '---\napiVersion: bench.kratix.io/v1\nkind: Thing\nmetadata: {name: t%05d, namespace: default}\nspec: {size: %d}\n' "$i" "$i"
    done
}

# Part 1: a home of N requests of a Promise without pipelines.
home="$work/list"
mkdir -p "$home"
git init --quiet --bare --initial-branch=main "$home/store.git"
{ bench_platform_head default "file://$home/store.git"; echo "        []"; } >"$home/platform.yaml"
"$bin" --home "$home" apply -f "$home/platform.yaml" --timeout 600 >/dev/null
requests "$n" >"$work/requests.yaml"
echo "applying $n requests…" >&2
"$bin" --home "$home" apply -f "$work/requests.yaml" --timeout 3600 -q >/dev/null
"$bin" --home "$home" serve --api-addr 127.0.0.1:0 2>"$work/serve.log" &
serve_pid=$!
echo "waiting for serve to go idle…" >&2
for _ in $(seq 300); do [ -f "$home/kubeconfig" ] && break; sleep 0.2; done
# Idle: at most 5% of a core used over two seconds (its change feed still polls), or 5 minutes.
last=$(cpu_ticks "$serve_pid")
for _ in $(seq 150); do
    sleep 2
    now_ticks=$(cpu_ticks "$serve_pid")
    [ $((now_ticks - last)) -le 10 ] && break
    last=$now_ticks
done
time_of() {
    local start
    start=$(now)
    "$@" >"$work/out.txt" 2>&1
    secs "$start" "$(now)"
    echo
}
"$kubectl" --kubeconfig "$home/kubeconfig" get things -A >/dev/null  # discovery cached
listed=$("$kubectl" --kubeconfig "$home/kubeconfig" get things -A --no-headers | wc -l)
api=$(for _ in 1 2 3; do time_of "$kubectl" --kubeconfig "$home/kubeconfig" get things -A; done | median)
cli=$(for _ in 1 2 3; do time_of "$bin" --home "$home" get things -A; done | median)
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
serve_pid=""

build=debug
case "$bin" in */release/*) build=release ;; esac
echo "A $build build, $(nproc) cores, kubectl $("$kubectl" version --client -o json 2>/dev/null | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | head -n1)."
echo
echo "| what | time | ratio |"
echo "|---|---|---|"
echo "| \`kratix-rs get things -A\`, $n requests (baseline) | $cli s | 1.00× |"
echo "| \`kubectl get things -A\` through the API ($listed listed) | $api s | $(ratio "$api" "$cli")× |"

# Part 2: a pipeline's kubectl round trip against the engine's container start.
if [ -z "${DOCKER_HOST:-}" ] && [ -n "${KRATIX_TEST_ENGINE_DIR:-}" ]; then
    DOCKER_HOST="$("$repo/scripts/testworld" env "$KRATIX_TEST_ENGINE_DIR" | sed -n 's/^DOCKER_HOST=//p')"
    export DOCKER_HOST
fi
if [ -z "${DOCKER_HOST:-}" ] || ! docker version >/dev/null 2>&1; then
    echo
    echo "The pipeline round trip is not measured: no container engine (set DOCKER_HOST or"
    echo "KRATIX_TEST_ENGINE_DIR)."
    echo
    exit 0
fi
export DOCKER_HOST
image="kratix-bench.local/api-reader:v1"
mkdir -p "$work/image"
cp "$kubectl" "$work/image/kubectl"
cat >"$work/image/read" <<'SH'
#!/bin/sh
get() { kubectl get "$KRATIX_CRD_PLURAL" "$KRATIX_OBJECT_NAME" -o name >/dev/null; }
get
start=$(cut -d' ' -f1 /proc/uptime)
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do get; done
end=$(cut -d' ' -f1 /proc/uptime)
echo "rounds: $start $end"
SH
chmod +x "$work/image/read" "$work/image/kubectl"
printf 'FROM local/busybox:1\nCOPY kubectl /usr/local/bin/kubectl\nCOPY read /read\nCMD ["/read"]\n' >"$work/image/Dockerfile"
docker build -q -t "$image" "$work/image" >/dev/null
home="$work/pipeline"
mkdir -p "$home"
git init --quiet --bare --initial-branch=main "$home/store.git"
{
    bench_platform_head default "file://$home/store.git"
    printf '        - apiVersion: platform.kratix.io/v1alpha1\n          kind: Pipeline\n          metadata: {name: read}\n          spec:\n            containers:\n              - {name: read, image: %s, imagePullPolicy: Never}\n' "$image"
} >"$home/platform.yaml"
"$bin" --home "$home" apply -f "$home/platform.yaml" --timeout 600 >/dev/null
requests 1 >"$work/one.yaml"
"$bin" --home "$home" apply -f "$work/one.yaml" --timeout 600 -q >/dev/null
round=$("$bin" --home "$home" logs things t00000 | sed -n 's/^rounds: //p' | awk '{ printf "%.3f", ($2 - $1) / 20 }')
start_floor=$(for _ in 1 2 3 4 5; do time_of docker run --rm --entrypoint true "$image"; done | median)
echo "| a pipeline's \`kubectl get\` of its request, from its engine container (mean of 20) | $round s | $(ratio "$round" "$start_floor")× the container start |"
echo "| the engine's \`docker run --rm\` of the same image (median of 5) | $start_floor s | 1.00× |"
echo
echo "Part 1 is measured once \`serve\` has gone idle (under 5% of a core for 2 s), so that neither command"
echo "shares the machine with its reconciles. kubectl's discovery is cached (the first call is"
echo "not counted); both print Kratix's printer columns (kubectl from the API's \`Table\`)."
echo
