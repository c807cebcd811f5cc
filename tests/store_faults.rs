//! State stores under faults, end to end through the `kratix-rs` binary with `serve` running and
//! requests applied while the fault lasts: a Git server that goes down and comes back on the
//! same port, an external committer who wins the race against a hundred pushes in a row, the S3
//! server stopped and restarted, an S3 proxy answering errors for a seeded share of requests, and two
//! homes writing different Destinations of one repository at once.
//!
//! Every test checks the same outcome: nothing written is lost (ours or anybody else's), every
//! pipeline's files land exactly once (one commit per pipeline and destination in Git, one
//! accepted PUT per object in a bucket), and the conditions say what happened while it lasted.
//! Figures (faults injected, retries seen, writes lost) are printed; run with `--nocapture`.
//! `KRATIX_LONG_TESTS=1` runs bigger campaigns (more requests, more rejections, longer outages).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use serde_yaml::Value as Yaml;
use support::bucket::BucketInspector as Inspector;
use support::faults::{BareRepo, Commit, FaultPlan, FaultProxy};
use support::{condition, condition_is, eventually, fixtures, Kratix};
use testkit::{s3, RestartableGitDaemon, SilentServer};

/// Generous: pipelines run in a sandbox on a busy two-core machine, and writes wait out faults.
const WAIT: Duration = Duration::from_secs(300);
/// The default workload group's folder (first five hex characters of its md5).
const ROOT_GROUP: &str = "5058f";
const PIPELINES: &[&str] = &["render", "extra"];

fn long() -> bool {
    std::env::var("KRATIX_LONG_TESTS").is_ok_and(|v| v == "1")
}

// ---------------------------------------------------------------------------------------------
// Objects to apply

/// The `bundle` Promise of fixtures/git_writer with only the resource pipelines `render` and
/// `extra`, its scripts where sandboxed pipelines can read them.
fn promise_yaml() -> String {
    let scripts = support::sandbox_fixtures("git_writer/scripts");
    let text = std::fs::read_to_string(fixtures().join("git_writer/bundle-promise.yaml"))
        .expect("bundle fixture")
        .replace("__SCRIPTS__", &scripts.display().to_string());
    let mut promise: Yaml = serde_yaml::from_str(&text).expect("bundle fixture is YAML");
    let configure = promise["spec"]["workflows"]["resource"]["configure"]
        .as_sequence_mut()
        .expect("resource configure pipelines");
    configure.retain(|p| PIPELINES.contains(&p["metadata"]["name"].as_str().unwrap_or_default()));
    assert_eq!(configure.len(), PIPELINES.len(), "pipelines of the fixture");
    serde_yaml::to_string(&promise).expect("YAML")
}

fn git_store_yaml(url: &str) -> String {
    format!("apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata:\n  name: default\nspec:\n  url: {url}\n  branch: main\n")
}

fn destination_yaml(name: &str, store_kind: &str, store: &str) -> String {
    format!("apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata:\n  name: {name}\nspec:\n  path: {name}\n  stateStoreRef: {{kind: {store_kind}, name: {store}}}\n")
}

fn request_yaml(name: &str, version: &str) -> String {
    format!("apiVersion: gw.kratix.io/v1alpha1\nkind: Bundle\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  version: {version}\n")
}

/// What `emit.sh` writes for request `object`, pipeline `label`, file `file`.
fn emitted(object: &str, label: &str, file: &str, version: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}-{label}\n  namespace: default\ndata:\n  file: {file}\n  version: \"{version}\"\n")
}

/// Every file Kratix should hold for Destination `dest` (under `prefix/` when given), with its
/// content where the test knows it: the canaries, the Promise's dependencies, and each
/// request's files at its version.
fn expected_files(
    prefix: Option<&str>,
    dest: &str,
    requests: &BTreeMap<String, String>,
) -> BTreeMap<String, Option<String>> {
    let at = |p: String| match prefix {
        Some(prefix) => format!("{prefix}/{p}"),
        None => p,
    };
    let mut out = BTreeMap::new();
    for path in [
        format!("{dest}/dependencies/kratix-canary-namespace.yaml"),
        format!("{dest}/resources/kratix-canary-configmap.yaml"),
        format!("{dest}/dependencies/bundle/deps/{ROOT_GROUP}/deps.yaml"),
        format!("{dest}/dependencies/bundle/{ROOT_GROUP}/static/bundle-dependencies.yaml"),
    ] {
        out.insert(at(path), None);
    }
    for (request, version) in requests {
        let dir = |pipeline: &str| {
            format!("{dest}/resources/default/bundle/{request}/{pipeline}/{ROOT_GROUP}")
        };
        for (pipeline, file) in [
            ("render", "config.yaml"),
            ("render", "nested/notes.yaml"),
            ("extra", "extra.yaml"),
        ] {
            out.insert(
                at(format!("{}/{file}", dir(pipeline))),
                Some(emitted(request, pipeline, file, version)),
            );
        }
    }
    out
}

fn requests(prefix: &str, count: usize, version: &str) -> BTreeMap<String, String> {
    (1..=count)
        .map(|i| (format!("{prefix}{i}"), version.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Waiting and looking

fn message_of(obj: &Value, type_: &str) -> String {
    condition(obj, type_)
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Waits with the CLI until every request is `Reconciled` for its current generation, then
/// checks its Works succeeded.
#[track_caller]
fn wait_reconciled<'a>(k: &Kratix, names: impl IntoIterator<Item = &'a String>) {
    let timeout = WAIT.as_secs().to_string();
    for name in names {
        k.run(&[
            "wait",
            "bundle",
            name,
            "-n",
            "default",
            "--for",
            "condition=Reconciled",
            "--timeout",
            &timeout,
        ])
        .assert_ok();
        let obj = k
            .get_json("bundle", name, Some("default"))
            .expect("request");
        assert!(condition_is(&obj, "WorksSucceeded", "True"), "{obj}");
    }
}

/// While the store is down: a placement fails naming the store, its Work is not Ready, the
/// request's `WorksSucceeded` is False. Returns the placement's message.
#[track_caller]
fn assert_outage_shows(k: &Kratix, store_names: &str) -> String {
    let wp = eventually("a placement failing on the store", WAIT, || {
        k.list_json("workplacements", &["-A"])
            .into_iter()
            .find(|wp| {
                condition_is(wp, "WriteSucceeded", "False")
                    && message_of(wp, "WriteSucceeded").contains(store_names)
                    && wp["metadata"]["labels"]["kratix.io/work"]
                        .as_str()
                        .is_some_and(|w| w.starts_with("bundle-r"))
            })
    });
    assert!(condition_is(&wp, "Ready", "False"), "{wp}");
    let work_name = wp["metadata"]["labels"]["kratix.io/work"]
        .as_str()
        .expect("work label")
        .to_string();
    eventually("its Work to say it is failing", WAIT, || {
        k.get_json("works", &work_name, Some("default"))
            .filter(|w| condition_is(w, "Ready", "False") && message_of(w, "Ready") == "Failing")
    });
    let request = eventually("a request whose Works failed", WAIT, || {
        k.list_json("bundle", &["-n", "default"])
            .into_iter()
            .find(|r| condition_is(r, "WorksSucceeded", "False"))
    });
    assert!(!condition_is(&request, "Reconciled", "True"), "{request}");
    message_of(&wp, "WriteSucceeded")
}

/// Keeps a fault on for at least `length` since `since`, then returns.
fn hold_fault(since: Instant, length: Duration) {
    std::thread::sleep(length.saturating_sub(since.elapsed()));
}

/// Kratix's commits (those with a `Kratix-Destination` trailer), counted by subject and
/// destination.
fn kratix_commits(commits: &[Commit]) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for c in commits {
        if let Some(dest) = c.trailer("Destination") {
            *out.entry((c.subject().to_string(), dest.to_string()))
                .or_insert(0) += 1;
        }
    }
    out
}

/// Exactly one commit per pipeline and destination, except `twice` (pipelines of an edited
/// request, which write again). Returns how many commits Kratix made.
#[track_caller]
fn assert_exactly_once(repo: &BareRepo, twice: &BTreeSet<String>) -> usize {
    let counts = kratix_commits(&repo.commits());
    for ((subject, dest), n) in &counts {
        let want = if twice.contains(subject) { 2 } else { 1 };
        assert_eq!(
            *n, want,
            "commits {subject:?} on {dest}; all of them: {counts:#?}"
        );
    }
    for subject in twice {
        assert!(
            counts.keys().any(|(s, _)| s == subject),
            "no commit {subject:?}: {counts:#?}"
        );
    }
    counts.values().sum()
}

/// The tree of `main` under `dest/` comes to be exactly `expected` (contents where given).
/// Waits: requests do not wait for the Promise's dependencies nor the canaries, which may still
/// be retrying.
#[track_caller]
fn assert_tree(repo: &BareRepo, dest: &str, expected: &BTreeMap<String, Option<String>>) {
    let files = || -> BTreeSet<String> {
        repo.files()
            .into_iter()
            .filter(|f| f.starts_with(&format!("{dest}/")))
            .collect()
    };
    let want: BTreeSet<String> = expected.keys().cloned().collect();
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline && files() != want {
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(files(), want, "files of {dest}");
    for (path, content) in expected {
        if let Some(content) = content {
            assert_eq!(repo.read(path).as_deref(), Some(content.as_str()), "{path}");
        }
    }
}

/// Every commit a placement recorded (`status.versionID`) is in `main`'s history.
#[track_caller]
fn assert_versions_in_history(k: &Kratix, repo: &BareRepo) -> usize {
    let mut checked = 0;
    for wp in k.list_json("workplacements", &["-A"]) {
        if let Some(sha) = wp["status"]["versionID"].as_str() {
            assert!(
                repo.is_ancestor(sha, "main"),
                "commit {sha} of {} is lost from main",
                wp["metadata"]["name"]
            );
            checked += 1;
        }
    }
    checked
}

/// Records the messages of False `WriteSucceeded`/`Ready` conditions of placements and
/// Destinations while a fault lasts, from another thread.
struct ConditionWatch {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeSet<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ConditionWatch {
    fn start(home: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let home = home.to_path_buf();
        let thread = std::thread::spawn({
            let stop = Arc::clone(&stop);
            let seen = Arc::clone(&seen);
            move || {
                while !stop.load(Ordering::SeqCst) {
                    for (kind, type_) in [
                        ("workplacements", "WriteSucceeded"),
                        ("destinations", "Ready"),
                    ] {
                        for obj in list_in(&home, kind) {
                            if condition_is(&obj, type_, "False") {
                                let line = format!("{kind}: {}", message_of(&obj, type_));
                                seen.lock().expect("seen").insert(line);
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            }
        });
        Self {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> BTreeSet<String> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("watch thread");
        }
        std::mem::take(&mut *self.seen.lock().expect("seen"))
    }
}

fn list_in(home: &Path, kind: &str) -> Vec<Value> {
    let out = std::process::Command::new(support::binary())
        .arg("--home")
        .arg(home)
        .args(["get", kind, "-A", "-o", "json"])
        .env_remove("KRATIX_HOME")
        .output()
        .expect("kratix-rs runs");
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v["items"].as_array().cloned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Git

fn git_root() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("store-faults-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a folder for repositories")
}

/// A Git server down for 30 s (2 min with `KRATIX_LONG_TESTS=1`) while requests are created and
/// edited: the outage shows on placements, Works and requests; once the server is back on the
/// same port everything is written, exactly once, and the conditions recover.
#[test]
fn a_git_server_down_for_thirty_seconds_loses_nothing_and_writes_everything_once() {
    let root = git_root();
    let repo = BareRepo::init(&root.path().join("state.git"));
    let mut daemon = RestartableGitDaemon::start_on_free_port(root.path());
    let mut k = Kratix::new().with_env("KRATIX_STORE_RECHECK", "1");
    k.start_serve();
    let before = requests("r", 2, "v1");
    let mut parts = vec![
        git_store_yaml(&daemon.url("state.git")),
        destination_yaml("worker-1", "GitStateStore", "default"),
        promise_yaml(),
    ];
    parts.extend(before.iter().map(|(r, v)| request_yaml(r, v)));
    k.apply_yaml(&parts.join("---\n"), &[]).assert_ok();
    wait_reconciled(&k, before.keys());

    daemon.stop();
    let down = Instant::now();
    let watch = ConditionWatch::start(k.home());
    let mut after = requests("r", if long() { 12 } else { 5 }, "v1");
    after.insert("r1".into(), "v2".into());
    let changed: Vec<String> = after
        .iter()
        .filter(|(r, v)| before.get(*r) != Some(*v))
        .map(|(r, v)| request_yaml(r, v))
        .collect();
    k.apply_yaml(&changed.join("---\n"), &["--no-wait"])
        .assert_ok();
    let message = assert_outage_shows(&k, &format!("127.0.0.1:{}", daemon.port()));
    eventually("the store to be not ready", WAIT, || {
        k.get_json("gitstatestore", "default", None)
            .filter(|s| condition_is(s, "Ready", "False"))
    });
    hold_fault(down, Duration::from_secs(if long() { 120 } else { 30 }));
    let outage = down.elapsed();
    daemon.start();

    wait_reconciled(&k, after.keys());
    let seen = watch.finish();
    eventually("the store and destination to be ready again", WAIT, || {
        let store = k.get_json("gitstatestore", "default", None)?;
        let dest = k.get_json("destination", "worker-1", None)?;
        (condition_is(&store, "Ready", "True") && condition_is(&dest, "Ready", "True"))
            .then_some(())
    });
    assert_tree(&repo, "worker-1", &expected_files(None, "worker-1", &after));
    let twice: BTreeSet<String> = PIPELINES
        .iter()
        .map(|p| format!("Update from: bundle-r1-{p}"))
        .collect();
    let commits = assert_exactly_once(&repo, &twice);
    let versions = assert_versions_in_history(&k, &repo);
    repo.assert_fsck();
    eprintln!(
        "git outage: down {:.0?}, {} requests, {commits} commits by kratix, {versions} placement \
         versions in history, writes lost 0; failure seen: {message}; conditions seen: {seen:#?}",
        outage,
        after.len()
    );
}

/// A Git server that accepts connections and never answers (hung), then comes back as a working
/// server on the same port: while it hangs, operations fail after `KRATIX_GIT_TIMEOUT` and say
/// so instead of freezing the controllers (pipelines keep running); afterwards everything is
/// written once.
#[test]
fn a_hung_git_server_times_out_without_freezing_serve_and_recovers() {
    let root = git_root();
    let repo = BareRepo::init(&root.path().join("state.git"));
    let silent = SilentServer::start();
    let port = silent.port;
    let mut k = Kratix::new()
        .with_env("KRATIX_GIT_TIMEOUT", "3")
        .with_env("KRATIX_STORE_RECHECK", "1");
    k.start_serve();
    let wanted = requests("r", 3, "v1");
    let mut parts = vec![
        git_store_yaml(&format!("git://127.0.0.1:{port}/state.git")),
        destination_yaml("worker-1", "GitStateStore", "default"),
        promise_yaml(),
    ];
    parts.extend(wanted.iter().map(|(r, v)| request_yaml(r, v)));
    k.apply_yaml(&parts.join("---\n"), &["--no-wait"])
        .assert_ok();
    let store = eventually("the store to say the server does not answer", WAIT, || {
        k.get_json("gitstatestore", "default", None).filter(|s| {
            condition_is(s, "Ready", "False") && message_of(s, "Ready").contains("did not answer")
        })
    });
    // The controllers are not stuck behind the hung server: every request's pipelines run.
    for r in wanted.keys() {
        eventually("the request's pipelines to complete", WAIT, || {
            k.get_json("bundle", r, Some("default"))
                .filter(|o| condition_is(o, "ConfigureWorkflowCompleted", "True"))
        });
    }
    let message = assert_outage_shows(&k, &format!("127.0.0.1:{port}"));

    silent.hang_up();
    let _daemon = {
        let mut daemon = RestartableGitDaemon::on_port(root.path(), port);
        daemon.start();
        daemon
    };
    wait_reconciled(&k, wanted.keys());
    assert_tree(
        &repo,
        "worker-1",
        &expected_files(None, "worker-1", &wanted),
    );
    let commits = assert_exactly_once(&repo, &BTreeSet::new());
    repo.assert_fsck();
    eprintln!(
        "hung git server: store said {:?}; placement said {message:?}; {commits} commits by \
         kratix after it came back, writes lost 0",
        message_of(&store, "Ready")
    );
}

/// A `pre-receive` hook playing an external committer who, for the first `limit` pushes,
/// commits a file of its own on top of the branch before the push is applied, so that the push
/// no longer fast-forwards and git refuses it. Logs each external commit to `log`.
fn install_external_committer(repo: &BareRepo, limit: usize) -> (PathBuf, PathBuf) {
    let count = repo.git_dir.join("external-count");
    let log = repo.git_dir.join("external-commits");
    let script = format!(
        r#"#!/bin/sh
set -e
n=$(cat '{count}' 2>/dev/null || echo 0)
[ "$n" -lt {limit} ] || exit 0
n=$((n + 1))
echo "$n" > '{count}'
# Refs cannot be updated from inside the incoming push's quarantine: step out of it.
unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
old=$(git rev-parse --verify -q refs/heads/main) || exit 0
blob=$(printf 'external: %s\n' "$n" | git hash-object -w --stdin)
index='{count}.index'
rm -f "$index"
GIT_INDEX_FILE=$index git read-tree "$old"
GIT_INDEX_FILE=$index git update-index --add --cacheinfo "100644,$blob,external/commit-$n.yaml"
tree=$(GIT_INDEX_FILE=$index git write-tree)
rm -f "$index"
commit=$(git commit-tree "$tree" -p "$old" -m "external $n")
git update-ref refs/heads/main "$commit" "$old"
echo "$commit" >> '{log}'
"#,
        count = count.display(),
        log = log.display(),
    );
    let hook = repo.git_dir.join("hooks/pre-receive");
    std::fs::create_dir_all(hook.parent().expect("hooks folder")).expect("hooks folder");
    std::fs::write(&hook, script).expect("write the hook");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // A force push would be refused: history can only grow.
    repo.git(&["config", "receive.denyNonFastForwards", "true"]);
    repo.git(&["config", "receive.denyDeletes", "true"]);
    (count, log)
}

/// Seeds `main` with a commit of somebody else's, through the server.
fn seed_foreign_commit(url: &str) -> String {
    let dir = git_root();
    let clone = dir.path().join("clone");
    let run = |args: &[&str], cwd: &Path| {
        let out = testkit::hermetic_git_command(cwd)
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["init", "-q", "-b", "main", "clone"], dir.path());
    std::fs::write(clone.join("README.md"), "kept by somebody else\n").expect("write");
    run(&["add", "-A"], &clone);
    run(&["commit", "-q", "-m", "somebody else's start"], &clone);
    run(&["push", "-q", url, "main"], &clone);
    run(&["rev-parse", "HEAD"], &clone).trim().to_string()
}

/// Pushes refused 100 times in a row because somebody else keeps committing first: Kratix
/// re-applies its changes on the new tip each time (the writer a few times per write, the
/// controller again after that), never force-pushes, shows the contention in conditions, and
/// in the end every external commit and file is there and each of our writes is one commit.
#[test]
fn a_hundred_pushes_beaten_by_an_external_committer_still_land_once_without_force() {
    let limit = if long() { 300 } else { 100 };
    let root = git_root();
    let repo = BareRepo::init(&root.path().join("state.git"));
    let daemon = RestartableGitDaemon::start_on_free_port(root.path());
    let seed = seed_foreign_commit(&daemon.url("state.git"));
    let (count, log) = install_external_committer(&repo, limit);

    let mut k = Kratix::new();
    k.start_serve();
    let watch = ConditionWatch::start(k.home());
    let wanted = requests("r", if long() { 8 } else { 4 }, "v1");
    let mut parts = vec![
        git_store_yaml(&daemon.url("state.git")),
        destination_yaml("worker-1", "GitStateStore", "default"),
        promise_yaml(),
    ];
    parts.extend(wanted.iter().map(|(r, v)| request_yaml(r, v)));
    k.apply_yaml(&parts.join("---\n"), &["--no-wait"])
        .assert_ok();
    wait_reconciled(&k, wanted.keys());
    let seen = watch.finish();

    let rejected: usize = std::fs::read_to_string(&count)
        .expect("the hook counted pushes")
        .trim()
        .parse()
        .expect("a count");
    assert_eq!(rejected, limit, "every planned rejection happened");
    let external: Vec<String> = std::fs::read_to_string(&log)
        .expect("the hook logged its commits")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(external.len(), limit);
    assert!(repo.is_ancestor(&seed, "main"), "the seed commit is kept");
    for sha in &external {
        assert!(repo.is_ancestor(sha, "main"), "external commit {sha} kept");
    }
    let files = repo.files();
    for n in 1..=limit {
        assert!(
            files.contains(&format!("external/commit-{n}.yaml")),
            "external file {n} kept"
        );
    }
    assert_eq!(
        repo.read("README.md").as_deref(),
        Some("kept by somebody else\n")
    );
    assert_tree(
        &repo,
        "worker-1",
        &expected_files(None, "worker-1", &wanted),
    );
    let commits = assert_exactly_once(&repo, &BTreeSet::new());
    assert_versions_in_history(&k, &repo);
    repo.assert_fsck();
    assert!(
        seen.iter().any(|m| m.contains("kept changing")),
        "the contention showed in conditions: {seen:#?}"
    );
    eprintln!(
        "external committer: {rejected} pushes refused, {} external commits kept, {commits} \
         commits by kratix, writes lost 0; conditions seen: {seen:#?}",
        external.len()
    );
}

/// Two homes (two `serve`s) write different Destinations of one repository and branch at once,
/// many requests each: no commit of either is lost, no tree is corrupted, each Destination holds
/// exactly its files.
#[test]
fn two_homes_writing_one_branch_lose_no_commit() {
    let per_home = if long() { 15 } else { 6 };
    let root = git_root();
    let repo = BareRepo::init(&root.path().join("state.git"));
    let daemon = RestartableGitDaemon::start_on_free_port(root.path());
    let url = daemon.url("state.git");
    let mut homes: Vec<(Kratix, &str, BTreeMap<String, String>)> =
        [("a", "worker-a"), ("b", "worker-b")]
            .into_iter()
            .map(|(prefix, dest)| {
                let mut k = Kratix::new();
                k.start_serve();
                (k, dest, requests(prefix, per_home, "v1"))
            })
            .collect();
    for (k, dest, _) in &homes {
        k.apply_yaml(
            &[
                git_store_yaml(&url),
                destination_yaml(dest, "GitStateStore", "default"),
                promise_yaml(),
            ]
            .join("---\n"),
            &["--no-wait"],
        )
        .assert_ok();
    }
    // Interleaved, so both homes have writes pending at once.
    for i in 0..per_home {
        for (k, _, wanted) in &homes {
            let (r, v) = wanted.iter().nth(i).expect("a request");
            k.apply_yaml(&request_yaml(r, v), &["--no-wait"])
                .assert_ok();
        }
    }
    for (k, _, wanted) in &homes {
        wait_reconciled(k, wanted.keys());
    }

    repo.assert_fsck();
    let mut versions = 0;
    for (k, dest, wanted) in &homes {
        assert_tree(&repo, dest, &expected_files(None, dest, wanted));
        versions += assert_versions_in_history(k, &repo);
    }
    let commits = assert_exactly_once(&repo, &BTreeSet::new());
    let files = repo.files();
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("worker-a/") || f.starts_with("worker-b/")),
        "nothing else in the tree: {files:#?}"
    );
    for (k, _, _) in &mut homes {
        k.stop_serve();
    }
    eprintln!(
        "two homes: {} requests, {commits} commits, {versions} placement versions in history, \
         writes lost 0",
        2 * per_home
    );
}

// ---------------------------------------------------------------------------------------------
// Buckets

const STORE_PATH: &str = "platform";

/// Puts an object that kratix-rs did not write, saying which it is.
fn put_foreign(inspector: &Inspector, key: &str) {
    inspector.put(key, format!("written by someone else: {key}\n"));
}

fn bucket_platform_yaml(server: &s3::S3Server, endpoint: &str, bucket: &str) -> String {
    [
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s3-creds\n  namespace: default\nstringData:\n  accessKeyID: {}\n  secretAccessKey: {}\n", server.key.id, server.key.secret),
        format!("apiVersion: platform.kratix.io/v1alpha1\nkind: BucketStateStore\nmetadata:\n  name: s3\nspec:\n  endpoint: {endpoint}\n  bucketName: {bucket}\n  path: {STORE_PATH}\n  insecure: true\n  authMethod: accessKey\n  secretRef: {{name: s3-creds, namespace: default}}\n"),
        destination_yaml("worker-s3", "BucketStateStore", "s3"),
        promise_yaml(),
    ]
    .join("---\n")
}

/// The bucket holds exactly `expected` (contents where given) plus `foreign`, untouched.
#[track_caller]
fn assert_bucket(
    inspector: &Inspector,
    expected: &BTreeMap<String, Option<String>>,
    foreign: &[String],
) {
    let mut want: BTreeSet<String> = expected.keys().cloned().collect();
    want.extend(foreign.iter().cloned());
    // Waits, as for Git: the Promise's dependencies and the canaries may still be retrying.
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline && inspector.keys() != want {
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(inspector.keys(), want, "objects in the bucket");
    for (key, content) in expected {
        if let Some(content) = content {
            assert_eq!(&inspector.get(key), content, "{key}");
        }
    }
    for key in foreign {
        assert_eq!(
            inspector.get(key),
            format!("written by someone else: {key}\n"),
            "{key}"
        );
    }
}

/// Each of Kratix's objects was stored by exactly one accepted PUT (`twice`: two, for files of
/// an edited request), as the proxy in front of the server saw. Returns the PUTs counted.
#[track_caller]
fn assert_puts_once(
    proxy: &FaultProxy,
    bucket: &str,
    expected: &BTreeMap<String, Option<String>>,
    twice: &BTreeSet<String>,
) -> usize {
    let puts = proxy.log().successful_puts();
    let mut total = 0;
    for key in expected.keys() {
        let n = puts.get(&format!("/{bucket}/{key}")).copied().unwrap_or(0);
        let want = if twice.contains(key) { 2 } else { 1 };
        assert_eq!(n, want, "accepted PUTs of {key}; all: {puts:#?}");
        total += n;
    }
    total
}

/// The S3 server stopped during writes and started again: the outage shows in conditions, then
/// everything lands, each object stored once, objects of others untouched.
#[test]
fn s3_server_stopped_and_restarted_during_writes_ends_consistent_and_written_once() {
    let server = s3::S3Server::start();
    let bucket = server.new_bucket();
    let inspector = Inspector::new(&server, &bucket);
    let upstream = server.s3_endpoint.parse().expect("an address");
    // Lets everything through; counts what the server accepted.
    let proxy = FaultProxy::start(upstream, FaultPlan::new(0, 0.0));
    let foreign = vec![
        "notes/by-someone-else.txt".to_string(),
        format!("{STORE_PATH}/worker-s3/resources/foreign.yaml"),
    ];
    for key in &foreign {
        put_foreign(&inspector, key);
    }
    let mut k = Kratix::new().with_env("KRATIX_STORE_RECHECK", "1");
    k.start_serve();
    let before = requests("r", 2, "v1");
    let mut parts = vec![bucket_platform_yaml(&server, &proxy.endpoint(), &bucket)];
    parts.extend(before.iter().map(|(r, v)| request_yaml(r, v)));
    k.apply_yaml(&parts.join("---\n"), &[]).assert_ok();
    wait_reconciled(&k, before.keys());

    server.stop_server();
    let down = Instant::now();
    let mut after = requests("r", if long() { 10 } else { 4 }, "v1");
    after.insert("r1".into(), "v2".into());
    let changed: Vec<String> = after
        .iter()
        .filter(|(r, v)| before.get(*r) != Some(*v))
        .map(|(r, v)| request_yaml(r, v))
        .collect();
    k.apply_yaml(&changed.join("---\n"), &["--no-wait"])
        .assert_ok();
    let message = assert_outage_shows(&k, &format!("bucket {bucket}"));
    hold_fault(down, Duration::from_secs(if long() { 90 } else { 20 }));
    let outage = down.elapsed();
    server.start_server();

    wait_reconciled(&k, after.keys());
    let expected = expected_files(Some(STORE_PATH), "worker-s3", &after);
    assert_bucket(&inspector, &expected, &foreign);
    let twice: BTreeSet<String> = expected
        .keys()
        .filter(|key| key.contains("/bundle/r1/"))
        .cloned()
        .collect();
    let puts = assert_puts_once(&proxy, &bucket, &expected, &twice);
    eprintln!(
        "S3 server restart: down {outage:.0?}, {} requests sent while down to an unreachable \
         server, {puts} accepted PUTs, writes lost 0; failure seen: {message}",
        proxy.log().unreachable
    );
}

/// An S3 endpoint answering 500, 503 or a dropped connection for 30% of requests (seeded,
/// `KRATIX_FAULT_SEED`): everything lands, each object stored once, objects of others kept.
#[test]
fn s3_errors_for_a_third_of_requests_still_write_everything_once() {
    let seed: u64 = std::env::var("KRATIX_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_202);
    let server = s3::S3Server::shared();
    let bucket = server.new_bucket();
    let inspector = Inspector::new(server, &bucket);
    let upstream = server.s3_endpoint.parse().expect("an address");
    let proxy = FaultProxy::start(upstream, FaultPlan::new(seed, 0.3));
    let mut foreign = vec![format!("{STORE_PATH}/worker-s3/dependencies/foreign.yaml")];
    put_foreign(&inspector, &foreign[0]);

    let mut k = Kratix::new();
    k.start_serve();
    let wanted = requests("r", if long() { 20 } else { 6 }, "v1");
    let mut parts = vec![bucket_platform_yaml(server, &proxy.endpoint(), &bucket)];
    parts.extend(wanted.iter().map(|(r, v)| request_yaml(r, v)));
    k.apply_yaml(&parts.join("---\n"), &["--no-wait"])
        .assert_ok();
    // Somebody else writes meanwhile, straight to the server.
    for i in 0..3 {
        let key = format!("{STORE_PATH}/worker-s3/resources/foreign-{i}.yaml");
        put_foreign(&inspector, &key);
        foreign.push(key);
    }
    wait_reconciled(&k, wanted.keys());

    let expected = expected_files(Some(STORE_PATH), "worker-s3", &wanted);
    assert_bucket(&inspector, &expected, &foreign);
    let puts = assert_puts_once(&proxy, &bucket, &expected, &BTreeSet::new());
    let log = proxy.log();
    assert!(!log.injected.is_empty(), "faults were injected");
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for (method, _, fault) in &log.injected {
        *by_kind.entry(format!("{method} {fault:?}")).or_insert(0) += 1;
    }
    eprintln!(
        "s3 errors (seed {seed}): {} requests forwarded, {} faults injected {by_kind:?}, {puts} \
         accepted PUTs, writes lost 0",
        log.forwarded.len(),
        log.injected.len()
    );
}

#[test]
fn the_fault_plan_injects_its_share_and_is_reproducible() {
    support::faults::fault_plan_self_check();
}
