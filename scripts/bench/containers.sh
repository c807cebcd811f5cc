#!/usr/bin/env bash
# Container executor benchmark: one `apply` of N requests of a Promise with three configure
# pipelines, each an image-only container (busybox writing one ConfigMap) run in a container
# engine, into a `file://` Git state store. Prints a Markdown section on standard output; the
# figure is the settle time against the floor of the same 3 × N containers started by the engine
# one after another (`docker run --rm` of the same image with the same folders), measured in the
# same run.
# Needs an engine: DOCKER_HOST, or KRATIX_TEST_ENGINE_DIR where `scripts/testworld start DIR --engine`
# runs (its engine has local/busybox:1), and the docker CLI for the floor.
# Usage: scripts/bench/containers.sh [--quick] [--sizes "10 100"] [--bin PATH]
set -euo pipefail

sizes="10 100"
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) sizes="5" ;;
        --sizes) sizes="$2"; shift ;;
        --bin) bin="$2"; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=scripts/bench/common.sh
source "$repo/scripts/bench/common.sh"
if [ -z "${DOCKER_HOST:-}" ] && [ -n "${KRATIX_TEST_ENGINE_DIR:-}" ]; then
    DOCKER_HOST="$("$repo/scripts/testworld" env "$KRATIX_TEST_ENGINE_DIR" | sed -n 's/^DOCKER_HOST=//p')"
fi
if [ -z "${DOCKER_HOST:-}" ] || ! docker version >/dev/null 2>&1; then
    echo "## Container executor"
    echo
    echo "Not measured: no container engine (set DOCKER_HOST or KRATIX_TEST_ENGINE_DIR)."
    echo
    exit 0
fi
export DOCKER_HOST
bin=$(bench_bin "$bin")
work="$(mktemp -d "${TMPDIR:-/tmp}/kratix-bench-containers.XXXXXX")"
trap 'rm -rf "$work"' EXIT
image="kratix-bench.local/write:v1"

# The pipeline image: one ConfigMap named after the request and the pipeline.
mkdir -p "$work/image"
cat >"$work/image/write" <<'SH'
#!/bin/sh
name=$(sed -n 's/^  name: //p' /kratix/input/object.yaml | head -n1)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%s\n  namespace: default\ndata:\n  pipeline: %s\n' \
    "$name" "$KRATIX_PIPELINE_NAME" "$KRATIX_PIPELINE_NAME" > "/kratix/output/$KRATIX_PIPELINE_NAME.yaml"
SH
chmod +x "$work/image/write"
printf 'FROM local/busybox:1\nCOPY write /write\nCMD ["/write"]\n' >"$work/image/Dockerfile"
docker build -q -t "$image" "$work/image" >/dev/null

platform() {
    bench_platform_head default "file://$1/store.git"
    for p in one two three; do
        cat <<YAML
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {name: $p}
          spec:
            containers:
              - {name: write, image: $image}
YAML
    done
}

requests() {
    local n="$1" i
    for ((i = 0; i < n; i++)); do
        printf -- '---\napiVersion: bench.kratix.io/v1\nkind: Thing\nmetadata: {name: t%05d}\nspec: {size: %d}\n' "$i" "$i"
    done
}


# The floor: the same 3 × N containers, `docker run --rm` one after another.
engine_floor() {
    local n="$1" dir="$work/floor" start end i p
    mkdir -p "$dir/in" "$dir/out" "$dir/meta"
    chmod 777 "$dir/out" "$dir/meta"
    printf 'metadata:\n  name: t\n' >"$dir/in/object.yaml"
    start=$(now)
    for ((i = 0; i < n; i++)); do
        for p in one two three; do
            docker run --rm -e KRATIX_PIPELINE_NAME="$p" \
                -v "$dir/in:/kratix/input" -v "$dir/out:/kratix/output" -v "$dir/meta:/kratix/metadata" \
                "$image" >/dev/null 2>&1
        done
    done
    end=$(now)
    secs "$start" "$end"
}

echo "## Container executor"
echo
echo "One \`apply\` of N requests of a Promise with 3 configure pipelines, each an image-only container"
echo "(busybox writing one ConfigMap) run by the container executor (\`KRATIX_EXECUTOR=auto\`), into a"
echo "\`file://\` Git state store; release build, $(nproc) cores, engine: Docker"
echo "$(docker version --format '{{.Server.Version}}' 2>/dev/null), max parallel pipelines: ${KRATIX_MAX_PARALLEL:-default}."
echo "The engine floor is the same 3 × N containers started with \`docker run --rm\` one after"
echo "another (same image, same folders), measured in this run. Target: ≤ 1.5× the floor at 100."
echo
echo "| requests | settle time | requests/s | engine floor | time ÷ engine floor |"
echo "|---|---|---|---|---|"
for n in $sizes; do
    home="$work/n$n"
    mkdir -p "$home"
    git init --quiet --bare --initial-branch=main "$home/store.git"
    platform "$home" >"$home/platform.yaml"
    "$bin" --home "$home" apply -f "$home/platform.yaml" --timeout 600 >/dev/null
    requests "$n" >"$work/req$n.yaml"
    start=$(now)
    "$bin" --home "$home" apply -f "$work/req$n.yaml" --timeout 3600 >/dev/null 2>"$home.log"
    t=$(secs "$start" "$(now)")
    floor=$(engine_floor "$n")
    rps=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.1f", n / t }')
    echo "| $n | $t s | $rps | $floor s | $(ratio "$t" "$floor")× |"
done
echo
