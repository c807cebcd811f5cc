#!/usr/bin/env bash
# testworld-restart-check: a node started, stopped and started again on the same folder still
# runs pods that reach the API server, and stop leaves the machine as it was.
#
#   scripts/testworld-restart-check.sh [DIR]    (as root; DIR defaults to a temporary folder,
#                                                removed when the check passes)
#   KRATIX_RESTART_ROUNDS=N                      rounds (default 3)
#
# Each round starts `scripts/testworld start DIR --node`, runs a pod whose kubectl reads `/api`
# with the pod's service-account token through the `kubernetes` Service (10.0.0.1:443, kube-proxy's
# rules), then stops the world and compares the machine (links, routes, iptables rules, the
# sysctls the kubelet and kube-proxy change) with what it was before the first start. Round two and three reuse
# DIR: its etcd data, its engine's images and the pods of the round before.
#
# The node is one per machine: nothing else may run a node meanwhile (about a minute a round).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
testworld=$here/testworld
rounds=${KRATIX_RESTART_ROUNDS:-3}
dir=${1:-} made=
[[ -n $dir ]] || { dir=$(mktemp -d "${TMPDIR:-/tmp}/testworld-restart.XXXXXX"); made=1; }
kubectl_bin=$(readlink -f "$(command -v kubectl)") || { echo "kubectl is not installed" >&2; exit 1; }

fail() {
  echo "testworld-restart-check: $*" >&2
  exit 1
}

# What start and stop must leave as they found it: the node's bridge, its routes, the iptables
# rules about its bridge, its network or the Service range, and (when no other world of testworld
# runs, since the last world to stop restores them) the KUBE-* chains and the host settings the
# kubelet and kube-proxy change. Another world's bridge and containers come and go meanwhile.
machine() {  # all|own: with or without what the last world to stop restores
  local node_bridge=${KRATIX_TESTWORLD_NODE_BRIDGE:-kxtw0} node_net=${KRATIX_TESTWORLD_NODE_NET:-172.30.250}
  local mine="$node_bridge|${node_net//./\\.}\\.|10\\.0\\.0\\."
  [[ $1 == own ]] || mine+="|KUBE-"
  { ip -o link show | awk '{ print $2 }'
    ip route show table all
    local t; for t in filter nat mangle; do iptables -t "$t" -S 2>/dev/null | sed "s/^/$t /"; done
  } | grep -E -- "$mine" | sort || true
  [[ $1 == own ]] || sysctl net.ipv4.ip_forward net.ipv4.conf.all.route_localnet vm.overcommit_memory \
    vm.panic_on_oom kernel.panic kernel.panic_on_oops 2>/dev/null
}
others_running() { compgen -G "/run/kratix-testworld/*.world" >/dev/null; }

# A pod of `local/api-probe:1` (busybox and kubectl, built into the node's engine) that GETs /api
# as a pipeline's pod does: with its service-account token and CA, through the `kubernetes`
# Service's ClusterIP (KUBERNETES_SERVICE_HOST). Prints the pod's log; fails unless the pod succeeded.
probe() {  # round
  local round=$1 env docker kube phase= i
  env=$("$testworld" env "$dir")
  docker=$(sed -n 's/^DOCKER_HOST=//p' <<<"$env")
  kube=(kubectl --kubeconfig "$(sed -n 's/^KUBECONFIG=//p' <<<"$env")")
  if ! docker -H "$docker" image inspect local/api-probe:1 >/dev/null 2>&1; then
    local context; context=$(mktemp -d)
    cp "$kubectl_bin" "$context/kubectl"
    printf 'FROM local/busybox:1\nCOPY kubectl /bin/kubectl\n' >"$context/Dockerfile"
    DOCKER_BUILDKIT=0 docker -H "$docker" build -q -t local/api-probe:1 "$context" >/dev/null 2>"$dir/logs/api-probe-image.log"
    rm -rf "$context"
  fi
  local pod=api-probe-$round
  "${kube[@]}" delete pod "$pod" --ignore-not-found --wait=true >/dev/null
  "${kube[@]}" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $pod, namespace: default}
spec:
  restartPolicy: Never
  containers:
  - name: probe
    image: local/api-probe:1
    imagePullPolicy: Never
    command:
    - sh
    - -c
    - |
      sa=/var/run/secrets/kubernetes.io/serviceaccount
      exec kubectl get --raw /api --request-timeout=10s --token="\$(cat \$sa/token)" \\
        --certificate-authority=\$sa/ca.crt --server="https://\$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT"
YAML
  for ((i = 0; i < 120; i++)); do
    phase=$("${kube[@]}" get pod "$pod" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
    [[ $phase == Succeeded || $phase == Failed ]] && break
    sleep 1
  done
  echo "round $round: pod $pod $phase: $("${kube[@]}" logs "$pod" 2>&1 | tail -3)"
  [[ $phase == Succeeded ]]
}

before_all=$(machine all) before_own=$(machine own) others_before=
others_running && others_before=1
cleanup() { "$testworld" stop "$dir" || true; }
trap cleanup EXIT
for ((round = 1; round <= rounds; round++)); do
  "$testworld" start "$dir" --node >/dev/null
  probe "$round" || fail "round $round: a pod on the node cannot reach the API server (logs in $dir/logs)"
  "$testworld" stop "$dir"
  if [[ -n $others_before ]] || others_running; then
    before=$before_own after=$(machine own) what="its own bridge, routes and rules (another world runs)"
  else
    before=$before_all after=$(machine all) what="its bridge, routes, rules, KUBE-* chains and sysctls"
  fi
  [[ $after == "$before" ]] || fail "round $round: stop left the machine changed:
$(diff <(echo "$before") <(echo "$after") || true)"
  echo "round $round: stop left $what as they were"
done
trap - EXIT
echo "testworld-restart-check: $rounds rounds on $dir: every pod reached the API server, the machine was left as it was"
[[ -z $made ]] || rm -rf "$dir"
