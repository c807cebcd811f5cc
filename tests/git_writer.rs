//! Scheduling and the Git state store, end to end through the `kratix-rs` binary: one
//! commit per pipeline and destination with Kratix's message and trailers, no commit when nothing
//! changed, deletions of exactly our files, other writers' files and commits kept, Kratix's three
//! filepath layouts byte for byte, scheduling onto labelled Destinations, statuses that name the
//! commits, and recovery once an unreachable or misconfigured store comes right.
//!
//! Pipelines are the scripts of fixtures/git_writer/scripts; repositories are inspected with the
//! git CLI. Remote stores are served on loopback by the servers of the test kit.

mod support;

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use serde_yaml::Value as Yaml;
use support::{condition, condition_is, eventually, fixtures, Kratix};

/// Generous: the machine has 2 cores and tests run in parallel.
const WAIT: Duration = Duration::from_secs(180);
const CANARY_NAMESPACE: &str =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kratix-worker-system\nspec: {}\nstatus: {}\n";
const CANARY_CONFIGMAP: &str = "apiVersion: v1\ndata:\n  canary: this confirms your infrastructure is reading from Kratix state stores\nkind: ConfigMap\nmetadata:\n  name: kratix-info\n  namespace: kratix-worker-system\n";
/// First five hex characters of md5 of a workload group's directory.
const ROOT_GROUP: &str = "5058f";
const DEST1_GROUP: &str = "ba6cb";
const DEST2_GROUP: &str = "76355";

// ---------------------------------------------------------------------------------------------
// Objects to apply

fn scripts_dir() -> String {
    support::sandbox_fixtures("git_writer/scripts")
        .display()
        .to_string()
}

fn with_scripts(text: &str) -> String {
    text.replace("__SCRIPTS__", &scripts_dir())
}

/// The `bundle` Promise of the fixtures: resource pipelines render, groups, extra.
fn bundle() -> Yaml {
    let text = std::fs::read_to_string(fixtures().join("git_writer/bundle-promise.yaml"))
        .expect("bundle fixture");
    serde_yaml::from_str(&with_scripts(&text)).expect("bundle fixture is YAML")
}

/// `bundle` with only the named resource configure pipelines, in that order.
fn bundle_with(pipelines: &[&str]) -> Yaml {
    let mut promise = bundle();
    let all = resource_configure(&mut promise).clone();
    *resource_configure(&mut promise) = pipelines
        .iter()
        .map(|name| {
            all.iter()
                .find(|p| p["metadata"]["name"].as_str() == Some(name))
                .cloned()
                .unwrap_or_else(|| panic!("no pipeline {name} in the bundle fixture"))
        })
        .collect();
    promise
}

fn resource_configure(promise: &mut Yaml) -> &mut Vec<Yaml> {
    promise["spec"]["workflows"]["resource"]["configure"]
        .as_sequence_mut()
        .expect("resource configure pipelines")
}

/// A pipeline of one container running `command` (`__SCRIPTS__` replaced).
fn pipeline(name: &str, command: &[&str]) -> Yaml {
    let command: Vec<String> = command.iter().map(|c| with_scripts(c)).collect();
    serde_yaml::to_value(serde_json::json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "local/sh", "command": command}]},
    }))
    .expect("pipeline as YAML")
}

fn yaml(value: &Yaml) -> String {
    serde_yaml::to_string(value).expect("YAML")
}

/// GitStateStore `default`; `extra` is more of its spec, one `key: value` per line.
fn store_yaml(url: &str, extra: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata:\n  name: default\nspec:\n  url: {url}\n  branch: main\n{}",
        indent(extra)
    )
}

/// Destination `name` on store `default` at path `name`; `labels` is a flow map.
fn destination_yaml(name: &str, labels: &str, extra: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata:\n  name: {name}\n  labels: {labels}\nspec:\n  path: {name}\n  stateStoreRef: {{kind: GitStateStore, name: default}}\n{}",
        indent(extra)
    )
}

fn indent(lines: &str) -> String {
    lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("  {l}\n"))
        .collect()
}

fn request_yaml(name: &str, namespace: &str, version: &str) -> String {
    format!("apiVersion: gw.kratix.io/v1alpha1\nkind: Bundle\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  version: {version}\n")
}

fn docs(parts: &[String]) -> String {
    parts.join("\n---\n")
}

/// What `emit.sh LABEL FILE` writes for object `object` at request version `version`.
fn emitted(object: &str, label: &str, file: &str, version: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}-{label}\n  namespace: default\ndata:\n  file: {file}\n  version: \"{version}\"\n")
}

/// What `groups.sh` writes in `dir/cm.yaml` for `object`.
fn group_file(object: &str, dir: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}-{dir}\n  namespace: default\ndata:\n  group: {dir}\n")
}

// ---------------------------------------------------------------------------------------------
// Looking at repositories

/// A commit as `git log` shows it.
#[derive(Debug, Clone)]
struct Commit {
    sha: String,
    author: String,
    committer: String,
    message: String,
}

impl Commit {
    fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or_default()
    }
}

/// A bare repository on this machine.
struct Repo {
    git_dir: PathBuf,
}

impl Repo {
    fn new(git_dir: impl Into<PathBuf>) -> Self {
        Self {
            git_dir: git_dir.into(),
        }
    }

    fn try_git(&self, args: &[&str]) -> Option<String> {
        let out = testkit::hermetic_git_command(Path::new("/"))
            .arg("--git-dir")
            .arg(&self.git_dir)
            .args(args)
            .output()
            .expect("git runs");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[track_caller]
    fn git(&self, args: &[&str]) -> String {
        self.try_git(args)
            .unwrap_or_else(|| panic!("git {args:?} failed in {}", self.git_dir.display()))
    }

    fn head(&self) -> Option<String> {
        self.try_git(&["rev-parse", "--verify", "-q", "refs/heads/main"])
            .map(|s| s.trim().to_string())
    }

    /// Commits reachable from `main` and not from `since`, newest first.
    fn commits_since(&self, since: Option<&str>) -> Vec<Commit> {
        let range = match since {
            Some(base) => format!("{base}..main"),
            None => "main".to_string(),
        };
        let log = self.git(&[
            "log",
            "--format=%H%x1f%an <%ae>%x1f%cn <%ce>%x1f%B%x1e",
            &range,
        ]);
        log.split('\x1e')
            .map(|entry| entry.trim_start_matches('\n'))
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let fields: Vec<&str> = entry.splitn(4, '\x1f').collect();
                Commit {
                    sha: fields[0].to_string(),
                    author: fields[1].to_string(),
                    committer: fields[2].to_string(),
                    message: fields[3].trim_end().to_string(),
                }
            })
            .collect()
    }

    fn commits(&self) -> Vec<Commit> {
        self.commits_since(None)
    }

    fn files(&self) -> BTreeSet<String> {
        if self.head().is_none() {
            return BTreeSet::new();
        }
        self.git(&["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn files_under(&self, prefix: &str) -> BTreeSet<String> {
        self.files()
            .into_iter()
            .filter(|f| f.starts_with(prefix))
            .collect()
    }

    fn read(&self, path: &str) -> Option<String> {
        self.try_git(&["cat-file", "-p", &format!("main:{path}")])
    }

    /// `(status letter, path)` of every file a commit changed.
    fn changes(&self, sha: &str) -> BTreeSet<(String, String)> {
        self.git(&[
            "diff-tree",
            "-r",
            "--root",
            "--no-commit-id",
            "--name-status",
            sha,
        ])
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(s, p)| (s.to_string(), p.to_string()))
        .collect()
    }

    /// The trailers git itself finds in a commit's message.
    fn trailers(&self, sha: &str) -> String {
        self.git(&["log", "-1", "--format=%(trailers:only,unfold)", sha])
            .trim()
            .to_string()
    }

    fn is_ancestor(&self, ancestor: &str, of: &str) -> bool {
        self.try_git(&["merge-base", "--is-ancestor", ancestor, of])
            .is_some()
    }
}

/// The commit message Kratix-rs writes.
fn message(verb: &str, work: &str, trailers: &[(&str, &str)]) -> String {
    let mut out = format!("{verb} from: {work}\n\n");
    for (k, v) in trailers {
        out.push_str(&format!("Kratix-{k}: {v}\n"));
    }
    out.trim_end().to_string()
}

#[track_caller]
fn only_commit<'a>(commits: &'a [Commit], subject: &str) -> &'a Commit {
    let found: Vec<&Commit> = commits.iter().filter(|c| c.subject() == subject).collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one commit {subject:?} in {:?}",
        subjects(commits)
    );
    found[0]
}

fn subjects(commits: &[Commit]) -> Vec<String> {
    commits.iter().map(|c| c.subject().to_string()).collect()
}

/// A clone of a repository to commit to as somebody else would.
struct Clone {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Clone {
    fn of(url: &str) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        testkit::git(&["clone", "-q", "-b", "main", url, "clone"], dir.path());
        let path = dir.path().join("clone");
        Self { _dir: dir, path }
    }

    fn git(&self, args: &[&str]) -> String {
        testkit::git(args, &self.path)
    }

    fn write(&self, path: &str, content: &str) {
        let full = self.path.join(path);
        std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
        std::fs::write(full, content).expect("write");
    }

    /// Commits everything and pushes; returns the pushed commit.
    fn commit_and_push(&self, what: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", what]);
        self.git(&["push", "-q", "origin", "main"]);
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Looking at the platform

fn work_name(k: &Kratix, namespace: &str, resource: &str, pipeline: &str) -> String {
    let mut selector = format!("kratix.io/pipeline-name={pipeline}");
    if !resource.is_empty() {
        selector.push_str(&format!(",kratix.io/resource-name={resource}"));
    }
    let works = k.list_json("works", &["-n", namespace, "-l", &selector]);
    assert_eq!(
        works.len(),
        1,
        "one Work for {resource}/{pipeline}: {works:?}"
    );
    works[0]["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string()
}

/// Waits with the CLI until the condition is True for the object's current generation.
#[track_caller]
fn wait_for(k: &Kratix, kind: &str, name: &str, namespace: Option<&str>, type_: &str) {
    let for_arg = format!("condition={type_}");
    let mut args = vec![kind, name, "--for", &for_arg, "--timeout", "180"];
    if let Some(ns) = namespace {
        args.extend(["-n", ns]);
    }
    let mut full = vec!["wait"];
    full.extend(args);
    k.run(&full).assert_ok();
}

/// Polls `get` until `check` holds for the object, returning it.
#[track_caller]
fn eventually_object(
    k: &Kratix,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, WAIT, || {
        k.get_json(kind, name, namespace).filter(|o| check(o))
    })
}

/// Polls until the tree of `main` is exactly `expected`; on timeout shows the difference.
#[track_caller]
fn eventually_tree(repo: &Repo, what: &str, expected: &BTreeSet<String>) {
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline && repo.files() != *expected {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(&repo.files(), expected, "{what}");
}

fn setup(parts: &[String]) -> String {
    docs(parts)
}

/// A home with a store in it (`state.git`), Destination worker-1 (label target=worker-1), the
/// given Promise and requests, applied and settled.
fn platform(store_extra: &str, promise: &Yaml, requests: &[(&str, &str)]) -> (Kratix, Repo) {
    let k = Kratix::new();
    let mut parts = vec![
        store_yaml("state.git", store_extra),
        destination_yaml("worker-1", "{target: worker-1}", ""),
        yaml(promise),
    ];
    for (name, version) in requests {
        parts.push(request_yaml(name, "default", version));
    }
    k.apply_yaml(&setup(&parts), &[]).assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    (k, repo)
}

fn resource_dir(dest: &str, ns: &str, request: &str, pipeline: &str, group: &str) -> String {
    format!("{dest}/resources/{ns}/bundle/{request}/{pipeline}/{group}")
}

// ---------------------------------------------------------------------------------------------
// 1. Commits, messages, trailers, authors

#[test]
fn one_commit_per_pipeline_and_destination_with_kratix_trailers_and_the_store_author() {
    let (k, repo) = platform(
        "gitAuthor: {name: Platform Bot, email: bot@example.com}",
        &bundle(),
        &[("r1", "v1")],
    );
    let commits = repo.commits();
    for commit in &commits {
        assert_eq!(
            commit.author, "Platform Bot <bot@example.com>",
            "{commit:?}"
        );
        assert_eq!(
            commit.committer, "Platform Bot <bot@example.com>",
            "{commit:?}"
        );
    }
    // canary, static dependencies, promise pipeline `deps`, three resource pipelines.
    assert_eq!(commits.len(), 6, "{:?}", subjects(&commits));

    for pipeline in ["render", "groups", "extra"] {
        let work = work_name(&k, "default", "r1", pipeline);
        let commit = only_commit(&commits, &format!("Update from: {work}"));
        let expected = message(
            "Update",
            &work,
            &[
                ("Promise", "bundle"),
                ("Resource", "default/r1"),
                ("Pipeline", pipeline),
                ("Destination", "worker-1"),
                ("Workflow", "resource/configure"),
            ],
        );
        assert_eq!(commit.message, expected);
        // git reads the same lines as trailers.
        let trailers = expected.split_once("\n\n").expect("trailers").1;
        assert_eq!(repo.trailers(&commit.sha), trailers);
    }

    // Two workload groups of one pipeline, both on worker-1: one commit with both.
    let groups = only_commit(
        &commits,
        &format!("Update from: {}", work_name(&k, "default", "r1", "groups")),
    );
    let added: BTreeSet<(String, String)> = [
        format!(
            "{}/dest1/cm.yaml",
            resource_dir("worker-1", "default", "r1", "groups", DEST1_GROUP)
        ),
        format!(
            "{}/dest2/cm.yaml",
            resource_dir("worker-1", "default", "r1", "groups", DEST2_GROUP)
        ),
    ]
    .into_iter()
    .map(|p| ("A".to_string(), p))
    .collect();
    assert_eq!(repo.changes(&groups.sha), added);

    let deps = work_name(&k, "kratix-platform-system", "", "deps");
    let commit = only_commit(&commits, &format!("Update from: {deps}"));
    assert_eq!(
        commit.message,
        message(
            "Update",
            &deps,
            &[
                ("Promise", "bundle"),
                ("Pipeline", "deps"),
                ("Destination", "worker-1"),
                ("Workflow", "promise/configure"),
            ],
        )
    );
}

#[test]
fn the_default_author_is_kratix() {
    let (_k, repo) = platform("", &bundle_with(&["render"]), &[("r1", "v1")]);
    let commits = repo.commits();
    assert!(commits.len() >= 4, "{:?}", subjects(&commits));
    for commit in &commits {
        assert_eq!(commit.author, "kratix <>", "{commit:?}");
        assert_eq!(commit.committer, "kratix <>", "{commit:?}");
    }
}

/// GitStateStore `default` on `state.git` with this commit message template and `extra` spec.
fn store_with_template(template: &str, extra: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata:\n  name: default\n  annotations:\n    kratix.io/commit-message-template: {}\nspec:\n  url: state.git\n  branch: main\n{}",
        serde_json::to_string(template).expect("a JSON string is YAML"),
        indent(extra)
    )
}

#[test]
fn a_commit_message_template_and_git_author_make_the_commits_readable() {
    let k = Kratix::new();
    let template = "{annotation:example.com/ticket} {promise} {namespace}/{request} \
                    (generation {generation}) by {pipeline} to {destination}\n\n{workflow} of {work}";
    let request = "apiVersion: gw.kratix.io/v1alpha1\nkind: Bundle\nmetadata:\n  name: r1\n  \
                   namespace: default\n  annotations:\n    example.com/ticket: OPS-42\nspec:\n  \
                   version: v1\n";
    k.apply_yaml(
        &setup(&[
            store_with_template(
                template,
                "gitAuthor: {name: Platform Bot, email: bot@example.com}",
            ),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request.to_string(),
        ]),
        &[],
    )
    .assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    let commits = repo.commits();
    let work = work_name(&k, "default", "r1", "render");
    let commit = only_commit(
        &commits,
        "OPS-42 bundle default/r1 (generation 1) by render to worker-1",
    );
    assert_eq!(
        commit.message,
        format!(
            "OPS-42 bundle default/r1 (generation 1) by render to worker-1\n\n\
             resource/configure of {work}\n\n\
             Kratix-Promise: bundle\nKratix-Resource: default/r1\nKratix-Pipeline: render\n\
             Kratix-Destination: worker-1\nKratix-Workflow: resource/configure"
        )
    );
    assert_eq!(commit.author, "Platform Bot <bot@example.com>");
    assert_eq!(commit.committer, "Platform Bot <bot@example.com>");
    // Git itself reads the trailers; the template's text does not hide them.
    assert!(
        repo.trailers(&commit.sha)
            .contains("Kratix-Resource: default/r1"),
        "{}",
        repo.trailers(&commit.sha)
    );
    // A promise workflow has no request: its values are empty, the Promise's generation shows.
    only_commit(&commits, "bundle / (generation 1) by deps to worker-1");
}

#[test]
fn an_invalid_template_makes_the_store_not_ready_and_writes_nothing_until_fixed() {
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(
        &setup(&[
            store_with_template("[{ticket}] {promise", ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &["--no-wait"],
    )
    .assert_ok();
    let ready = assert_blocked(&k);
    assert_eq!(ready["reason"], "InvalidCommitMessageTemplate", "{ready}");
    assert!(
        ready["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("annotation kratix.io/commit-message-template: unknown variable {ticket} at character 2"),
        "the message names the annotation and the mistake: {ready}"
    );
    let repo = Repo::new(k.home().join("state.git"));
    assert_eq!(repo.head(), None, "nothing written with a wrong message");

    k.run(&[
        "annotate",
        "gitstatestore",
        "default",
        "kratix.io/commit-message-template-",
    ])
    .assert_ok();
    assert_recovered(&k, &repo);
}

/// GETs `path` from `addr` over plain HTTP/1.0; the body.
fn http_get(addr: &str, path: &str) -> String {
    http_get_with_head(addr, path).1
}

/// GETs `path` from `addr` over plain HTTP/1.0; the head (status line and headers) and the body.
fn http_get_with_head(addr: &str, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("the metrics endpoint answers");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response read");
    let (head, body) = response.split_once("\r\n\r\n").expect("headers end");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    (head.to_string(), body.to_string())
}

/// The value of the sample `series` (name and labels, exactly as written) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.rsplit_once(' ').filter(|(s, _)| *s == series))
        .and_then(|(_, v)| v.parse().ok())
}

#[test]
fn serve_exposes_metrics_of_runs_writes_and_pushes() {
    let mut k = Kratix::new();
    k.start_serve_args(&["--metrics-addr", "127.0.0.1:0"], &[]);
    let addr = eventually("serve to say where its metrics are", WAIT, || {
        k.serve_log().lines().find_map(|l| {
            l.strip_prefix("metrics on http://")
                .and_then(|rest| rest.strip_suffix("/metrics"))
                .map(str::to_string)
        })
    });
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &[],
    )
    .assert_ok();
    // The same output again: a write that changes nothing.
    k.run(&["reconcile", "bundle", "r1"]).assert_ok();

    let text = eventually("a no-op write to be counted", WAIT, || {
        let text = http_get(&addr, "/metrics");
        sample(
            &text,
            "kratix_state_store_writes_total{store=\"git\",result=\"unchanged\"}",
        )
        .filter(|n| *n >= 1.0)
        .map(|_| text)
    });
    for family in [
        "kratix_reconcile_total counter",
        "kratix_reconcile_errors_total counter",
        "kratix_pipeline_runs_total counter",
        "kratix_pipeline_run_duration_seconds histogram",
        "kratix_queue_depth gauge",
        "kratix_pipeline_end_to_commit_seconds histogram",
        "kratix_state_store_writes_total counter",
        "kratix_git_commits_per_push histogram",
        "kratix_git_push_conflicts_total counter",
        "kratix_git_push_retries_total counter",
    ] {
        assert!(
            text.lines().any(|l| l == format!("# TYPE {family}")),
            "{family} missing in\n{text}"
        );
    }
    let value = |series: &str| {
        sample(&text, series).unwrap_or_else(|| panic!("{series} missing in\n{text}"))
    };
    let configure = "workflow_type=\"resource\",action=\"configure\",result=\"succeeded\"";
    // Applied once, reconciled once.
    assert_eq!(
        value(&format!("kratix_pipeline_runs_total{{{configure}}}")),
        2.0
    );
    assert_eq!(
        value(&format!(
            "kratix_pipeline_run_duration_seconds_count{{{configure}}}"
        )),
        2.0
    );
    let took = value(&format!(
        "kratix_pipeline_run_duration_seconds_sum{{{configure}}}"
    ));
    assert!(took > 0.0 && took < 300.0, "two runs took {took} s");
    assert_eq!(
        value("kratix_pipeline_runs_total{workflow_type=\"promise\",action=\"configure\",result=\"succeeded\"}"),
        1.0
    );
    // Each pipeline end timed once on its one Destination: the promise's and the request's two.
    assert_eq!(value("kratix_pipeline_end_to_commit_seconds_count"), 3.0);
    assert!(value("kratix_pipeline_end_to_commit_seconds_sum") < 300.0);
    // Works' writes: static dependencies, the promise's pipeline, the request's.
    assert_eq!(
        value("kratix_state_store_writes_total{store=\"git\",result=\"changed\"}"),
        3.0
    );
    let pushes = value("kratix_git_commits_per_push_count");
    let pushed = value("kratix_git_commits_per_push_sum");
    assert!((1.0..=4.0).contains(&pushes), "{pushes} pushes");
    assert_eq!(
        pushed, 4.0,
        "every commit, the canary's too, was pushed once"
    );
    assert_eq!(value("kratix_git_push_conflicts_total"), 0.0);
    assert_eq!(value("kratix_git_push_retries_total"), 0.0);
    assert!(value("kratix_reconcile_total{controller=\"request\"}") >= 2.0);
    assert!(value("kratix_reconcile_total{controller=\"workplacement\"}") >= 1.0);
    assert!(value("kratix_queue_depth") >= 0.0);
    // Object names never become labels.
    for name in ["r1", "worker-1", "bundle", "default"] {
        assert!(
            !text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .any(|l| l.contains(&format!("\"{name}\""))),
            "{name} is a label value in\n{text}"
        );
    }
    assert_eq!(http_get(&addr, "/healthz"), "ok\n");
    // Prometheus' text format, said so.
    let (head, _) = http_get_with_head(&addr, "/metrics");
    assert!(
        head.lines()
            .any(|l| l
                .eq_ignore_ascii_case("content-type: text/plain; version=0.0.4; charset=utf-8")),
        "{head}"
    );
}

#[test]
fn serve_logs_json_lines_on_request() {
    let mut k = Kratix::new();
    k.start_serve_args(&["--log-format", "json"], &[("KRATIX_LOG", "info")]);
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &[],
    )
    .assert_ok();
    let run = eventually("serve to log a pipeline run", WAIT, || {
        k.serve_log()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["fields"]["message"] == "pipeline run finished")
    });
    assert_eq!(run["level"], "INFO", "{run}");
    assert!(run["fields"]["run"].is_string(), "{run}");
    assert!(run["timestamp"].is_string(), "{run}");
    // Every line from the logger is JSON (serve's own notes are plain text by contract).
    for line in k.serve_log().lines().filter(|l| l.starts_with('{')) {
        assert!(serde_json::from_str::<Value>(line).is_ok(), "{line}");
    }
}

/// The JSON lines `serve` logged inside a reconcile of `object`, queued for `reason`, with
/// `message`: the reconcile's span (`span`, and in `spans`) names both.
fn reconcile_lines(log: &str, object: &str, reason: &str, message: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["fields"]["message"] == message)
        .filter(|l| {
            l["spans"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["name"] == "reconcile" && s["object"] == object && s["reason"] == reason)
        })
        .collect()
}

#[test]
fn a_reconciles_log_lines_name_the_object_and_why_it_was_queued() {
    let (mut k, _repo) = platform("", &bundle_with(&["render"]), &[("r1", "v1")]);
    k.start_serve_args(
        &["--log-format", "json"],
        &[("KRATIX_LOG", "warn,kratix::controllers=debug")],
    );
    let request = "Bundle default/r1";
    // Start-up looks at everything.
    eventually("serve to look at the request at start-up", WAIT, || {
        reconcile_lines(&k.serve_log(), request, "resync", "reconciling")
            .pop()
            .filter(|l| l["span"]["name"] == "reconcile" && l["span"]["object"] == request)
    });
    // The request changes: its reconcile starts a run, and the run's changes wake it as their
    // owner.
    k.apply_yaml(&request_yaml("r1", "default", "v2"), &[])
        .assert_ok();
    let created = eventually("the changed request to start a run", WAIT, || {
        reconcile_lines(&k.serve_log(), request, "change", "pipeline run created").pop()
    });
    assert_eq!(created["level"], "INFO", "{created}");
    eventually("the run's changes to wake the request", WAIT, || {
        reconcile_lines(&k.serve_log(), request, "owner", "reconciling").pop()
    });
    // Every reconcile says why it runs, in a few words.
    let reasons = ["change", "owner", "retry", "requeue", "resync"];
    for line in k
        .serve_log()
        .lines()
        .filter(|l| l.contains("\"reconcile\""))
    {
        let line: Value = serde_json::from_str(line).expect("a JSON line");
        let span = &line["span"];
        if span["name"] == "reconcile" {
            assert!(span["object"].is_string(), "{line}");
            assert!(reasons.iter().any(|r| span["reason"] == *r), "{line}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Idempotence

#[test]
fn an_identical_rerun_makes_no_commit_and_a_change_commits_only_what_changed() {
    let (k, repo) = platform("", &bundle(), &[("r1", "v1")]);
    let head = repo.head().expect("a main branch");
    let runs_before = k
        .list_json(
            "pipelineruns",
            &["-n", "default", "-l", "kratix.io/resource-name=r1"],
        )
        .len();
    let placements_before = k.list_json("workplacements", &["-n", "default"]);

    k.run(&["reconcile", "bundle", "r1"]).assert_ok();
    let runs_after = k
        .list_json(
            "pipelineruns",
            &["-n", "default", "-l", "kratix.io/resource-name=r1"],
        )
        .len();
    assert!(
        runs_after > runs_before,
        "reconcile re-ran the pipelines ({runs_before} -> {runs_after} runs)"
    );
    assert_eq!(
        repo.head().as_deref(),
        Some(head.as_str()),
        "an identical re-run makes no commit"
    );
    // The placements keep naming the commit that holds their files.
    for before in &placements_before {
        let name = before["metadata"]["name"].as_str().expect("name");
        let after = k
            .get_json("workplacements", name, Some("default"))
            .expect("placement");
        assert_eq!(
            after["status"]["versionID"], before["status"]["versionID"],
            "{name}"
        );
    }

    k.run(&["reconcile", "promise", "bundle"]).assert_ok();
    assert_eq!(
        repo.head().as_deref(),
        Some(head.as_str()),
        "an identical promise re-run makes no commit"
    );

    // A new version changes the files of `render` and `extra` only (groups don't show it).
    k.apply_yaml(&request_yaml("r1", "default", "v2"), &[])
        .assert_ok();
    let new = repo.commits_since(Some(&head));
    let mut got = subjects(&new);
    got.sort();
    assert_eq!(
        got,
        vec![
            format!("Update from: {}", work_name(&k, "default", "r1", "extra")),
            format!("Update from: {}", work_name(&k, "default", "r1", "render")),
        ]
    );
    let render = resource_dir("worker-1", "default", "r1", "render", ROOT_GROUP);
    assert_eq!(
        repo.read(&format!("{render}/config.yaml")).as_deref(),
        Some(emitted("r1", "render", "config.yaml", "v2").as_str())
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Deletions of exactly our files

#[test]
fn removed_and_renamed_pipelines_and_deleted_requests_remove_exactly_their_files() {
    let (mut k, repo) = platform("", &bundle(), &[("r1", "v1"), ("r2", "v1")]);
    // A Promise update re-runs its requests' workflows after `apply` has returned: serve does it.
    k.start_serve();
    let all_before = repo.files();

    // N -> N-1: `extra` leaves the workflow.
    let head = repo.head().expect("main");
    k.apply_yaml(&yaml(&bundle_with(&["render", "groups"])), &[])
        .assert_ok();
    let extra = |r: &str| {
        format!(
            "{}/extra.yaml",
            resource_dir("worker-1", "default", r, "extra", ROOT_GROUP)
        )
    };
    eventually("the extra files to go", WAIT, || {
        let files = repo.files();
        (!files.contains(&extra("r1")) && !files.contains(&extra("r2"))).then_some(())
    });
    for r in ["r1", "r2"] {
        wait_for(&k, "bundle", r, None, "Reconciled");
    }
    let new = repo.commits_since(Some(&head));
    assert_eq!(new.len(), 2, "{:?}", subjects(&new));
    for r in ["r1", "r2"] {
        let work = format!("bundle-{r}-extra");
        let commit = only_commit(&new, &format!("Delete from: {work}"));
        assert_eq!(
            commit.message,
            message(
                "Delete",
                &work,
                &[
                    ("Promise", "bundle"),
                    ("Resource", &format!("default/{r}")),
                    ("Pipeline", "extra"),
                    ("Destination", "worker-1"),
                    ("Workflow", "resource/configure"),
                ],
            )
        );
        assert_eq!(
            repo.changes(&commit.sha),
            BTreeSet::from([("D".to_string(), extra(r))])
        );
    }
    let expected: BTreeSet<String> = all_before
        .iter()
        .filter(|f| *f != &extra("r1") && *f != &extra("r2"))
        .cloned()
        .collect();
    assert_eq!(repo.files(), expected, "only the extra files went");

    // Rename: `render` becomes `render-v2`.
    let head = repo.head().expect("main");
    let mut renamed = bundle_with(&["render", "groups"]);
    resource_configure(&mut renamed)[0]["metadata"]["name"] = Yaml::from("render-v2");
    k.apply_yaml(&yaml(&renamed), &[]).assert_ok();
    let old_dir = |r: &str| resource_dir("worker-1", "default", r, "render", ROOT_GROUP);
    let new_dir = |r: &str| resource_dir("worker-1", "default", r, "render-v2", ROOT_GROUP);
    eventually("the rename to land", WAIT, || {
        let files = repo.files();
        ["r1", "r2"]
            .iter()
            .all(|r| {
                files.contains(&format!("{}/config.yaml", new_dir(r)))
                    && !files
                        .iter()
                        .any(|f| f.starts_with(&format!("{}/", old_dir(r))))
            })
            .then_some(())
    });
    for r in ["r1", "r2"] {
        wait_for(&k, "bundle", r, None, "Reconciled");
    }
    let new = repo.commits_since(Some(&head));
    assert_eq!(new.len(), 4, "{:?}", subjects(&new));
    for r in ["r1", "r2"] {
        let added = only_commit(&new, &format!("Update from: bundle-{r}-render-v2"));
        let removed = only_commit(&new, &format!("Delete from: bundle-{r}-render"));
        assert!(
            removed.message.contains("Kratix-Pipeline: render\n"),
            "{}",
            removed.message
        );
        let file = |dir: String, f: &str| format!("{dir}/{f}");
        assert_eq!(
            repo.changes(&added.sha),
            BTreeSet::from([
                ("A".to_string(), file(new_dir(r), "config.yaml")),
                ("A".to_string(), file(new_dir(r), "nested/notes.yaml")),
            ])
        );
        assert_eq!(
            repo.changes(&removed.sha),
            BTreeSet::from([
                ("D".to_string(), file(old_dir(r), "config.yaml")),
                ("D".to_string(), file(old_dir(r), "nested/notes.yaml")),
            ])
        );
    }

    // Deleting r1 removes r1's files only, with the delete workflow in the trailers.
    let before_delete = repo.files();
    let head = repo.head().expect("main");
    k.run(&["delete", "bundle", "r1"]).assert_ok();
    assert!(k.get_json("bundle", "r1", None).is_none(), "r1 is gone");
    let new = repo.commits_since(Some(&head));
    let r1_prefix = "worker-1/resources/default/bundle/r1/";
    for pipeline in ["render-v2", "groups"] {
        let work = format!("bundle-r1-{pipeline}");
        let commit = only_commit(&new, &format!("Delete from: {work}"));
        assert_eq!(
            commit.message,
            message(
                "Delete",
                &work,
                &[
                    ("Promise", "bundle"),
                    ("Resource", "default/r1"),
                    ("Pipeline", pipeline),
                    ("Destination", "worker-1"),
                    ("Workflow", "resource/delete"),
                ],
            )
        );
        for (status, path) in repo.changes(&commit.sha) {
            assert_eq!(status, "D", "{path}");
            assert!(
                path.starts_with(&format!("{r1_prefix}{pipeline}/")),
                "{path}"
            );
        }
    }
    assert_eq!(new.len(), 2, "{:?}", subjects(&new));
    let expected: BTreeSet<String> = before_delete
        .into_iter()
        .filter(|f| !f.starts_with(r1_prefix))
        .collect();
    assert!(
        expected.iter().any(|f| f.contains("/r2/")),
        "r2's files are there"
    );
    assert_eq!(repo.files(), expected, "only r1's files went");

    // Deleting the Promise removes the rest of its files (r2's, the promise pipeline's, the
    // static dependencies); the canary files stay.
    k.run(&["delete", "promise", "bundle"]).assert_ok();
    assert_eq!(repo.files(), canaries("worker-1"));
}

fn canaries(dest: &str) -> BTreeSet<String> {
    BTreeSet::from([
        format!("{dest}/dependencies/kratix-canary-namespace.yaml"),
        format!("{dest}/resources/kratix-canary-configmap.yaml"),
    ])
}

#[test]
fn removing_every_pipeline_of_a_workflow_removes_their_files() {
    let (mut k, repo) = platform("", &bundle_with(&["render"]), &[("r1", "v1")]);
    k.start_serve();
    let head = repo.head().expect("main");
    let mut promise = bundle_with(&[]);
    promise["spec"]["workflows"]["promise"]["configure"] = Yaml::Sequence(vec![]);
    k.apply_yaml(&yaml(&promise), &[]).assert_ok();
    let mut expected = canaries("worker-1");
    expected.insert("worker-1/dependencies/bundle/5058f/static/bundle-dependencies.yaml".into());
    eventually_tree(
        &repo,
        "only the canaries and static dependencies are left",
        &expected,
    );
    let new = repo.commits_since(Some(&head));
    let mut got = subjects(&new);
    got.sort();
    assert_eq!(
        got,
        vec![
            "Delete from: bundle-deps".to_string(),
            "Delete from: bundle-r1-render".to_string()
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// 4 and 5. Other people's files and changes to ours

#[test]
fn foreign_files_are_kept_by_all_our_writes_and_deletions() {
    let (mut k, repo) = platform("", &bundle(), &[("r1", "v1")]);
    // A Promise update re-runs its requests' workflows after `apply` has returned: serve does it.
    k.start_serve();
    let render = resource_dir("worker-1", "default", "r1", "render", ROOT_GROUP);
    let extra = resource_dir("worker-1", "default", "r1", "extra", ROOT_GROUP);
    let foreign = [
        (
            format!("{render}/foreign.yaml"),
            "kind: Foreign\nin: render\n",
        ),
        (
            format!("{extra}/foreign.yaml"),
            "kind: Foreign\nin: extra\n",
        ),
        (
            "worker-1/foreign.yaml".to_string(),
            "kind: Foreign\nin: destination\n",
        ),
        (
            "elsewhere/foreign.yaml".to_string(),
            "kind: Foreign\nin: root\n",
        ),
    ];
    let clone = Clone::of(repo.git_dir.to_str().expect("utf-8"));
    for (path, content) in &foreign {
        clone.write(path, content);
    }
    let external = clone.commit_and_push("someone else's files");
    let check = |when: &str| {
        for (path, content) in &foreign {
            assert_eq!(repo.read(path).as_deref(), Some(*content), "{path} {when}");
        }
        assert!(
            repo.is_ancestor(&external, "main"),
            "the external commit is kept {when}"
        );
    };

    // A write that changes files in the directory holding a foreign file.
    k.apply_yaml(&request_yaml("r1", "default", "v2"), &[])
        .assert_ok();
    assert_eq!(
        repo.read(&format!("{render}/config.yaml")).as_deref(),
        Some(emitted("r1", "render", "config.yaml", "v2").as_str())
    );
    check("after an update");

    // A pipeline leaves: its file goes, the foreign file next to it stays.
    k.apply_yaml(&yaml(&bundle_with(&["render", "groups"])), &[])
        .assert_ok();
    eventually("extra.yaml to go", WAIT, || {
        (repo.read(&format!("{extra}/extra.yaml")).is_none()).then_some(())
    });
    check("after a pipeline left");

    // The request goes: all our files go, foreign ones stay.
    k.run(&["delete", "bundle", "r1"]).assert_ok();
    let left: BTreeSet<String> = repo.files_under("worker-1/resources/default/bundle/r1/");
    let foreign_in_r1: BTreeSet<String> = foreign
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| p.starts_with("worker-1/resources/default/bundle/r1/"))
        .collect();
    assert_eq!(left, foreign_in_r1, "only foreign files are left of r1");
    check("after the request was deleted");
}

#[test]
fn deleted_or_edited_files_of_ours_are_restored_on_the_next_write() {
    let (k, repo) = platform("", &bundle_with(&["render"]), &[("r1", "v1")]);
    let render = resource_dir("worker-1", "default", "r1", "render", ROOT_GROUP);
    let config = format!("{render}/config.yaml");
    let notes = format!("{render}/nested/notes.yaml");
    let config_content = repo.read(&config).expect("config.yaml");
    let notes_content = repo.read(&notes).expect("notes.yaml");
    assert_eq!(config_content, emitted("r1", "render", "config.yaml", "v1"));

    let clone = Clone::of(repo.git_dir.to_str().expect("utf-8"));
    clone.git(&["rm", "-q", &config]);
    clone.write(&notes, "edited: by hand\n");
    let external = clone.commit_and_push("drift");
    assert!(repo.read(&config).is_none());

    k.run(&["reconcile", "bundle", "r1"]).assert_ok();
    assert_eq!(
        repo.read(&config).as_deref(),
        Some(config_content.as_str()),
        "deleted file restored"
    );
    assert_eq!(
        repo.read(&notes).as_deref(),
        Some(notes_content.as_str()),
        "edited file restored"
    );
    assert!(
        repo.is_ancestor(&external, "main"),
        "the drift commit stays in history"
    );
    let new = repo.commits_since(Some(&external));
    assert_eq!(
        subjects(&new),
        vec![format!(
            "Update from: {}",
            work_name(&k, "default", "r1", "render")
        )]
    );
    assert_eq!(
        repo.changes(&new[0].sha),
        BTreeSet::from([
            ("A".to_string(), config.clone()),
            ("M".to_string(), notes.clone())
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Concurrent writers

#[test]
fn external_pushes_while_serve_writes_survive_and_nothing_is_force_pushed() {
    let daemon = testkit::GitDaemon::start().expect("git daemon on loopback");
    let bare = daemon.bare_repo("state.git").expect("a bare repository");
    let url = daemon.url("state.git");
    let repo = Repo::new(&bare);
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(
        &setup(&[
            store_yaml(&url, ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
        ]),
        &[],
    )
    .assert_ok();

    let pusher = {
        let url = url.clone();
        std::thread::spawn(move || {
            let clone = Clone::of(&url);
            let mut pushed = Vec::new();
            for i in 0..8 {
                clone.write(&format!("external/file-{i}.yaml"), &format!("n: {i}\n"));
                clone.git(&["add", "-A"]);
                clone.git(&["commit", "-q", "-m", &format!("external {i}")]);
                let mut attempts = 0;
                loop {
                    let push = testkit::hermetic_git_command(&clone.path)
                        .args(["push", "-q", "origin", "main"])
                        .output()
                        .expect("git push runs");
                    if push.status.success() {
                        break;
                    }
                    attempts += 1;
                    assert!(attempts < 60, "the external push never got through");
                    clone.git(&["pull", "-q", "--rebase", "origin", "main"]);
                }
                pushed.push(clone.git(&["rev-parse", "HEAD"]).trim().to_string());
                std::thread::sleep(Duration::from_millis(150));
            }
            pushed
        })
    };
    let requests: Vec<String> = (1..=6).map(|i| format!("r{i}")).collect();
    for r in &requests {
        k.apply_yaml(&request_yaml(r, "default", "v1"), &["--no-wait"])
            .assert_ok();
    }
    let pushed = pusher.join().expect("the pusher finished");
    for r in &requests {
        wait_for(&k, "bundle", r, None, "Reconciled");
    }
    let files = repo.files();
    for sha in &pushed {
        assert!(
            repo.is_ancestor(sha, "main"),
            "external commit {sha} is in main's history"
        );
    }
    for i in 0..8 {
        assert!(
            files.contains(&format!("external/file-{i}.yaml")),
            "external file {i}"
        );
    }
    for r in &requests {
        let config = format!(
            "{}/config.yaml",
            resource_dir("worker-1", "default", r, "render", ROOT_GROUP)
        );
        assert_eq!(
            repo.read(&config),
            Some(emitted(r, "render", "config.yaml", "v1")),
            "{r}"
        );
    }
    let commits = repo.commits();
    for r in &requests {
        only_commit(&commits, &format!("Update from: bundle-{r}-render"));
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Layouts

fn static_dependencies_yaml() -> &'static str {
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bundle-system\n---\napiVersion: v1\ndata:\n  tier: gold\nkind: ConfigMap\nmetadata:\n  name: bundle-settings\n  namespace: bundle-system\n"
}

#[test]
fn nested_by_metadata_paths_are_kratix_byte_for_byte() {
    let k = Kratix::new();
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle()),
            request_yaml("r1", "team-a", "v1"),
        ]),
        &[],
    )
    .assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    let dir = |p: &str, g: &str| resource_dir("worker-1", "team-a", "r1", p, g);
    let expected: Vec<(String, String)> = vec![
        (
            "worker-1/dependencies/kratix-canary-namespace.yaml".into(),
            CANARY_NAMESPACE.into(),
        ),
        (
            "worker-1/resources/kratix-canary-configmap.yaml".into(),
            CANARY_CONFIGMAP.into(),
        ),
        (
            "worker-1/dependencies/bundle/5058f/static/bundle-dependencies.yaml".into(),
            static_dependencies_yaml().into(),
        ),
        (
            "worker-1/dependencies/bundle/deps/5058f/deps.yaml".into(),
            emitted("bundle", "deps", "deps.yaml", "none"),
        ),
        (
            format!("{}/config.yaml", dir("render", ROOT_GROUP)),
            emitted("r1", "render", "config.yaml", "v1"),
        ),
        (
            format!("{}/nested/notes.yaml", dir("render", ROOT_GROUP)),
            emitted("r1", "render", "nested/notes.yaml", "v1"),
        ),
        (
            format!("{}/dest1/cm.yaml", dir("groups", DEST1_GROUP)),
            group_file("r1", "dest1"),
        ),
        (
            format!("{}/dest2/cm.yaml", dir("groups", DEST2_GROUP)),
            group_file("r1", "dest2"),
        ),
        (
            format!("{}/extra.yaml", dir("extra", ROOT_GROUP)),
            emitted("r1", "extra", "extra.yaml", "v1"),
        ),
    ];
    let paths: BTreeSet<String> = expected.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(repo.files(), paths);
    for (path, content) in &expected {
        assert_eq!(repo.read(path).as_deref(), Some(content.as_str()), "{path}");
    }
    // Registration wrote the canaries in one commit of their own.
    let commits = repo.commits();
    let canary = only_commit(&commits, "Update from: kratix-canary");
    assert_eq!(repo.changes(&canary.sha).len(), 2);
}

#[test]
fn aggregated_yaml_puts_every_placement_of_a_destination_in_one_file() {
    let k = Kratix::new();
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", ""),
            destination_yaml(
                "agg",
                "{target: worker-1}",
                "filepath: {mode: aggregatedYAML, filename: catalog.yaml}",
            ),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
            request_yaml("r2", "default", "v1"),
        ]),
        &[],
    )
    .assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    let agg = BTreeSet::from([
        "agg/catalog.yaml".to_string(),
        "agg/kratix-canary-configmap.yaml".to_string(),
        "agg/kratix-canary-namespace.yaml".to_string(),
    ]);
    assert_eq!(repo.files(), agg);
    assert_eq!(
        repo.read("agg/kratix-canary-namespace.yaml").as_deref(),
        Some(CANARY_NAMESPACE)
    );
    assert_eq!(
        repo.read("agg/kratix-canary-configmap.yaml").as_deref(),
        Some(CANARY_CONFIGMAP)
    );
    // Placements sorted by name: bundle-deps, bundle-r1-render, bundle-r2-render, bundle-static-deps.
    let catalog = repo.read("agg/catalog.yaml").expect("catalog.yaml");
    let names = |text: &str| -> Vec<String> {
        serde_yaml::Deserializer::from_str(text)
            .map(|doc| {
                let v = <Yaml as serde::Deserialize>::deserialize(doc).expect("a YAML document");
                let name = v["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                match v["data"]["file"].as_str() {
                    Some(file) => format!("{name}:{file}"),
                    None => name,
                }
            })
            .collect()
    };
    assert_eq!(
        names(&catalog),
        vec![
            "bundle-deps:deps.yaml",
            "r1-render:config.yaml",
            "r1-render:nested/notes.yaml",
            "r2-render:config.yaml",
            "r2-render:nested/notes.yaml",
            "bundle-system",
            "bundle-settings",
        ]
    );
    // Byte for byte: every file of every placement, placements by name, joined by `\n---\n`.
    assert_eq!(
        catalog,
        [
            emitted("bundle", "deps", "deps.yaml", "none"),
            emitted("r1", "render", "config.yaml", "v1"),
            emitted("r1", "render", "nested/notes.yaml", "v1"),
            emitted("r2", "render", "config.yaml", "v1"),
            emitted("r2", "render", "nested/notes.yaml", "v1"),
            static_dependencies_yaml().to_string(),
        ]
        .join("\n---\n")
    );

    // Deleting r1 rewrites the file without r1's documents, in one commit.
    let head = repo.head().expect("main");
    k.run(&["delete", "bundle", "r1"]).assert_ok();
    assert_eq!(
        subjects(&repo.commits_since(Some(&head))),
        vec!["Update from: bundle-r1-render".to_string()]
    );
    let catalog = repo.read("agg/catalog.yaml").expect("catalog.yaml");
    assert_eq!(
        names(&catalog),
        vec![
            "bundle-deps:deps.yaml",
            "r2-render:config.yaml",
            "r2-render:nested/notes.yaml",
            "bundle-system",
            "bundle-settings",
        ]
    );
    assert_eq!(repo.files(), agg);

    // Without a filename the file is aggregated.yaml; dependencies go to the new Destination too.
    k.apply_yaml(
        &destination_yaml(
            "agg-default",
            "{target: worker-1}",
            "filepath: {mode: aggregatedYAML}",
        ),
        &[],
    )
    .assert_ok();
    let file = eventually(
        "agg-default/aggregated.yaml with the dependencies",
        WAIT,
        || {
            repo.read("agg-default/aggregated.yaml").filter(|t| {
                names(t).contains(&"bundle-settings".to_string())
                    && names(t).contains(&"bundle-deps:deps.yaml".to_string())
            })
        },
    );
    assert!(
        !file.contains("r2-render"),
        "r2 stays where it was placed:\n{file}"
    );
    assert_eq!(
        repo.files_under("agg-default/"),
        BTreeSet::from([
            "agg-default/aggregated.yaml".to_string(),
            "agg-default/kratix-canary-configmap.yaml".to_string(),
            "agg-default/kratix-canary-namespace.yaml".to_string(),
        ])
    );
}

#[test]
fn filepath_mode_none_writes_flat_files_and_a_state_file_per_placement() {
    let mut promise = bundle();
    *resource_configure(&mut promise) = vec![pipeline(
        "render",
        &["sh", "__SCRIPTS__/emit.sh", "render", "cm-%name%.yaml"],
    )];
    let k = Kratix::new();
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", ""),
            destination_yaml("flat", "{target: worker-1}", "filepath: {mode: none}"),
            yaml(&promise),
            request_yaml("r1", "default", "v1"),
            request_yaml("r2", "default", "v1"),
        ]),
        &[],
    )
    .assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    let state = |ns: &str, wp: &str| format!("flat/.kratix/{ns}-{wp}.yaml");
    let wp = |work: &str| format!("{work}.flat-{ROOT_GROUP}");
    let expected: Vec<(String, String)> = vec![
        (
            "flat/kratix-canary-namespace.yaml".into(),
            CANARY_NAMESPACE.into(),
        ),
        (
            "flat/kratix-canary-configmap.yaml".into(),
            CANARY_CONFIGMAP.into(),
        ),
        (
            "flat/static/bundle-dependencies.yaml".into(),
            static_dependencies_yaml().into(),
        ),
        (
            "flat/deps.yaml".into(),
            emitted("bundle", "deps", "deps.yaml", "none"),
        ),
        (
            "flat/cm-r1.yaml".into(),
            emitted("r1", "render", "cm-r1.yaml", "v1"),
        ),
        (
            "flat/cm-r2.yaml".into(),
            emitted("r2", "render", "cm-r2.yaml", "v1"),
        ),
        (
            state("kratix-platform-system", &wp("bundle-static-deps")),
            "files:\n- flat/static/bundle-dependencies.yaml\n".into(),
        ),
        (
            state("kratix-platform-system", &wp("bundle-deps")),
            "files:\n- flat/deps.yaml\n".into(),
        ),
        (
            state("default", &wp("bundle-r1-render")),
            "files:\n- flat/cm-r1.yaml\n".into(),
        ),
        (
            state("default", &wp("bundle-r2-render")),
            "files:\n- flat/cm-r2.yaml\n".into(),
        ),
    ];
    let paths: BTreeSet<String> = expected.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(repo.files(), paths);
    for (path, content) in &expected {
        assert_eq!(repo.read(path).as_deref(), Some(content.as_str()), "{path}");
    }
    // Each placement's first write is one commit with its file and its state file.
    let commits = repo.commits();
    let r1 = only_commit(&commits, "Update from: bundle-r1-render");
    assert_eq!(
        repo.changes(&r1.sha),
        BTreeSet::from([
            ("A".to_string(), "flat/cm-r1.yaml".to_string()),
            ("A".to_string(), state("default", &wp("bundle-r1-render"))),
        ])
    );

    // Deleting r1 removes its file and its state file in one commit; r2's stay.
    let head = repo.head().expect("main");
    k.run(&["delete", "bundle", "r1"]).assert_ok();
    let new = repo.commits_since(Some(&head));
    assert_eq!(
        subjects(&new),
        vec!["Delete from: bundle-r1-render".to_string()]
    );
    assert_eq!(
        repo.changes(&new[0].sha),
        BTreeSet::from([
            ("D".to_string(), "flat/cm-r1.yaml".to_string()),
            ("D".to_string(), state("default", &wp("bundle-r1-render"))),
        ])
    );
    assert!(repo.read("flat/cm-r2.yaml").is_some());
}

#[test]
fn store_and_destination_paths_prefix_every_file() {
    let k = Kratix::new();
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", "path: /platform/"),
            destination_yaml("worker-1", "{target: worker-1}", "")
                .replace("path: worker-1", "path: edge/worker-1"),
            destination_yaml("root", "{target: root}", "").replace("path: root", "path: ."),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &[],
    )
    .assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    let files = repo.files();
    let expected: BTreeSet<String> = [
        "platform/edge/worker-1/dependencies/kratix-canary-namespace.yaml",
        "platform/edge/worker-1/resources/kratix-canary-configmap.yaml",
        "platform/edge/worker-1/dependencies/bundle/5058f/static/bundle-dependencies.yaml",
        "platform/edge/worker-1/dependencies/bundle/deps/5058f/deps.yaml",
        "platform/dependencies/kratix-canary-namespace.yaml",
        "platform/resources/kratix-canary-configmap.yaml",
        "platform/dependencies/bundle/5058f/static/bundle-dependencies.yaml",
        "platform/dependencies/bundle/deps/5058f/deps.yaml",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    let request_files: BTreeSet<String> = files.difference(&expected).cloned().collect();
    assert!(expected.is_subset(&files), "{files:#?}");
    // The request went to exactly one of the two Destinations.
    let on_worker: BTreeSet<String> = [
        "platform/edge/worker-1/resources/default/bundle/r1/render/5058f/config.yaml",
        "platform/edge/worker-1/resources/default/bundle/r1/render/5058f/nested/notes.yaml",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    let on_root: BTreeSet<String> = [
        "platform/resources/default/bundle/r1/render/5058f/config.yaml",
        "platform/resources/default/bundle/r1/render/5058f/nested/notes.yaml",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert!(
        request_files == on_worker || request_files == on_root,
        "{request_files:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Scheduling

/// Sha256-based rendezvous score the scheduler uses today; only used to pick a Destination name
/// that would win a fresh choice, so that the stickiness check below can fail. If the
/// scheduler's choice changes, the check still holds, only less sharply.
fn would_win(work: &str, group_id: &str, a: &str, b: &str) -> bool {
    use sha2::{Digest, Sha256};
    let score = |d: &str| {
        let mut h = Sha256::new();
        for part in [work, group_id, d] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        h.finalize().to_vec()
    };
    score(a) > score(b)
}

#[test]
fn scheduling_follows_labels_and_selectors_and_resource_placements_stay_put() {
    let mut promise = bundle();
    promise["spec"]["destinationSelectors"] =
        serde_yaml::from_str("[{matchLabels: {env: dev}}]").expect("yaml");
    *resource_configure(&mut promise) = vec![
        resource_configure(&mut bundle())[0].clone(),
        pipeline(
            "special",
            &["sh", "__SCRIPTS__/groups.sh", "special=env:special"],
        ),
    ];
    let plain =
        std::fs::read_to_string(fixtures().join("git_writer/plain-promise.yaml")).expect("fixture");
    let mut k = Kratix::new();
    k.apply_yaml(
        &setup(&[
            store_yaml("state.git", ""),
            // `cleanup: all`: deregistering one of these below must remove its files.
            destination_yaml("dev-a", "{env: dev}", "cleanup: all"),
            destination_yaml("prod-a", "{env: prod}", ""),
            destination_yaml(
                "strict",
                "{env: dev, zone: z1}",
                "strictMatchLabels: true\ncleanup: all",
            ),
            yaml(&promise),
            plain,
        ]),
        &[],
    )
    .assert_ok();
    let repo = Repo::new(k.home().join("state.git"));
    let static_deps =
        |d: &str| format!("{d}/dependencies/bundle/5058f/static/bundle-dependencies.yaml");
    let plain_deps =
        |d: &str| format!("{d}/dependencies/plain/5058f/static/plain-dependencies.yaml");
    let files = repo.files();
    // The Promise selects env=dev: its dependencies go to both dev Destinations, not to prod.
    assert!(
        files.contains(&static_deps("dev-a")) && files.contains(&static_deps("strict")),
        "{files:#?}"
    );
    assert!(
        !files
            .iter()
            .any(|f| f.starts_with("prod-a/dependencies/bundle/")),
        "{files:#?}"
    );
    // With no selectors at all, strictMatchLabels keeps `strict` out.
    assert!(
        files.contains(&plain_deps("dev-a")) && files.contains(&plain_deps("prod-a")),
        "{files:#?}"
    );
    assert!(!files.contains(&plain_deps("strict")), "{files:#?}");

    // r1 cannot settle while a group is unscheduled, so serve reconciles in the background.
    k.start_serve();
    // r1: `render` goes to exactly one env=dev Destination; `special` matches nothing yet.
    k.apply_yaml(&request_yaml("r1", "default", "v1"), &["--no-wait"])
        .assert_ok();
    let special_work = eventually("the special Work to be unscheduled", WAIT, || {
        k.list_json(
            "works",
            &["-n", "default", "-l", "kratix.io/pipeline-name=special"],
        )
        .into_iter()
        .find(|w| condition_is(w, "ScheduleSucceeded", "False"))
    });
    let scheduled = condition(&special_work, "ScheduleSucceeded").expect("ScheduleSucceeded");
    assert_eq!(scheduled["reason"], "UnscheduledWorkloads");
    let special_id = &special_work["spec"]["workloadGroups"][0]["id"];
    assert!(
        scheduled["message"]
            .as_str()
            .unwrap_or_default()
            .contains(special_id.as_str().expect("id")),
        "the message names the group: {scheduled}"
    );
    let r1 = k.get_json("bundle", "r1", None).expect("r1");
    assert!(
        !condition_is(&r1, "Reconciled", "True"),
        "r1 is not reconciled while a group is unscheduled: {r1}"
    );
    let render_files =
        |d: &str| repo.files_under(&format!("{d}/resources/default/bundle/r1/render/"));
    let render_dest = eventually("r1's render files", WAIT, || {
        ["dev-a", "strict"]
            .into_iter()
            .find(|d| !render_files(d).is_empty())
    });
    let other = if render_dest == "dev-a" {
        "strict"
    } else {
        "dev-a"
    };
    assert!(render_files(other).is_empty() && render_files("prod-a").is_empty());

    // A Destination for the special group appears: the group is placed there.
    k.apply_yaml(&destination_yaml("special-1", "{env: special}", ""), &[])
        .assert_ok();
    wait_for(&k, "bundle", "r1", None, "Reconciled");
    let special_dir = format!(
        "special-1/resources/default/bundle/r1/special/{}/special/cm.yaml",
        &special_id.as_str().expect("id")[..5]
    );
    assert_eq!(repo.read(&special_dir), Some(group_file("r1", "special")));
    let r1 = k.get_json("bundle", "r1", None).expect("r1");
    assert!(condition_is(&r1, "WorksSucceeded", "True"), "{r1}");

    // Another env=dev Destination, named to win a fresh choice: dependencies go there too, the
    // request's placement stays where it is.
    let render_work = work_name(&k, "default", "r1", "render");
    let root_id = "5058f1af8388633f609cadb75a75dc9d";
    let newcomer = (0..1000)
        .map(|i| format!("dev-{i}"))
        .find(|d| would_win(&render_work, root_id, d, render_dest))
        .expect("some name wins");
    k.apply_yaml(&destination_yaml(&newcomer, "{env: dev}", ""), &[])
        .assert_ok();
    eventually("dependencies on the new Destination", WAIT, || {
        repo.read(&static_deps(&newcomer)).map(|_| ())
    });
    k.run(&["reconcile", "bundle", "r1"]).assert_ok();
    assert!(
        !render_files(render_dest).is_empty(),
        "r1 stays on {render_dest}"
    );
    assert!(
        render_files(&newcomer).is_empty(),
        "r1 did not move to {newcomer}"
    );
    let placements = k.list_json(
        "workplacements",
        &[
            "-n",
            "default",
            "-l",
            &format!("kratix.io/work={render_work}"),
        ],
    );
    assert_eq!(placements.len(), 1, "{placements:?}");
    assert_eq!(placements[0]["spec"]["targetDestinationName"], render_dest);

    // Deregistering the request's Destination removes every file of its placements.
    let head = repo.head().expect("main");
    k.run(&["delete", "destination", render_dest]).assert_ok();
    assert!(k.get_json("destination", render_dest, None).is_none());
    let left = repo.files_under(&format!("{render_dest}/"));
    assert!(
        left.is_empty(),
        "nothing left under {render_dest}/: {left:#?}"
    );
    let new = repo.commits_since(Some(&head));
    let deletes: Vec<&Commit> = new
        .iter()
        .filter(|c| {
            c.message
                .contains(&format!("Kratix-Destination: {render_dest}\n"))
                || c.message
                    .ends_with(&format!("Kratix-Destination: {render_dest}"))
        })
        .collect();
    assert!(!deletes.is_empty(), "{:?}", subjects(&new));
    for commit in &deletes {
        assert!(
            commit.subject().starts_with("Delete from: "),
            "{}",
            commit.message
        );
    }
    for work in [render_work.as_str(), "bundle-static-deps", "bundle-deps"] {
        assert!(
            deletes
                .iter()
                .any(|c| c.subject() == format!("Delete from: {work}")),
            "{work} removed from {render_dest}: {:?}",
            subjects(&new)
        );
    }
    // Files elsewhere are untouched.
    assert!(repo.read(&plain_deps("prod-a")).is_some());
    assert!(repo.read(&special_dir).is_some());
    // With its Destination gone, r1's group is placed on one of the env=dev Destinations left.
    let moved_to = eventually("r1 to be placed again", WAIT, || {
        let remaining = [other, newcomer.as_str()];
        let found: Vec<&str> = remaining
            .into_iter()
            .filter(|d| !render_files(d).is_empty())
            .collect();
        (found.len() == 1).then(|| found[0].to_string())
    });
    wait_for(&k, "bundle", "r1", None, "Reconciled");
    assert_eq!(render_files(&moved_to).len(), 2, "{moved_to}");
}

// ---------------------------------------------------------------------------------------------
// 9. Many files

#[test]
fn three_thousand_files_of_one_pipeline_land_in_one_commit() {
    let mut promise = bundle();
    *resource_configure(&mut promise) =
        vec![pipeline("many", &["sh", "__SCRIPTS__/many.sh", "3000"])];
    let (k, repo) = platform("", &promise, &[("r1", "v1")]);
    let work = work_name(&k, "default", "r1", "many");
    let commit = only_commit(&repo.commits(), &format!("Update from: {work}")).clone();
    let changes = repo.changes(&commit.sha);
    assert_eq!(changes.len(), 3000);
    let dir = resource_dir("worker-1", "default", "r1", "many", ROOT_GROUP);
    assert!(changes
        .iter()
        .all(|(s, p)| s == "A" && p.starts_with(&format!("{dir}/many/file-"))));
    let stat = repo.git(&["show", "--stat", "--format=", &commit.sha]);
    assert!(stat.contains("3000 files changed"), "{stat}");
    assert_eq!(
        repo.read(&format!("{dir}/many/file-2999.yaml")).as_deref(),
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: file-2999\ndata:\n  index: \"2999\"\n")
    );
}

// ---------------------------------------------------------------------------------------------
// 10. Statuses

#[test]
fn statuses_name_the_commits_that_hold_each_pipelines_files() {
    let (k, repo) = platform("", &bundle(), &[("r1", "v1")]);
    let commits = repo.commits();
    let r1 = k.get_json("bundle", "r1", None).expect("r1");
    for type_ in ["WorksSucceeded", "Reconciled", "ConfigureWorkflowCompleted"] {
        assert!(condition_is(&r1, type_, "True"), "{type_}: {r1}");
    }
    let pipelines = r1["status"]["pipelines"]
        .as_array()
        .expect("status.pipelines");
    let names: Vec<&str> = pipelines
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, vec!["render", "groups", "extra"]);
    for entry in pipelines {
        let pipeline = entry["name"].as_str().expect("name");
        let work = work_name(&k, "default", "r1", pipeline);
        let commit = only_commit(&commits, &format!("Update from: {work}"));
        let destinations = entry["destinations"].as_array().expect("destinations");
        // One entry per destination and commit, even for two workload groups on one destination.
        assert_eq!(destinations.len(), 1, "{entry}");
        for d in destinations {
            assert_eq!(d["destination"], "worker-1", "{entry}");
            assert_eq!(d["version"], commit.sha.as_str(), "{pipeline}: {entry}");
        }

        let work_obj = k.get_json("works", &work, Some("default")).expect("work");
        assert!(condition_is(&work_obj, "Ready", "True"), "{work_obj}");
        assert!(
            condition_is(&work_obj, "ScheduleSucceeded", "True"),
            "{work_obj}"
        );
        let placements = k.list_json(
            "workplacements",
            &["-n", "default", "-l", &format!("kratix.io/work={work}")],
        );
        assert_eq!(placements.len(), if pipeline == "groups" { 2 } else { 1 });
        for wp in &placements {
            assert!(condition_is(wp, "Ready", "True"), "{wp}");
            assert!(condition_is(wp, "WriteSucceeded", "True"), "{wp}");
            assert_eq!(wp["status"]["versionID"], commit.sha.as_str(), "{wp}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 11. Unreachable stores and wrong credentials

/// `git daemon` on a port chosen before it starts, so a store can point at it while it is down.
struct DaemonOnPort {
    child: Child,
}

impl DaemonOnPort {
    fn start(root: &Path, port: u16) -> Self {
        let child = testkit::hermetic_git_command(root)
            .args([
                "daemon",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", root.display()),
                "--export-all",
                "--enable=receive-pack",
                "--informative-errors",
            ])
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // `git daemon` runs `git-daemon` as a child: its own process group lets Drop stop both.
            .process_group(0)
            .spawn()
            .expect("git daemon starts");
        eventually("git daemon to listen", WAIT, || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(|_| ())
        });
        Self { child }
    }
}

impl Drop for DaemonOnPort {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Checks the store and its Destination are not Ready, and the request's placement is not
/// written, while the store cannot be used; returns the store's Ready condition.
fn assert_blocked(k: &Kratix) -> Value {
    let store = eventually_object(
        k,
        "gitstatestore",
        "default",
        None,
        "the store to be not ready",
        |s| condition_is(s, "Ready", "False"),
    );
    eventually_object(
        k,
        "destination",
        "worker-1",
        None,
        "the destination to be not ready",
        |d| condition_is(d, "Ready", "False"),
    );
    let wp = eventually("a failing placement", WAIT, || {
        k.list_json("workplacements", &["-n", "default"])
            .into_iter()
            .find(|wp| condition_is(wp, "WriteSucceeded", "False"))
    });
    assert!(condition_is(&wp, "Ready", "False"), "{wp}");
    let work = k
        .get_json(
            "works",
            wp["metadata"]["labels"]["kratix.io/work"]
                .as_str()
                .expect("work label"),
            Some("default"),
        )
        .expect("work");
    assert!(!condition_is(&work, "Ready", "True"), "{work}");
    let r1 = k.get_json("bundle", "r1", None).expect("r1");
    assert!(!condition_is(&r1, "WorksSucceeded", "True"), "{r1}");
    assert!(!condition_is(&r1, "Reconciled", "True"), "{r1}");
    condition(&store, "Ready").expect("Ready").clone()
}

fn assert_recovered(k: &Kratix, repo: &Repo) {
    eventually_object(
        k,
        "gitstatestore",
        "default",
        None,
        "the store to be ready",
        |s| condition_is(s, "Ready", "True"),
    );
    eventually_object(
        k,
        "destination",
        "worker-1",
        None,
        "the destination to be ready",
        |d| condition_is(d, "Ready", "True"),
    );
    wait_for(k, "bundle", "r1", None, "Reconciled");
    let config = format!(
        "{}/config.yaml",
        resource_dir("worker-1", "default", "r1", "render", ROOT_GROUP)
    );
    assert_eq!(
        repo.read(&config),
        Some(emitted("r1", "render", "config.yaml", "v1"))
    );
    assert!(repo
        .read("worker-1/dependencies/kratix-canary-namespace.yaml")
        .is_some());
    // The Promise's own placements were pending too; nothing waits on them but this.
    eventually("the promise's dependencies to land", WAIT, || {
        repo.read("worker-1/dependencies/bundle/deps/5058f/deps.yaml")
            .and(repo.read("worker-1/dependencies/bundle/5058f/static/bundle-dependencies.yaml"))
    });
    let commits = repo.commits();
    only_commit(&commits, "Update from: bundle-r1-render");
}

#[test]
fn an_unreachable_store_is_not_ready_and_recovers_when_the_server_starts() {
    let root = tempfile::tempdir().expect("folder");
    let bare = root.path().join("state.git");
    testkit::init_bare(&bare).expect("bare repository");
    let port = testkit::closed_port().expect("a free port");
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(
        &setup(&[
            store_yaml(&format!("git://127.0.0.1:{port}/state.git"), ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &["--no-wait"],
    )
    .assert_ok();
    let ready = assert_blocked(&k);
    assert!(
        !ready["reason"].as_str().unwrap_or_default().is_empty(),
        "{ready}"
    );
    assert!(
        ready["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("127.0.0.1:{port}")),
        "the message says what is unreachable: {ready}"
    );

    let _daemon = DaemonOnPort::start(root.path(), port);
    assert_recovered(&k, &Repo::new(&bare));
}

#[test]
fn wrong_credentials_are_not_ready_and_recover_when_the_secret_is_fixed() {
    let password = "s3cret-right-password";
    let wrong = "wrong-password-xyz";
    let server = testkit::GitHttp::start("kratix", password).expect("git over http on loopback");
    let bare = server.bare_repo("state.git").expect("bare repository");
    let secret = |p: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-creds\n  namespace: default\nstringData:\n  username: kratix\n  password: {p}\n")
    };
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(
        &setup(&[
            secret(wrong),
            store_yaml(
                &server.url("state.git"),
                "secretRef: {name: git-creds, namespace: default}",
            ),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &["--no-wait"],
    )
    .assert_ok();
    let ready = assert_blocked(&k);
    assert!(
        !ready["reason"].as_str().unwrap_or_default().is_empty(),
        "{ready}"
    );
    // Secrets never show in statuses.
    for (kind, name, ns) in [
        ("gitstatestore", "default", None),
        ("destination", "worker-1", None),
        ("bundle", "r1", None),
    ] {
        let obj = k.get_json(kind, name, ns).expect("object").to_string();
        assert!(
            !obj.contains(wrong) && !obj.contains(password),
            "{kind} {name} shows a password: {obj}"
        );
    }
    for wp in k.list_json("workplacements", &["-n", "default"]) {
        assert!(!wp.to_string().contains(wrong), "{wp}");
    }

    k.apply_yaml(&secret(password), &["--no-wait"]).assert_ok();
    assert_recovered(&k, &Repo::new(&bare));
}

/// A store that goes away after it was ready shows as not ready, with its Destination, and both
/// come back by themselves with the server.
#[test]
fn a_store_that_goes_down_later_is_not_ready_until_it_is_back() {
    let root = tempfile::tempdir().expect("folder");
    let bare = root.path().join("state.git");
    testkit::init_bare(&bare).expect("bare repository");
    let port = testkit::closed_port().expect("a free port");
    let daemon = DaemonOnPort::start(root.path(), port);
    let mut k = Kratix::new().with_env("KRATIX_STORE_RECHECK", "1");
    k.start_serve();
    k.apply_yaml(
        &setup(&[
            store_yaml(&format!("git://127.0.0.1:{port}/state.git"), ""),
            destination_yaml("worker-1", "{target: worker-1}", ""),
            yaml(&bundle_with(&["render"])),
            request_yaml("r1", "default", "v1"),
        ]),
        &[],
    )
    .assert_ok();

    drop(daemon);
    eventually_object(
        &k,
        "gitstatestore",
        "default",
        None,
        "the store to be not ready",
        |s| condition_is(s, "Ready", "False"),
    );
    eventually_object(
        &k,
        "destination",
        "worker-1",
        None,
        "the destination to be not ready",
        |d| condition_is(d, "Ready", "False"),
    );

    let _daemon = DaemonOnPort::start(root.path(), port);
    assert_recovered(&k, &Repo::new(&bare));
}
