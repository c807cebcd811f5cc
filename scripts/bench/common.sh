# Shared by the benchmark scripts: the platform every bench applies, up to its pipelines.

# A GitStateStore named $1 at URL $2, Destination `worker` (environment: bench) on it, and the
# Promise `thing` (kind Thing, spec.size) up to `workflows.resource.configure:`; the caller
# prints its pipelines after it.
bench_platform_head() {
    bench_store_and_worker "$1" "$2"
    bench_promise_head thing Thing things "environment: bench"
}

# A GitStateStore named $1 at URL $2 and Destination `worker` (environment: bench) on it, each
# document ended by `---`.
bench_store_and_worker() {
    cat <<YAML
apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {name: $1}
spec:
  url: $2
  branch: main
---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata: {name: worker, labels: {environment: bench}}
spec:
  path: worker
  stateStoreRef: {kind: GitStateStore, name: $1}
---
YAML
}

# The Promise $1 (kind $2, plural $3, group bench.kratix.io, spec.size) placed on the labels $4,
# up to `workflows.resource.configure:`; the caller prints its pipelines after it.
bench_promise_head() {
    cat <<YAML
apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {name: $1}
spec:
  destinationSelectors: [{matchLabels: {$4}}]
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: $3.bench.kratix.io}
    spec:
      group: bench.kratix.io
      names: {kind: $2, plural: $3, singular: $1}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec: {type: object, properties: {size: {type: integer}}}
  workflows:
    resource:
      configure:
YAML
}

# The binary to measure: $1 when given, else the release build of the repository at $repo
# (built here).
bench_bin() {
    if [ -n "$1" ]; then
        printf '%s' "$1"
        return
    fi
    (cd "$repo" && cargo build --release --quiet --bin kratix-rs) >&2
    printf '%s' "${CARGO_TARGET_DIR:-$repo/target}/release/kratix-rs"
}

now() { date +%s.%N; }
# Seconds from $1 to $2 (from `now`), two decimals.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# The median of the numbers on standard input, one a line (the upper one of an even count).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# CPU time (user and system, in clock ticks) of process $1 so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# `serve` of the home $1 in the background, its peak RSS written to $1.serve.rss and its log to
# $1.serve.log. Before anything is timed it lets `serve` look at everything the home holds once:
# it waits until serve's CPU time stops growing.
serve_pid=""
start_serve() {
    local pid before after
    /usr/bin/time -f '%M' -o "$1.serve.rss" "$bin" --home "$1" serve >/dev/null 2>"$1.serve.log" &
    serve_pid=$!
    sleep 1
    pid=$(pgrep -P "$serve_pid")
    after=$(cpu_ticks "$pid")
    while :; do
        before=$after
        sleep 1
        after=$(cpu_ticks "$pid")
        # Idle polling of the change feed costs a few ticks a second.
        [ $((after - before)) -le 5 ] && break
    done
}
# GNU time ignores SIGINT while it waits: stop `serve` itself, as a user would.
stop_serve() {
    kill -INT "$(pgrep -P "$serve_pid")" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=""
}

# Stops a `serve` left running and removes $work: the scripts' EXIT trap.
bench_cleanup() {
    if [ -n "$serve_pid" ]; then stop_serve; fi
    rm -rf "$work"
}
