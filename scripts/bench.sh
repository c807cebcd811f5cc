#!/usr/bin/env bash
# Runs every benchmark of the project and writes BENCHMARKS.md at the root of the repository.
# Usage: scripts/bench.sh [--quick]
#   --quick  small sizes and few rounds: a smoke run that checks every bench still works.
# Needs git and an S3 server (scripts/seaweedfs.sh) as the tests do. Every figure is shown absolute and as a
# ratio against a baseline or floor measured in the same run: absolute times depend on the machine
# and its load, ratios much less.
set -euo pipefail

quick=""
case "${1:-}" in
    "") ;;
    --quick) quick="--quick" ;;
    *) echo "usage: scripts/bench.sh [--quick]" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-$repo/target}"
out="$(mktemp "${TMPDIR:-/tmp}/kratix-benchmarks.XXXXXX")"
trap 'rm -f "$out"' EXIT

echo "building the release binary and the benches…" >&2
cargo build --release --quiet --bin kratix-rs
cargo bench --quiet -p statestores --no-run >&2
bin="$target/release/kratix-rs"

section() {
    echo "running $*…" >&2
    "$@"
}

{
    echo "# Benchmarks"
    echo
    echo "Written by \`scripts/bench.sh${quick:+ $quick}\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit"
    echo "\`$(git rev-parse --short HEAD)\`$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')."
    echo
    echo "## Method"
    echo
    echo "Every figure is measured next to its baseline or floor in the same run, on the same machine"
    echo "and servers, and reported as a ratio; absolute times are shown to read the ratios by, not to"
    echo "be compared across runs or machines. Medians of several rounds. Servers run on loopback:"
    echo "\`git daemon\` for Git (each connection spawns git, as a real server does) and a single-node"
    echo "SeaweedFS (or Garage, with KRATIX_TEST_S3=garage) for buckets. Baselines: Kratix's strategy re-done with the git CLI (a cached work-tree"
    echo "clone: fetch, \`reset --hard\`, \`clean -ffdx\`, write, \`add -A\`, commit, push), a bucket"
    echo "writer that uploads every object, and for the runtime the pipelines' commands spawned as"
    echo "plain processes. Request counts are counted on the wire (the S3 client's HTTP connector, the"
    echo "Git server's history), not taken from what the writers report."
    echo
    echo "## Machine"
    echo
    echo "- CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores"
    echo "- kernel: $(uname -sr)"
    echo "- memory: $(free -m 2>/dev/null | awk '/^Mem:/ { print $2 " MB" }')"
    if [ "${KRATIX_TEST_S3:-}" = garage ]; then
        garage="${GARAGE_BIN:-$(command -v garage || echo "$HOME/.cargo/bin/garage")}"
        s3="Garage: $("$garage" --version 2>/dev/null | head -n1)"
    else
        weed="${WEED_BIN:-${KRATIX_TESTWORLD_HOME:-$HOME/.cache/kratix-testworld}/seaweedfs/weed}"
        s3="SeaweedFS: $("$weed" version 2>/dev/null | head -n1)"
    fi
    echo "- git: $(git --version | sed 's/^git version //'); $s3"
    echo "- load average when the run started: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    section cargo bench --quiet -p statestores --bench git_write_cost
    section cargo bench --quiet -p statestores --bench remote_git_write -- $quick
    section cargo bench --quiet -p statestores --bench bucket_write -- $quick
    section scripts/bench/remote.sh $quick --bin "$bin"
    if [ -x scripts/bench/runtime.sh ]; then
        section scripts/bench/runtime.sh $quick --bin "$bin"
    else
        echo "## Runtime"
        echo
        echo "Not measured: \`scripts/bench/runtime.sh\` is not in this checkout."
        echo
    fi
    section scripts/bench/compound.sh $quick --bin "$bin"
    section scripts/bench/containers.sh $quick --bin "$bin"
    section scripts/bench/api.sh $quick --bin "$bin"
    if [ -n "${KRATIX_BENCH_NODE_DIR:-}" ]; then
        # A real node with kratix-rs installed (as the real-node tests leave it).
        (eval "$(scripts/testworld env "$KRATIX_BENCH_NODE_DIR")"
         export KUBECONFIG DOCKER_HOST NODE_IP
         section scripts/bench/kubernetes.sh ${quick:+--requests 20})
    else
        echo "## On Kubernetes"
        echo
        echo "Not measured in this run: \`KRATIX_BENCH_NODE_DIR\` names no node (\`scripts/bench/kubernetes.sh\`)."
        echo
    fi
    echo "## How to rerun"
    echo
    echo "\`scripts/bench.sh\` (all sizes, several minutes) or \`scripts/bench.sh --quick\` (small sizes,"
    echo "a smoke run); either rewrites this file. Each part also runs alone:"
    echo
    echo "- \`cargo bench -p statestores --bench git_write_cost\`"
    echo "- \`cargo bench -p statestores --bench remote_git_write [-- --quick]\`"
    echo "- \`cargo bench -p statestores --bench bucket_write [-- --quick]\`"
    echo "- \`scripts/bench/remote.sh [--quick] [--bin target/release/kratix-rs]\`"
    echo "- \`scripts/bench/runtime.sh [--quick] [--bin target/release/kratix-rs]\`"
    echo "- \`scripts/bench/compound.sh [--quick] [--requests N] [--rounds R] [--bin target/release/kratix-rs]\`"
    echo "- \`scripts/bench/containers.sh [--quick] [--bin target/release/kratix-rs]\` (needs an engine)"
    echo "- \`scripts/bench/api.sh [--quick] [--requests N] [--bin target/release/kratix-rs]\` (kubectl; an engine for the pipeline round trip)"
    echo "- \`scripts/bench/kubernetes.sh [--requests N] [--pipelines \"1 2\"] [--floors \"one lean kratix\"] [--keep DIR]\` (needs a node with kratix-rs installed: \`KRATIX_BENCH_NODE_DIR\` for \`scripts/bench.sh\`)"
} >"$out"
mv "$out" BENCHMARKS.md
trap - EXIT
echo "wrote BENCHMARKS.md" >&2
