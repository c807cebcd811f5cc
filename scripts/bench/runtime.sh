#!/usr/bin/env bash
# Runtime benchmark: one `apply` of N requests of a Promise with three configure pipelines (each
# an `sh -c` writing one ConfigMap) into a `file://` Git state store, with plain-process isolation.
# Prints a Markdown section on standard output; every figure is shown absolute and as a ratio
# against a floor measured in the same run:
#   - the spawn floor: the same 3 × N commands spawned one after another as plain processes;
#   - the empty home: one request applied into an empty home, against a home of M settled ones.
# Usage: scripts/bench/runtime.sh [--quick] [--sizes "10 50 100"] [--home-size M] [--get-size K]
#        [--bin PATH]
# --quick runs small sizes only (a smoke run). Builds the release binary unless --bin is given.
set -euo pipefail

sizes="10 50 100 200 1000"
home_size=1000
get_size=10000
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) sizes="5 20"; home_size=20; get_size=200 ;;
        --sizes) sizes="$2"; shift ;;
        --home-size) home_size="$2"; shift ;;
        --get-size) get_size="$2"; shift ;;
        --bin) bin="$2"; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=scripts/bench/common.sh
source "$repo/scripts/bench/common.sh"
bin=$(bench_bin "$bin")
work="$(mktemp -d "${TMPDIR:-/tmp}/kratix-bench-runtime.XXXXXX")"
trap bench_cleanup EXIT
export KRATIX_ISOLATION=process

# The state store, one Destination, and the Promise.
platform() {
    bench_platform_head default "file://$1/store.git"
    for p in one two three; do
        cat <<YAML
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {name: $p}
          spec:
            containers:
              - name: write
                image: local/sh
                command: [sh, -c, '$(pipeline_script "$p")']
YAML
    done
}

# What each pipeline runs: one ConfigMap named after the request and the pipeline.
pipeline_script() {
    printf '%s' "name=\$(sed -n \"s/^  name: //p\" \"\$KRATIX_INPUT_DIR/object.yaml\" | head -n1); printf \"apiVersion: v1\\\\nkind: ConfigMap\\\\nmetadata:\\\\n  name: %s-$1\\\\n  namespace: default\\\\ndata:\\\\n  pipeline: $1\\\\n\" \"\$name\" > \"\$KRATIX_OUTPUT_DIR/$1.yaml\""
}

# N requests in one multi-document file, named from `first`.
requests() {
    local n="$1" first="${2:-0}" i
    for ((i = first; i < first + n; i++)); do
        printf -- '---\napiVersion: bench.kratix.io/v1\nkind: Thing\nmetadata: {name: t%05d}\nspec: {size: %d}\n' "$i" "$i"
    done
}


# Wall time of `apply` (seconds) and its peak RSS (MB), printed as "time rss".
timed_apply() {
    local home="$1" file="$2" start end rss
    start=$(now)
    /usr/bin/time -f '%M' -o "$home.rss" "$bin" --home "$home" apply -f "$file" --timeout 3600 >/dev/null 2>"$home.log"
    end=$(now)
    rss=$(tail -n1 "$home.rss")
    printf '%s %s\n' "$(secs "$start" "$end")" "$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')"
}

# A fresh home with the platform applied and settled.
new_home() {
    local home="$work/$1"
    mkdir -p "$home"
    git init --quiet --bare --initial-branch=main "$home/store.git"
    platform "$home" >"$home/platform.yaml"
    "$bin" --home "$home" apply -f "$home/platform.yaml" --timeout 600 >/dev/null
    printf '%s' "$home"
}

# The spawn floor: 3 × N pipeline commands spawned one after another as plain processes.
spawn_floor() {
    local n="$1" dir="$work/floor" start end i p
    mkdir -p "$dir/in" "$dir/out"
    printf 'metadata:\n  name: t\n' >"$dir/in/object.yaml"
    start=$(now)
    for ((i = 0; i < n; i++)); do
        for p in one two three; do
            KRATIX_INPUT_DIR="$dir/in" KRATIX_OUTPUT_DIR="$dir/out" sh -c "$(pipeline_script "$p")"
        done
    done
    end=$(now)
    secs "$start" "$end"
}

commits() { git --git-dir="$1/store.git" rev-list --count main 2>/dev/null || echo 0; }

# The position of the home's change feed: every stored write (a create, update, status update or
# delete of any object, events included) is one change.
feed_position() {
    python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])' "$1/state.db"
}

echo "## Runtime"
echo
echo "One \`apply\` of N requests of a Promise with 3 configure pipelines (each \`sh -c\` writing one"
echo "ConfigMap) into a \`file://\` Git state store, \`KRATIX_ISOLATION=process\`, release build,"
echo "$(nproc) cores, max parallel pipelines: ${KRATIX_MAX_PARALLEL:-default}. The spawn floor is the same"
echo "3 × N commands spawned one after another as plain processes, measured in this run."
echo
echo "| requests | settle time | requests/s | peak RSS of apply | time ÷ spawn floor | time ÷ time of the smallest N, per request | control-plane writes per request |"
echo "|---|---|---|---|---|---|---|"
base_per=""
for n in $sizes; do
    home=$(new_home "n$n")
    requests "$n" >"$work/req$n.yaml"
    since=$(feed_position "$home")
    read -r t rss < <(timed_apply "$home" "$work/req$n.yaml")
    writes=$(($(feed_position "$home") - since))
    floor=$(spawn_floor "$n")
    per=$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.6f", t / n }')
    [ -z "$base_per" ] && base_per="$per"
    printf '| %s | %s s | %s | %s MB | %s× (floor %s s) | %s | %s |\n' "$n" "$t" \
        "$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.1f", n / t }')" "$rss" \
        "$(ratio "$t" "$floor")" "$floor" "$(ratio "$per" "$base_per")" "$(ratio "$writes" "$n")"
    last_home="$home"; last_n="$n"; last_since="$since"
done

# What the writes of the largest run were: per request, by kind and by what they did.
echo
echo "Control-plane writes per request of the $last_n-request run, by kind (a change of status counts as"
echo "a change):"
echo
echo "| kind | created | changed | deleted | all |"
echo "|---|---|---|---|---|"
python3 - "$last_home/state.db" "$last_since" "$last_n" <<'PY'
import sqlite3, sys
db, since, n = sqlite3.connect(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rows = {}
for kind, change, count in db.execute(
    "SELECT kind, change_type, COUNT(*) FROM changes WHERE seq > ? GROUP BY kind, change_type",
    (since,),
):
    rows.setdefault(kind, {})[change] = count
for kind in sorted(rows, key=lambda k: -sum(rows[k].values())):
    c = rows[kind]
    cells = [c.get(t, 0) / n for t in ("Added", "Modified", "Deleted")]
    print("| %s | %s | %.2f |" % (kind, " | ".join("%.2f" % x for x in cells), sum(cells)))
kept = sum(sum(c.values()) for c in rows.values())
newest = db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0]
if kept != newest - since:
    print("\nThe change feed kept %d of the run's %d changes: the split above is partial." % (kept, newest - since))
PY

# Re-applying identical requests changes nothing: no new commits.
before=$(commits "$last_home")
"$bin" --home "$last_home" apply -f "$work/req$last_n.yaml" --timeout 600 >/dev/null 2>&1
after=$(commits "$last_home")
echo
echo "Re-apply of the $last_n identical requests: $((after - before)) new commits."

# One request applied beside a running `serve`, into an empty home and into a home of settled
# requests: what every object in the home adds to a later change.
echo
echo "### One request into a full home"
echo
empty=$(new_home empty)
full=$(new_home full)
requests "$home_size" >"$work/full.yaml"
"$bin" --home "$full" apply -f "$work/full.yaml" --timeout 3600 >/dev/null
requests 1 90000 >"$work/one.yaml"
start_serve "$empty"
read -r t_empty _ < <(timed_apply "$empty" "$work/one.yaml")
stop_serve
start_serve "$full"
read -r t_full _ < <(timed_apply "$full" "$work/one.yaml")
stop_serve
floor1=$(spawn_floor 1)
echo "One request (3 pipelines) applied while \`serve\` runs the home's controllers."
echo
echo "| home | settle time | ÷ empty home | ÷ spawn floor |"
echo "|---|---|---|---|"
echo "| empty | $t_empty s | 1.00 | $(ratio "$t_empty" "$floor1")× (floor $floor1 s) |"
echo "| $home_size settled requests | $t_full s | $(ratio "$t_full" "$t_empty") | $(ratio "$t_full" "$floor1")× |"

# A home of many requests (stored, not run): peak RSS of `serve` holding them, and `get`.
echo
echo "### Holding $get_size requests"
echo
big="$work/big"
mkdir -p "$big"
platform "$big" | sed '/^  workflows:/,$d' >"$big/platform.yaml"
git init --quiet --bare --initial-branch=main "$big/store.git"
"$bin" --home "$big" apply -f "$big/platform.yaml" --timeout 600 >/dev/null
requests "$get_size" >"$work/big.yaml"
start=$(now)
"$bin" --home "$big" apply -f "$work/big.yaml" --timeout 3600 >/dev/null
t_big=$(secs "$start" "$(now)")
start=$(now)
got=$("$bin" --home "$big" get things -A | tail -n +2 | wc -l)
t_get=$(secs "$start" "$(now)")
start=$(now)
"$bin" --home "$big" get things -A -o json >/dev/null
t_get_json=$(secs "$start" "$(now)")
start_serve "$big"
stop_serve
serve_rss=$(tail -n1 "$big.serve.rss" | awk '{ printf "%.0f", $1 / 1024 }')
echo "| measure | value |"
echo "|---|---|"
echo "| apply of $get_size requests of a Promise without workflows | $t_big s |"
echo "| \`get things -A\` ($got rows) | $t_get s |"
echo "| \`get things -A -o json\` | $t_get_json s |"
echo "| peak RSS of \`serve\` holding them | $serve_rss MB |"
