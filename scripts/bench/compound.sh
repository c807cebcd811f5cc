#!/usr/bin/env bash
# Compound benchmark: N parent requests whose one pipeline writes one sub-request to the platform
# Destination (annotated `kratix-rs.io/apply-to-platform`), which the platform sync applies back;
# each sub-request's Promise has one pipeline writing one ConfigMap to a worker. Embedded home,
# `serve` running, `file://` Git store, plain-process pipelines. Measured against its baseline in
# the same run: the same Promises in a home whose platform Destination is not applied back, with
# the N parents and N children applied by hand (2 × N plain requests of the same pipelines).
# Prints a Markdown section on standard output.
# Usage: scripts/bench/compound.sh [--quick] [--requests N] [--rounds R] [--bin PATH]
# Builds the release binary unless --bin is given.
set -euo pipefail

n=100
rounds=3
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) n=10; rounds=1 ;;
        --requests) n="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --bin) bin="$2"; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=scripts/bench/common.sh
source "$repo/scripts/bench/common.sh"
bin=$(bench_bin "$bin")
work="$(mktemp -d "${TMPDIR:-/tmp}/kratix-bench-compound.XXXXXX")"
trap bench_cleanup EXIT
export KRATIX_ISOLATION=process

# A Promise `$1` of kind `$2` (plural `$3`) on the labels `$4`, whose one resource pipeline
# `$5` runs the shell script `$6`.
promise() {
    echo "---"
    bench_promise_head "$1" "$2" "$3" "$4"
    cat <<YAML
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {name: $5}
          spec:
            containers:
              - name: main
                image: local/sh
                command: [sh, -c, '$6']
YAML
}

# The store, the Destinations `platform` (applied back when $2 is `true`) and `worker`, and the
# Promises `parent` (its pipeline writes a Child of the request's name for the platform) and
# `child` (its pipeline writes a ConfigMap for the worker).
platform() {
    local annotation=""
    [ "$2" = true ] && annotation='annotations: {kratix-rs.io/apply-to-platform: "true"}'
    bench_store_and_worker default "file://$1/store.git"
    cat <<YAML
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: platform
  labels: {environment: platform}
  $annotation
spec:
  path: platform
  strictMatchLabels: true
  stateStoreRef: {kind: GitStateStore, name: default}
YAML
    # shellcheck disable=SC2016 # expanded by the pipeline's shell
    promise parent Parent parents "environment: platform" make-child \
        'printf "apiVersion: bench.kratix.io/v1\nkind: Child\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    kratix.io/component-of-promise-name: parent\n    kratix.io/component-of-resource-name: %s\n    kratix.io/component-of-resource-namespace: %s\nspec:\n  size: 1\n" "$KRATIX_OBJECT_NAME" "$KRATIX_OBJECT_NAMESPACE" "$KRATIX_OBJECT_NAME" "$KRATIX_OBJECT_NAMESPACE" > "$KRATIX_OUTPUT_DIR/child.yaml"'
    # shellcheck disable=SC2016
    promise child Child children "environment: bench" render \
        'printf "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\n" "$KRATIX_OBJECT_NAME" > "$KRATIX_OUTPUT_DIR/cm.yaml"'
}

# N requests of kind $1, named p00000…, as one multi-document file.
requests() {
    local kind="$1" i
    for ((i = 0; i < n; i++)); do
        printf -- '---\napiVersion: bench.kratix.io/v1\nkind: %s\nmetadata: {name: p%05d, namespace: default}\nspec: {size: 1}\n' "$kind" "$i"
    done
}

# How many objects of plural $2 in home $1 are Reconciled for their current generation.
reconciled() {
    "$bin" --home "$1" get "$2" -A -o json 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
items = doc.get("items", []) if isinstance(doc, dict) else doc
print(sum(
    1 for o in items
    if o.get("status", {}).get("observedGeneration") == o["metadata"].get("generation")
    and any(c.get("type") == "Reconciled" and c.get("status") == "True"
            for c in o.get("status", {}).get("conditions", []))
))'
}

# A fresh home $work/$1, in `home`, with the platform applied (`$2`: whether the platform
# Destination is applied back) and settled, and `serve` running on it. Not to be called in a
# subshell (`$(...)`): `stop_serve` needs the `serve_pid` it sets.
new_home() {
    home="$work/$1"
    mkdir -p "$home"
    git init --quiet --bare --initial-branch=main "$home/store.git"
    platform "$home" "$2" >"$home/platform.yaml"
    "$bin" --home "$home" apply -f "$home/platform.yaml" --timeout 600 >/dev/null
    start_serve "$home"
}

# Seconds from the `apply --no-wait` of file $2 into home $1 until $3 parents and $4 children
# are Reconciled.
settle() {
    local home="$1" file="$2" parents="$3" children="$4" start
    start=$(now)
    "$bin" --home "$home" apply --no-wait -f "$file" >/dev/null
    until [ "$(reconciled "$home" parents)" -ge "$parents" ] &&
        [ "$(reconciled "$home" children)" -ge "$children" ]; do
        sleep 0.2
    done
    secs "$start" "$(now)"
    echo
}

: >"$work/compound.times"
: >"$work/plain.times"
for ((r = 1; r <= rounds; r++)); do
    echo "round $r of $rounds: $n compound requests…" >&2
    new_home "compound$r" true
    requests Parent >"$home/requests.yaml"
    settle "$home" "$home/requests.yaml" "$n" "$n" >>"$work/compound.times"
    stop_serve
    echo "round $r of $rounds: $((2 * n)) plain requests…" >&2
    new_home "plain$r" false
    { requests Parent; requests Child; } >"$home/requests.yaml"
    settle "$home" "$home/requests.yaml" "$n" "$n" >>"$work/plain.times"
    stop_serve
done
compound=$(median <"$work/compound.times")
plain=$(median <"$work/plain.times")

echo "## Compound Promises: the platform sync"
echo
echo "$n parent requests, each with one pipeline that writes one sub-request for the platform"
echo "Destination (\`kratix-rs.io/apply-to-platform\`); the platform sync applies it back and the"
echo "sub-request's Promise runs one pipeline writing one ConfigMap to a worker. Embedded home with"
echo "\`serve\` running (\`KRATIX_PLATFORM_SYNC_INTERVAL\` ${KRATIX_PLATFORM_SYNC_INTERVAL:-30 (default)}), \`file://\` Git store, \`KRATIX_ISOLATION=process\`,"
echo "$(nproc) cores, binary \`$(basename "$(dirname "$bin")")\` build. Timed from \`apply --no-wait\` until every parent"
echo "and child is Reconciled. The baseline, in the same run, is the same Promises with the platform"
echo "Destination not applied back and the $n parents and $n children applied by hand: $((2 * n)) plain"
echo "requests of the same pipelines. Median of $rounds round(s)."
echo
echo "| run | settle time | ÷ $((2 * n)) plain requests |"
echo "|---|---|---|"
echo "| $n × 2 compound (the sync applies the children) | $compound s | $(ratio "$compound" "$plain")× |"
echo "| $((2 * n)) plain requests (baseline) | $plain s | 1.00× |"
echo "| Kratix with Flux, 100 × 2 compound, tuned (its perf rig) | ~360 s | |"
echo
echo "Rounds (compound; plain): $(paste -sd' ' "$work/compound.times"); $(paste -sd' ' "$work/plain.times")."
echo
