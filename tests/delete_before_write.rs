//! Deleting what never managed to write: a request, a Promise and a Destination whose state
//! store is unreachable (a Git server down on its port, or one that accepts connections and
//! never answers) delete without waiting for it, in every filepath mode; nothing of them is
//! left in the control plane, and the store, once it comes back, holds nothing of theirs.
//! Kratix fixed the same deadlock for mode `none` (syntasso/kratix#887).

mod support;

use std::time::Duration;

use support::faults::BareRepo;
use support::{condition_is, eventually, fixtures, Kratix};
use testkit::{RestartableGitDaemon, SilentServer};

/// Generous: pipelines run in a sandbox on a busy two-core machine.
const WAIT: Duration = Duration::from_secs(300);
/// What `delete` may take: the deletions wait for no store, and still run pipelines of none.
const DELETE_TIMEOUT: &str = "60";

/// The `bundle` Promise of fixtures/git_writer with its resource pipeline `render` only.
fn promise_yaml() -> String {
    let scripts = support::sandbox_fixtures("git_writer/scripts");
    let text = std::fs::read_to_string(fixtures().join("git_writer/bundle-promise.yaml"))
        .expect("bundle fixture")
        .replace("__SCRIPTS__", &scripts.display().to_string());
    let mut promise: serde_yaml::Value = serde_yaml::from_str(&text).expect("YAML");
    promise["spec"]["workflows"]["resource"]["configure"]
        .as_sequence_mut()
        .expect("resource configure pipelines")
        .retain(|p| p["metadata"]["name"] == "render");
    serde_yaml::to_string(&promise).expect("YAML")
}

fn platform_yaml(url: &str, mode: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata: {{name: default}}\n\
         spec: {{url: {url:?}, branch: main}}\n---\n\
         apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata: {{name: worker-1}}\n\
         spec:\n  path: worker-1\n  cleanup: all\n  filepath: {{mode: {mode}}}\n  \
         stateStoreRef: {{kind: GitStateStore, name: default}}\n---\n{}",
        promise_yaml()
    )
}

fn request_yaml(name: &str) -> String {
    format!("apiVersion: gw.kratix.io/v1alpha1\nkind: Bundle\nmetadata: {{name: {name}, namespace: default}}\nspec: {{version: v1}}\n")
}

/// The WorkPlacements whose `spec.<field>` is `value` (they carry no request or Promise label).
fn placements_where(k: &Kratix, field: &str, value: &str) -> Vec<serde_json::Value> {
    k.list_json("workplacements", &["-A"])
        .into_iter()
        .filter(|p| p["spec"][field] == value)
        .collect()
}

/// Waits until the request's pipeline ran and its placements tried and failed to write.
#[track_caller]
fn wait_failing_placements(k: &Kratix, request: &str) {
    eventually("the request's placements to fail writing", WAIT, || {
        let placements = placements_where(k, "resourceName", request);
        (!placements.is_empty()
            && placements
                .iter()
                .all(|p| condition_is(p, "WriteSucceeded", "False")))
        .then_some(())
    });
}

/// Nothing of the request or Promise (`label` `kratix.io/resource-name` or
/// `kratix.io/promise-name`, `field` the placements' `resourceName` or `promiseName`) is left.
#[track_caller]
fn assert_nothing_left(k: &Kratix, label: &str, field: &str, value: &str) {
    for kind in ["works", "pipelineruns"] {
        let left = k.list_json(kind, &["-A", "-l", &format!("kratix.io/{label}={value}")]);
        assert!(left.is_empty(), "{kind} left for {value}: {left:#?}");
    }
    let left = placements_where(k, field, value);
    assert!(
        left.is_empty(),
        "workplacements left for {value}: {left:#?}"
    );
}

/// Deletes Destination `worker-1`: gone, with every placement, as `delete` returns.
#[track_caller]
fn delete_destination(k: &Kratix) {
    k.run(&[
        "delete",
        "destination",
        "worker-1",
        "--timeout",
        DELETE_TIMEOUT,
    ])
    .assert_ok();
    assert!(k.get_json("destination", "worker-1", None).is_none());
    assert!(k.list_json("workplacements", &["-A"]).is_empty());
}

/// Request, Promise and Destination deleted while the store is down; all of it as `delete`
/// returns. Then the store comes back: it holds nothing of theirs.
fn deletes_while_the_store_is_down(mode: &str) {
    let root = tempfile::tempdir().expect("a folder for repositories");
    let repo = BareRepo::init(&root.path().join("state.git"));
    let mut daemon = RestartableGitDaemon::start_on_free_port(root.path());
    daemon.stop();
    let mut k = Kratix::new()
        .with_env("KRATIX_STORE_RECHECK", "1")
        .with_env("KRATIX_GIT_TIMEOUT", "5");
    k.start_serve();
    k.apply_yaml(
        &platform_yaml(&daemon.url("state.git"), mode),
        &["--no-wait"],
    )
    .assert_ok();
    k.apply_yaml(
        &format!("{}---\n{}", request_yaml("first"), request_yaml("second")),
        &["--no-wait"],
    )
    .assert_ok();
    wait_failing_placements(&k, "first");
    wait_failing_placements(&k, "second");

    k.run(&[
        "delete",
        "bundle",
        "first",
        "-n",
        "default",
        "--timeout",
        DELETE_TIMEOUT,
    ])
    .assert_ok();
    assert!(k.get_json("bundle", "first", Some("default")).is_none());
    assert_nothing_left(&k, "resource-name", "resourceName", "first");

    k.run(&["delete", "promise", "bundle", "--timeout", DELETE_TIMEOUT])
        .assert_ok();
    assert!(k.get_json("promise", "bundle", None).is_none());
    assert_nothing_left(&k, "promise-name", "promiseName", "bundle");

    delete_destination(&k);

    daemon.start();
    eventually("the store to be ready again", WAIT, || {
        k.get_json("gitstatestore", "default", None)
            .filter(|s| condition_is(s, "Ready", "True"))
    });
    assert!(
        repo.files().is_empty(),
        "{mode}: the store holds {:?}",
        repo.files()
    );
}

#[test]
fn nested_by_metadata_deletes_while_the_store_is_down() {
    deletes_while_the_store_is_down("nestedByMetadata");
}

#[test]
fn aggregated_yaml_deletes_while_the_store_is_down() {
    deletes_while_the_store_is_down("aggregatedYAML");
}

#[test]
fn mode_none_deletes_while_the_store_is_down() {
    deletes_while_the_store_is_down("none");
}

/// A server that never answers: its writes fail after `KRATIX_GIT_TIMEOUT`, and a request of it
/// deletes without waiting for it.
#[test]
fn a_request_deletes_while_its_store_never_answers() {
    let silent = SilentServer::start();
    let mut k = Kratix::new()
        .with_env("KRATIX_STORE_RECHECK", "1")
        .with_env("KRATIX_GIT_TIMEOUT", "3");
    k.start_serve();
    let url = format!("git://127.0.0.1:{}/state.git", silent.port);
    k.apply_yaml(&platform_yaml(&url, "nestedByMetadata"), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&request_yaml("hung"), &["--no-wait"])
        .assert_ok();
    wait_failing_placements(&k, "hung");
    k.run(&[
        "delete",
        "bundle",
        "hung",
        "-n",
        "default",
        "--timeout",
        DELETE_TIMEOUT,
    ])
    .assert_ok();
    assert_nothing_left(&k, "resource-name", "resourceName", "hung");
    delete_destination(&k);
    silent.hang_up();
}
