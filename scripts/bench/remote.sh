#!/usr/bin/env bash
# One update end to end through the binary into a remote Git state store served by `git daemon`
# on loopback: `apply` of one request whose one pipeline writes 10 files, until it has settled
# (pipeline run, files written, commit pushed). The baseline, measured in the same run against
# the same server and a repository of the same size, is Kratix's write step alone: in a cached
# work-tree clone, fetch, `reset --hard`, `clean -ffdx`, write the 10 files, `add -A`, commit,
# push. Prints a Markdown section on standard output.
# Usage: scripts/bench/remote.sh [--quick] [--files N] [--rounds R] [--bin PATH]
# --quick: fewer rounds. Builds the release binary unless --bin is given.
set -euo pipefail

files=1000
rounds=5
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) rounds=3 ;;
        --files) files="$2"; shift ;;
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
work="$(mktemp -d "${TMPDIR:-/tmp}/kratix-bench-remote.XXXXXX")"
daemon_pid=""
cleanup() {
    if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
export KRATIX_ISOLATION=process
# git ignores the machine's configuration, as the servers of the tests do.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/srv"
git daemon --listen=127.0.0.1 --port="$port" --base-path="$work/srv" --export-all \
    --enable=receive-pack --reuseaddr >"$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

# A bare repository `name` on the server holding `files` files.
seed_repo() {
    local name="$1" seed="$work/seed-$1" i
    git init --quiet --bare --initial-branch=main "$work/srv/$name.git"
    git init --quiet --initial-branch=main "$seed"
    for ((i = 0; i < files; i++)); do
        mkdir -p "$seed/seed/r$((i / 100))"
        printf 'kind: ConfigMap\nmetadata:\n  name: f%d\n' "$i" >"$seed/seed/r$((i / 100))/file-$i.yaml"
    done
    git -C "$seed" add -A
    git -C "$seed" commit --quiet -m seed
    git -C "$seed" push --quiet "git://127.0.0.1:$port/$name.git" main
}

# Milliseconds count here: three decimals.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.0f ms", s * 1000 }'; }

platform() {
    bench_platform_head remote "git://127.0.0.1:$port/store.git"
    cat <<YAML
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {name: ten}
          spec:
            containers:
              - name: write
                image: local/sh
                command: [sh, -c, 'for i in 0 1 2 3 4 5 6 7 8 9; do printf "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%s\n  namespace: default\ndata:\n  at: \"%s\"\n" "\$i" "\$(date +%s%N)" > "\$KRATIX_OUTPUT_DIR/c\$i.yaml"; done']
YAML
}

request() {
    printf 'apiVersion: bench.kratix.io/v1\nkind: Thing\nmetadata: {name: %s}\nspec: {size: %d}\n' "$1" "$2"
}

# Ours: one request per round, each a new update of 10 files, after a first one that fills the
# writer's cache (not counted).
seed_repo store
home="$work/home"
mkdir -p "$home"
platform >"$work/platform.yaml"
"$bin" --home "$home" apply -f "$work/platform.yaml" --timeout 600 >/dev/null
request warm 0 >"$work/warm.yaml"
"$bin" --home "$home" apply -f "$work/warm.yaml" --timeout 600 >/dev/null
before=$(git --git-dir="$work/srv/store.git" rev-list --count main)
: >"$work/ours"
for ((r = 1; r <= rounds; r++)); do
    request "t$r" "$r" >"$work/req$r.yaml"
    start=$(now)
    "$bin" --home "$home" apply -f "$work/req$r.yaml" --timeout 600 >/dev/null
    end=$(now)
    secs "$start" "$end" >>"$work/ours"
done
after=$(git --git-dir="$work/srv/store.git" rev-list --count main)
pushed=$(git --git-dir="$work/srv/store.git" ls-tree -r --name-only main | grep -c '^worker/' || true)
ours=$(median <"$work/ours")

# Kratix's write step alone, on a repository of the same size on the same server.
seed_repo kratix
clone="$work/kratix-clone"
git clone --quiet -b main "git://127.0.0.1:$port/kratix.git" "$clone"
: >"$work/kratix"
for ((r = 1; r <= rounds; r++)); do
    start=$(now)
    git -C "$clone" fetch --quiet origin main
    git -C "$clone" reset --quiet --hard origin/main
    git -C "$clone" clean --quiet -ffdx
    mkdir -p "$clone/worker/t$r"
    for i in 0 1 2 3 4 5 6 7 8 9; do
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%s\ndata:\n  at: "%s"\n' "$i" "$(date +%s%N)" >"$clone/worker/t$r/c$i.yaml"
    done
    git -C "$clone" add -A
    git -C "$clone" commit --quiet -m "Update from: kratix"
    git -C "$clone" push --quiet origin HEAD:main
    end=$(now)
    secs "$start" "$end" >>"$work/kratix"
done
kratix=$(median <"$work/kratix")

echo "## One update end to end into a remote Git store (git daemon on loopback)"
echo
echo "\`apply\` of one request whose one pipeline writes 10 files, until settled (pipeline run, files"
echo "written, commit pushed), through the release binary, into a repository of $files files; against"
echo "Kratix's write step alone (fetch, reset, clean, write, add, commit, push in a cached work-tree"
echo "clone) on a repository of the same size on the same server. Median of $rounds rounds."
echo
echo "| figure | ours, end to end | Kratix's write step alone | ratio |"
echo "|---|---|---|---|"
echo "| one update | $(ms "$ours") | $(ms "$kratix") | **$(awk -v a="$ours" -v b="$kratix" 'BEGIN { printf "%.2f", a / b }')** (target ≤ 1) |"
echo
echo "Commits pushed by the $rounds updates: $((after - before)); files under \`worker/\` on the server: $pushed."
echo
