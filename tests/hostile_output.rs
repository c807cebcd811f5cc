//! Hostile pipeline output, end to end through the `kratix-rs` binary: links, special files,
//! bad names, too many files or bytes, broken metadata files. Each time the pipeline fails with
//! a message naming the file, in the request's condition and in `get pipelineruns`, and the Git
//! state store keeps exactly what the last good run wrote: same commit, same tree.
//!
//! One request is rendered good first, then switched (through `spec.mode`) to each hostile
//! output in turn. Every run renders its mode into a good file too, so anything written from a
//! hostile run would change the tree.

mod support;

use std::path::PathBuf;

use serde_json::{json, Value};
use support::{condition, git_destination_yaml, Kratix};
use testkit::git;

const KIND: &str = "hostiles";
const REQUEST: &str = "r1";
const PIPELINE: &str = "render";

/// A hostile mode of `fixtures/hostile/hostile.sh` and what the failure message must contain.
type Case = (&'static str, &'static str);

/// Hostile entries of the output folder, possible in the sandbox as well as in a process.
const OUTPUT_ENTRIES: &[Case] = &[
    ("symlink-file", "output file link.yaml is a symbolic link"),
    ("symlink-dir", "output file app/etc-link is a symbolic link"),
    ("symlink-loop", "output file self.yaml is a symbolic link"),
    (
        "symlink-dangling",
        "output file dangling.yaml is a symbolic link",
    ),
    ("symlink-parent", "output file app/up is a symbolic link"),
    (
        "symlink-absolute",
        "output file root-link is a symbolic link",
    ),
    (
        "fifo",
        "output file queue.yaml is a fifo, not a regular file",
    ),
    (
        "socket",
        "output file app/listen.sock is a socket, not a regular file",
    ),
    (
        "newline-name",
        r#"output file "two\nlines.yaml" has a control character in its name"#,
    ),
    (
        "escape-name",
        r#"output file "\u{1b}[31mred.yaml" has a control character in its name"#,
    ),
    (
        "git-dir",
        "output path app/.git has a .git element, which no Git repository can hold",
    ),
    ("git-dir-upper", "output path .GIT has a .git element"),
    (
        "deep-folders",
        "output path d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/... is 1025 bytes long, more than the 1024 allowed",
    ),
    (
        "non-utf8-name",
        "output file caf\u{fffd}.yaml has a name that is not UTF-8",
    ),
];

/// What only an unconfined process can do: make devices, replace its own folders.
const PROCESS_ONLY: &[Case] = &[
    (
        "char-device",
        "output file null.yaml is a character device, not a regular file",
    ),
    (
        "block-device",
        "output file app/disk.img is a block device, not a regular file",
    ),
    (
        "output-is-link",
        "the output folder is a symbolic link, not a folder",
    ),
    (
        "metadata-is-link",
        "the metadata folder is a symbolic link, not a folder",
    ),
];

/// Beyond the default limits.
const TOO_MUCH: &[Case] = &[
    (
        "many-files",
        "output has more than 10000 files and folders (KRATIX_OUTPUT_MAX_FILES=10000); the limit was exceeded at many/",
    ),
    (
        "big-file",
        "output holds more than 67108864 bytes (KRATIX_OUTPUT_MAX_BYTES=67108864); the limit was exceeded at app/big.yaml (1073741824 bytes)",
    ),
];

/// Broken metadata files.
const METADATA: &[Case] = &[
    (
        "selectors-invalid",
        "metadata/destination-selectors.yaml is not valid",
    ),
    (
        "selectors-parent",
        r#"metadata/destination-selectors.yaml: entry 0: directory "../escape" must be a single folder name"#,
    ),
    (
        "selectors-absolute",
        r#"metadata/destination-selectors.yaml: entry 0: directory "/etc" must be a single folder name"#,
    ),
    (
        "selectors-no-labels",
        "metadata/destination-selectors.yaml: entry 0 has no matchLabels",
    ),
    (
        "selectors-link",
        "metadata/destination-selectors.yaml is a symbolic link, not a regular file",
    ),
    (
        "status-not-mapping",
        "metadata/status.yaml must be a mapping",
    ),
    ("status-invalid", "metadata/status.yaml is not valid"),
    (
        "status-reserved",
        r#"metadata/status.yaml must not set the reserved top-level key "kratix""#,
    ),
    ("status-aliases", "metadata/status.yaml is not valid"),
    (
        "status-huge",
        "metadata/status.yaml is larger than 1048576 bytes",
    ),
    (
        "status-fifo",
        "metadata/status.yaml is a fifo, not a regular file",
    ),
    (
        "status-link",
        "metadata/status.yaml is a symbolic link, not a regular file",
    ),
    (
        "control-invalid",
        "metadata/workflow-control.yaml is not valid",
    ),
    (
        "control-retry",
        r#"metadata/workflow-control.yaml: retryAfter "soon" is not a duration"#,
    ),
    (
        "control-non-utf8",
        "cannot read metadata/workflow-control.yaml",
    ),
    (
        "control-folder",
        "metadata/workflow-control.yaml is a folder, not a regular file",
    ),
];

fn script() -> PathBuf {
    support::sandbox_fixtures("hostile").join("hostile.sh")
}

/// The Promise `hostile`: kind `Hostile` with `spec.mode`, one configure pipeline running the
/// fixture script.
fn promise() -> String {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": "hostile"},
        "spec": {
            "api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "hostiles.test.kratix.io"},
                "spec": {
                    "group": "test.kratix.io",
                    "names": {"kind": "Hostile", "plural": "hostiles", "singular": "hostile"},
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "mode": {"type": "string"},
                            }},
                        }}},
                    }],
                },
            },
            "workflows": {"resource": {"configure": [{
                "apiVersion": "platform.kratix.io/v1alpha1",
                "kind": "Pipeline",
                "metadata": {"name": PIPELINE},
                "spec": {"containers": [{
                    "name": "main",
                    "image": "local/sh",
                    "command": ["sh", script().display().to_string()],
                }]},
            }]}},
        },
    })
    .to_string()
}

fn request(mode: &str) -> String {
    json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Hostile",
        "metadata": {"name": REQUEST, "namespace": "default"},
        "spec": {"mode": mode},
    })
    .to_string()
}

/// A home with a Git state store, a Destination and the Promise.
fn platform(isolation: &str, extra_env: &[(&str, &str)]) -> Kratix {
    let mut k = Kratix::new().with_env("KRATIX_ISOLATION", isolation);
    for (key, value) in extra_env {
        k = k.with_env(key, value);
    }
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    k.apply_yaml(&promise(), &["--timeout", "60"]).assert_ok();
    k
}

/// The store's `main`: its commit, its commit count and its whole tree with blob ids.
#[derive(Debug, PartialEq, Eq)]
struct StoreState {
    head: String,
    commits: String,
    tree: String,
}

fn store_state(k: &Kratix) -> StoreState {
    let repo = k.home().join("state-store.git");
    let repo = repo.to_str().expect("UTF-8 path");
    let run = |args: &[&str]| {
        let mut all = vec!["--git-dir", repo];
        all.extend_from_slice(args);
        git(&all, k.home())
    };
    StoreState {
        head: run(&["rev-parse", "main"]),
        commits: run(&["rev-list", "--count", "main"]),
        tree: run(&["ls-tree", "-r", "main"]),
    }
}

/// The newest PipelineRun of the request.
fn last_run(k: &Kratix) -> Value {
    let selector = format!("kratix.io/resource-name={REQUEST}");
    k.list_json("pipelineruns", &["-A", "-l", &selector])
        .into_iter()
        .max_by_key(|r| r.pointer("/spec/sequence").and_then(Value::as_i64))
        .expect("a PipelineRun")
}

/// Renders the request good and returns the store as that run left it.
#[track_caller]
fn render_good(k: &Kratix) -> StoreState {
    k.apply_yaml(&request("good"), &["--timeout", "60"])
        .assert_ok();
    let state = store_state(k);
    let config = state
        .tree
        .lines()
        .find(|l| l.ends_with("/app/config.yaml"))
        .unwrap_or_else(|| panic!("the good run wrote its files: {state:#?}"));
    assert!(
        config.contains(&format!(
            "worker-1/resources/default/hostile/{REQUEST}/{PIPELINE}/"
        )),
        "{config}"
    );
    state
}

/// Switches the request to each hostile mode in turn and checks that each fails naming its
/// file and leaves the store as the good run left it.
#[track_caller]
fn refuse_each(k: &Kratix, cases: &[Case]) {
    let good = render_good(k);
    for (mode, want) in cases {
        let applied = k.apply_yaml(&request(mode), &["--timeout", "120"]);
        applied.assert_failed();
        assert!(
            applied.stderr.contains(PIPELINE),
            "{mode}: apply names the pipeline: {}",
            applied.stderr
        );
        let obj = k
            .get_json(KIND, REQUEST, Some("default"))
            .expect("the request exists");
        assert_eq!(
            obj["status"]["observedGeneration"], obj["metadata"]["generation"],
            "{mode}: the failure is about the current spec: {obj:#}"
        );
        let completed = condition(&obj, "ConfigureWorkflowCompleted").cloned();
        let message = completed
            .as_ref()
            .and_then(|c| c["message"].as_str())
            .unwrap_or_default();
        assert!(
            message.contains(want),
            "{mode}: the condition names the file ({want}): {completed:#?}"
        );
        let run = last_run(k);
        assert_eq!(run["status"]["phase"], "Failed", "{mode}: {run:#}");
        let run_message = run["status"]["message"].as_str().unwrap_or_default();
        assert!(
            run_message.contains(want),
            "{mode}: the PipelineRun names the file ({want}): {run_message}"
        );
        assert_eq!(
            store_state(k),
            good,
            "{mode}: the store keeps what the good run wrote, with no new commit"
        );
    }
}

#[test]
fn hostile_output_entries_fail_the_pipeline_in_a_process() {
    let k = platform("process", &[]);
    refuse_each(&k, OUTPUT_ENTRIES);
    refuse_each(&k, PROCESS_ONLY);
}

#[test]
fn hostile_output_entries_fail_the_pipeline_in_the_sandbox() {
    let k = platform("sandbox", &[]);
    refuse_each(&k, OUTPUT_ENTRIES);
}

#[test]
fn broken_metadata_files_fail_the_pipeline() {
    let k = platform("process", &[]);
    refuse_each(&k, METADATA);
}

#[test]
fn broken_metadata_files_fail_the_pipeline_in_the_sandbox() {
    let k = platform("sandbox", &[]);
    let in_sandbox: Vec<Case> = METADATA
        .iter()
        .copied()
        .filter(|(mode, _)| mode.ends_with("-link") || mode.ends_with("-fifo"))
        .collect();
    refuse_each(&k, &in_sandbox);
}

#[test]
fn a_hundred_thousand_files_or_a_gigabyte_are_refused_at_the_default_limits() {
    let k = platform("auto", &[]);
    refuse_each(&k, TOO_MUCH);
}

#[test]
fn the_limits_follow_their_variables() {
    // The good output is 3 entries (app/, app/config.yaml, namespace.yaml) of under 120 bytes.
    let k = platform(
        "process",
        &[
            ("KRATIX_OUTPUT_MAX_FILES", "4"),
            ("KRATIX_OUTPUT_MAX_BYTES", "1000"),
        ],
    );
    refuse_each(
        &k,
        &[
            (
                "two-more-files",
                "output has more than 4 files and folders (KRATIX_OUTPUT_MAX_FILES=4); the limit was exceeded at ",
            ),
            (
                "more-bytes",
                "output holds more than 1000 bytes (KRATIX_OUTPUT_MAX_BYTES=1000); the limit was exceeded at app/padding.yaml (2000 bytes)",
            ),
        ],
    );
}

#[test]
fn an_invalid_limit_fails_runs_naming_the_variable() {
    let k = platform("process", &[("KRATIX_OUTPUT_MAX_BYTES", "64MiB")]);
    let applied = k.apply_yaml(&request("good"), &["--timeout", "60"]);
    applied.assert_failed();
    let run = last_run(&k);
    let message = run["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"KRATIX_OUTPUT_MAX_BYTES="64MiB" is not a positive whole number"#),
        "{run:#}"
    );
    let repo = k.home().join("state-store.git");
    let files = git(
        &[
            "--git-dir",
            repo.to_str().expect("UTF-8"),
            "ls-tree",
            "-r",
            "--name-only",
            "main",
        ],
        k.home(),
    );
    assert!(!files.contains("/hostile/"), "nothing is written: {files}");
}
