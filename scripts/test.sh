#!/usr/bin/env bash
# Runs every check and test of the project on this machine, installing and starting what the
# tests need first: Debian packages (git, sshd, bubblewrap, …), Garage (a real S3 server) and
# cargo-deny, both built with cargo the first time only. The tests start their own servers on
# loopback (git daemon, git http-backend, sshd, Garage) and stop them when they finish.
set -eu -o pipefail
cd "$(dirname "$0")/.."
# Every step's heading carries the minutes and seconds since the start, so that a run's log shows
# where its time went.
started=$SECONDS
step() { printf '== [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

step "Debian packages"
scripts/test-deps.sh
step "Garage"
scripts/garage.sh
# A real Kubernetes control plane (etcd + kube-apiserver, built once and cached) to check the CRDs,
# pipeline Jobs and deploy/.
KUBE_TESTENV="${KUBE_TESTENV:-$(cd .. && pwd)/shared/tools/kube-testenv}"
export KUBE_TESTENV
step "kube-testenv"
if [ -x "$KUBE_TESTENV" ]; then
    # --node also installs the Docker Engine (Debian's docker.io) that the node and the embedded
    # container executor's tests run on.
    "$KUBE_TESTENV" install --node
else
    echo "NOTE: $KUBE_TESTENV not found: the CRD check against a real API server, the container" \
        "executor's tests and the real-node tests will not run" >&2
fi
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
step "cargo deny (licenses, bans, sources)"
scripts/cargo-deny.sh
# The shared test world: one Docker Engine for the embedded container executor's tests and one
# real Kubernetes node (kubelet on its own engine) for the real-node tests. Each test binary uses
# its own names and namespaces on them; both are stopped when this script ends.
if [ -x "$KUBE_TESTENV" ]; then
    world=$(mktemp -d /tmp/kratix-test-world.XXXXXX)
    export KRATIX_TEST_ENGINE_DIR="$world/engine" KRATIX_TEST_NODE_DIR="$world/node"
    trap '"$KUBE_TESTENV" stop "$KRATIX_TEST_NODE_DIR" >/dev/null 2>&1 || true;
          "$KUBE_TESTENV" stop "$KRATIX_TEST_ENGINE_DIR" >/dev/null 2>&1 || true' EXIT
    step "kube-testenv: an engine and a node"
    "$KUBE_TESTENV" start "$KRATIX_TEST_ENGINE_DIR" --engine
    "$KUBE_TESTENV" start "$KRATIX_TEST_NODE_DIR" --node
    # Tests that need the engine or the node fail, rather than skip, when it is missing.
    export KRATIX_REQUIRE_REAL=1
fi

# kratix-rs on a real node (tests/kubernetes_node.rs, run with --ignored below): the image deploy/
# runs is built into the node's engine first.
if [ -n "${KRATIX_TEST_NODE_DIR:-}" ]; then
    step "the kratix-rs image, into the node's engine"
    DOCKER_HOST="$("$KUBE_TESTENV" env "$KRATIX_TEST_NODE_DIR" | sed -n 's/^DOCKER_HOST=//p')" \
        scripts/test-image.sh
fi
# Each step is bounded well inside CI's limit, so that a hang fails its own step with its output
# instead of the whole run being cut off.
step "cargo test"
timeout 45m cargo test --workspace --all-features --no-fail-fast
if [ -x "$KUBE_TESTENV" ]; then
    step "CRDs against a real API server"
    cargo test --all-features --test api_fixtures -- --ignored
    step "apply's last-applied history read by kubectl, and kubectl's by apply"
    cargo test --all-features --test apply_merge -- --ignored
    step "pipeline Jobs and deploy/ against a real control plane"
    timeout 15m cargo test --all-features --test kubernetes_jobs -- --ignored
    step "kratix-rs installed from deploy/ on a real node"
    timeout 20m cargo test --all-features --test kubernetes_node -- --ignored --test-threads=8
fi
step "done"
