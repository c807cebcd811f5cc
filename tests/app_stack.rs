//! The marketplace's compound Promise `app-stack` (examples/app-stack/promise.yaml, unchanged)
//! through the binary, its pipelines in containers on the shared engine: stand-in images built
//! under its image names (examples/app-stack/stand-ins) ask for a `postgresql` sub-request, wait
//! for it with `kubectl` through the platform's API, then ask for a `Runtime`; the platform
//! Destination applies both back into the platform, where they run their own (stand-in)
//! Promises' pipelines. One compound tree; deleting the AppStack prunes its sub-requests.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::engine::Engine;
use support::{condition_is, eventually, kubectl, Kratix};

/// Pipelines in containers on a busy machine, and one 30 s wait of the real script.
const WAIT: Duration = Duration::from_secs(300);

/// The images app-stack's pipelines name, and the stand-in script each runs.
const IMAGES: [(&str, &str); 3] = [
    (
        "ghcr.io/syntasso/kratix-marketplace/app-stack-create-dependencies:v0.1.0",
        "create-dependencies",
    ),
    (
        "ghcr.io/syntasso/kratix-marketplace/app-stack-wait-for-dependencies:v0.1.0",
        "wait-for-dependencies",
    ),
    (
        "ghcr.io/syntasso/kratix-marketplace/app-stack-create-runtime:v0.1.0",
        "create-runtime",
    ),
];

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/app-stack")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(example().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Builds every stand-in image from examples/app-stack/stand-ins with `kubectl` beside them,
/// as the example's README does.
fn build_stand_ins(engine: &Engine, kubectl: &Path) {
    let context = tempfile::tempdir().expect("a build context");
    for entry in std::fs::read_dir(example().join("stand-ins")).expect("the stand-ins") {
        let entry = entry.expect("a stand-in file");
        std::fs::copy(entry.path(), context.path().join(entry.file_name())).expect("copied");
    }
    std::fs::copy(kubectl, context.path().join("kubectl")).expect("kubectl copied");
    let context = context.path().display().to_string();
    for (tag, script) in IMAGES {
        let arg = format!("SCRIPT={script}");
        let (ok, _, err) =
            engine.docker(&["build", "-q", "--build-arg", &arg, "-t", tag, &context]);
        assert!(ok, "docker build {tag}: {err}");
    }
}

fn get(k: &Kratix, kind: &str, name: &str) -> Option<Value> {
    k.get_json(kind, name, Some("default"))
}

fn reconciled(k: &Kratix, kind: &str, name: &str) -> Option<Value> {
    get(k, kind, name).filter(|o| condition_is(o, "Reconciled", "True"))
}

#[test]
fn the_marketplace_app_stack_runs_as_a_compound_promise() {
    let Some(kubectl) = kubectl::binary() else {
        return;
    };
    let Some(engine) = Engine::get() else { return };
    build_stand_ins(&engine, &kubectl);
    let daemon = testkit::GitDaemon::start().expect("git daemon on loopback");
    let bare = daemon.bare_repo("state.git").expect("a bare repository");
    let mut k = Kratix::new()
        .with_env("DOCKER_HOST", &engine.docker_host)
        .with_env("KRATIX_PLATFORM_SYNC_INTERVAL", "2");
    k.start_serve_args(&["--api-addr", "127.0.0.1:0"], &[]);

    let platform =
        read("platform.yaml").replace("file:///tmp/app-stack/state.git", &daemon.url("state.git"));
    k.apply_yaml(&platform, &["--timeout", "120"]).assert_ok();
    for promise in [
        "promises/postgresql.yaml",
        "promises/runtime.yaml",
        "promise.yaml",
    ] {
        k.apply_yaml(&read(promise), &["--timeout", "180"])
            .assert_ok();
    }
    k.apply_yaml(&read("resource-request.yaml"), &["--no-wait"])
        .assert_ok();

    // The database sub-request is applied back and runs its own pipeline to worker-1.
    let db = eventually("the postgresql sub-request reconciled", WAIT, || {
        reconciled(&k, "postgresql", "my-app-stack-db")
    });
    let labels = &db["metadata"]["labels"];
    assert_eq!(labels["kratix.io/component-of-promise-name"], "app-stack");
    assert_eq!(
        labels["kratix.io/component-of-resource-name"],
        "my-app-stack"
    );
    assert_eq!(labels["kratix-rs.io/platform-destination"], "platform");

    // The wait pipeline read it through the API; the runtime sub-request follows.
    let runtime = eventually("the Runtime sub-request reconciled", WAIT, || {
        reconciled(&k, "runtime", "my-app-stack")
    });
    let env = runtime["spec"]["applicationEnv"].to_string();
    assert!(
        env.contains("my-app-stack-db-postgresql.default.svc.cluster.local")
            && env.contains("my_app_stack_db"),
        "{env}"
    );
    let app = eventually("the AppStack reconciled", WAIT, || {
        reconciled(&k, "appstack", "my-app-stack")
    });
    assert_eq!(app["status"]["message"], "Dependencies ready", "{app}");
    assert_eq!(app["status"]["dependencies"]["database"]["ready"], true);
    let logs = k.run(&["logs", "appstack", "my-app-stack"]);
    logs.assert_ok();
    assert!(
        logs.stdout.contains("Dependencies ready"),
        "{}",
        logs.stdout
    );

    // One compound tree, down to the sub-requests' files on worker-1.
    let tree = eventually("the compound tree", WAIT, || {
        let tree = k.run(&["tree", "appstack", "my-app-stack"]);
        tree.assert_ok();
        (tree
            .stdout
            .contains("worker-1/resources/default/postgresql/my-app-stack-db/")
            && tree
                .stdout
                .contains("worker-1/resources/default/runtime/my-app-stack/"))
        .then_some(tree.stdout)
    });
    assert!(
        tree.contains("postgresql/default/my-app-stack-db"),
        "{tree}"
    );
    assert!(tree.contains("Runtime/default/my-app-stack"), "{tree}");
    let described = k.run(&["describe", "appstack", "my-app-stack"]);
    described.assert_ok();
    assert!(
        described.stdout.contains("Sub-requests:")
            && described.stdout.contains("Runtime/default/my-app-stack"),
        "{}",
        described.stdout
    );

    // Deleting the AppStack prunes both sub-requests and their files.
    k.run(&["delete", "appstack", "my-app-stack", "--timeout", "180"])
        .assert_ok();
    eventually("the sub-requests pruned", WAIT, || {
        (get(&k, "postgresql", "my-app-stack-db").is_none()
            && get(&k, "runtime", "my-app-stack").is_none())
        .then_some(())
    });
    eventually("their files gone from worker-1", WAIT, || {
        let files = testkit::git(&["ls-tree", "-r", "--name-only", "main"], &bare);
        (!files.contains("worker-1/resources/default/")).then_some(())
    });
}
