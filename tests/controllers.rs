//! The controllers against an embedded control plane, without the binary or any server: objects
//! are created through the `ControlPlane` trait, a `Runtime` runs beside the test on the same
//! home, and outcomes are read back from the control plane and from a bare Git repository on
//! this machine. Placements, statuses and Destinations, each in a home of its own.

use std::future::Future;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use kratix::api::condition;
use kratix::api::{Object, ObjectKey};
use kratix::controllers::Runtime;
use kratix::platform::Platform;
use kratix::store::embedded::HomeLock;
use kratix::store::Selector;
use serde_json::{json, Value};

/// Generous: the machine has 2 cores and tests run in parallel.
const WAIT: Duration = Duration::from_secs(90);

/// One home with its controllers running while `test` runs; they stop when it returns.
async fn with_controllers<F, Fut>(test: F)
where
    F: FnOnce(Platform) -> Fut,
    Fut: Future<Output = ()>,
{
    let home = tempfile::tempdir().expect("temporary home");
    let platform = Platform::open(home.path()).expect("open the platform");
    let lock = HomeLock::try_acquire(home.path())
        .expect("take the home lock")
        .expect("nobody else holds a fresh home");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controllers = Runtime::new(platform.clone()).run(lock, async {
        let _ = stopped.await;
    });
    let test = async move {
        test(platform).await;
        let _ = stop.send(());
    };
    tokio::join!(controllers, test);
}

/// Stores `yaml` (one object) as is, of the kind it names.
async fn create(platform: &Platform, yaml: &str) -> Object {
    let obj: Object = serde_yaml::from_str(yaml).expect("the object is YAML");
    let kind = platform
        .resolve_kind(&ObjectKey::of(&obj).kind)
        .await
        .expect("a known kind");
    platform
        .store
        .create(&kind, &obj)
        .await
        .expect("the object is stored")
}

async fn get(
    platform: &Platform,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<Object> {
    let kind = platform.resolve_kind(kind).await.expect("a known kind");
    platform
        .store
        .get(&kind, namespace, name)
        .await
        .expect("the control plane answers")
}

async fn list(platform: &Platform, kind: &str) -> Vec<Object> {
    let kind = platform.resolve_kind(kind).await.expect("a known kind");
    platform
        .store
        .list(&kind, None, &Selector::everything())
        .await
        .expect("the control plane answers")
}

/// Polls `check` until it returns `Some`, panicking with `what` after [`WAIT`].
async fn eventually<T, Fut>(what: &str, mut check: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `(status, reason, message)` of a condition, when the object has it.
fn condition_of(obj: &Object, type_: &str) -> Option<(String, String, String)> {
    let c = condition::get(obj, type_)?;
    Some((c.status.as_str().to_string(), c.reason, c.message))
}

fn has_condition(obj: &Object, type_: &str, status: &str) -> bool {
    condition_of(obj, type_).is_some_and(|(s, _, _)| s == status)
}

/// An empty bare repository in `dir`, and a GitStateStore named `default` on it.
fn git_store(dir: &Path) -> (std::path::PathBuf, String) {
    let bare = dir.join("store.git");
    testkit::init_bare(&bare).expect("a bare repository");
    let yaml = format!(
        "apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata:
  name: default
spec:
  url: {}
  branch: main
",
        bare.display()
    );
    (bare, yaml)
}

fn destination_yaml(name: &str, env: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: {name}
  labels:
    env: {env}
spec:
  path: {name}
  stateStoreRef:
    kind: GitStateStore
    name: default
"
    )
}

/// Gzip and base64, as Works carry their files.
fn packed(content: &str) -> String {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(content.as_bytes()).expect("gzip in memory");
    let bytes = gz.finish().expect("gzip in memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A Work of request `default/acme` of Promise `db`, with one file for Destinations labelled
/// `env`.
fn work_yaml(env: &str, content: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1
kind: Work
metadata:
  name: db-acme-instance
  namespace: default
  labels:
    kratix.io/promise-name: db
    kratix.io/resource-name: acme
    kratix.io/pipeline-name: instance
    kratix.io/work-type: resource
spec:
  promiseName: db
  resourceName: acme
  workloadGroups:
    - id: group-1
      directory: .
      workloads:
        - filepath: db.yaml
          content: {}
      destinationSelectors:
        - matchLabels:
            env: {env}
          source: promise
",
        packed(content)
    )
}

/// The placements of Work `db-acme-instance`, by target Destination.
async fn placements(platform: &Platform) -> Vec<(String, Object)> {
    list(platform, "WorkPlacement")
        .await
        .into_iter()
        .filter(|wp| kratix::api::object::label(wp, "kratix.io/work") == Some("db-acme-instance"))
        .map(|wp| {
            let target = wp.data["spec"]["targetDestinationName"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (target, wp)
        })
        .collect()
}

fn files_on_main(bare: &Path) -> Vec<String> {
    testkit::git(&["ls-tree", "-r", "--name-only", "main"], bare)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_is_placed_on_the_matching_destination_and_written_there() {
    let scratch = tempfile::tempdir().expect("scratch folder");
    let (bare, store) = git_store(scratch.path());
    with_controllers(|platform| async move {
        create(&platform, &store).await;
        create(&platform, &destination_yaml("dev", "dev")).await;
        create(&platform, &destination_yaml("prod", "prod")).await;
        create(&platform, &work_yaml("dev", "kind: ConfigMap\n")).await;

        let work = eventually("the Work to be Ready", || async {
            get(&platform, "Work", Some("default"), "db-acme-instance")
                .await
                .filter(|w| has_condition(w, "Ready", "True"))
        })
        .await;
        assert_eq!(
            condition_of(&work, "ScheduleSucceeded").map(|(s, r, _)| (s, r)),
            Some(("True".into(), "AllWorkplacementsScheduled".into()))
        );
        let placed = placements(&platform).await;
        let targets: Vec<&str> = placed.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(targets, ["dev"], "only the env=dev Destination");
        let (_, wp) = &placed[0];
        assert!(has_condition(wp, "WriteSucceeded", "True"), "{:?}", wp.data);
        let version = wp.data["status"]["versionID"].as_str().expect("a commit");
        let head = testkit::git(&["rev-parse", "main"], &bare);
        assert_eq!(version, head.trim(), "the placement names the commit");

        let files = files_on_main(&bare);
        let written: Vec<&String> = files.iter().filter(|f| f.ends_with("/db.yaml")).collect();
        assert_eq!(written.len(), 1, "{files:#?}");
        assert!(written[0].starts_with("dev/"), "{files:#?}");
        let content = testkit::git(&["show", &format!("main:{}", written[0])], &bare);
        assert_eq!(
            content, "kind: ConfigMap\n",
            "the file as the Work carries it"
        );
        assert!(
            !files
                .iter()
                .any(|f| f.starts_with("prod/") && f.ends_with("db.yaml")),
            "{files:#?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_stays_unscheduled_until_a_destination_matches() {
    let scratch = tempfile::tempdir().expect("scratch folder");
    let (_bare, store) = git_store(scratch.path());
    with_controllers(|platform| async move {
        create(&platform, &store).await;
        create(&platform, &destination_yaml("dev", "dev")).await;
        create(&platform, &work_yaml("staging", "kind: Secret\n")).await;

        let work = eventually("the Work to say it is unscheduled", || async {
            get(&platform, "Work", Some("default"), "db-acme-instance")
                .await
                .filter(|w| has_condition(w, "ScheduleSucceeded", "False"))
        })
        .await;
        let (_, reason, message) = condition_of(&work, "ScheduleSucceeded").expect("condition");
        assert_eq!(reason, "UnscheduledWorkloads");
        assert!(message.contains("group-1"), "names the group: {message}");
        assert!(has_condition(&work, "Ready", "False"));
        assert!(placements(&platform).await.is_empty(), "nothing placed");

        create(&platform, &destination_yaml("staging", "staging")).await;
        let placed = eventually("a placement on the new Destination", || async {
            let placed = placements(&platform).await;
            (!placed.is_empty()).then_some(placed)
        })
        .await;
        let targets: Vec<&str> = placed.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(targets, ["staging"]);
        eventually("the Work to be scheduled and Ready", || async {
            get(&platform, "Work", Some("default"), "db-acme-instance")
                .await
                .filter(|w| {
                    has_condition(w, "ScheduleSucceeded", "True")
                        && has_condition(w, "Ready", "True")
                })
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_mirrors_a_store_that_is_not_ready() {
    let port = testkit::closed_port().expect("a free port");
    let store = format!(
        "apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata:
  name: default
spec:
  url: git://127.0.0.1:{port}/nobody.git
  branch: main
"
    );
    with_controllers(|platform| async move {
        create(&platform, &store).await;
        create(&platform, &destination_yaml("dev", "dev")).await;

        let store = eventually("the store to be not ready", || async {
            get(&platform, "GitStateStore", None, "default")
                .await
                .filter(|s| has_condition(s, "Ready", "False"))
        })
        .await;
        let (_, _, store_message) = condition_of(&store, "Ready").expect("Ready");
        let destination = eventually("the Destination to mirror its store", || async {
            get(&platform, "Destination", None, "dev")
                .await
                .filter(|d| {
                    condition_of(d, "Ready")
                        .is_some_and(|(s, r, _)| s == "False" && r == "StateStoreNotReady")
                })
        })
        .await;
        let (_, _, message) = condition_of(&destination, "Ready").expect("Ready");
        assert_eq!(message, format!("GitStateStore default: {store_message}"));
    })
    .await;
}

const PROMISE: &str = r#"apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata:
  name: db
spec:
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: dbs.test.kratix.io
    spec:
      group: test.kratix.io
      names:
        kind: Db
        plural: dbs
        singular: db
      scope: Namespaced
      versions:
        - name: v1alpha1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
  destinationSelectors:
    - matchLabels:
        env: dev
  workflows:
    resource:
      configure:
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata:
            name: instance
          spec:
            containers:
              - name: emit
                image: local/sh
                command:
                  - sh
                  - -c
                  - 'printf "kind: ConfigMap\n" > "${KRATIX_OUTPUT_DIR:-/kratix/output}/db.yaml"'
"#;

const REQUEST: &str = "apiVersion: test.kratix.io/v1alpha1
kind: Db
metadata:
  name: acme
  namespace: default
spec: {}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_status_lists_where_its_files_landed() {
    let scratch = tempfile::tempdir().expect("scratch folder");
    let (bare, store) = git_store(scratch.path());
    with_controllers(|platform| async move {
        create(&platform, &store).await;
        create(&platform, &destination_yaml("dev", "dev")).await;
        create(&platform, &destination_yaml("prod", "prod")).await;
        create(&platform, PROMISE).await;
        eventually("the Promise to be available", || async {
            get(&platform, "Promise", None, "db")
                .await
                .filter(|p| has_condition(p, "Available", "True"))
        })
        .await;
        create(&platform, REQUEST).await;

        let landed = eventually("the request to say where its files landed", || async {
            let request = get(&platform, "Db", Some("default"), "acme").await?;
            let pipelines = request.data["status"]["pipelines"].as_array()?.clone();
            let instance = pipelines.iter().find(|p| p["name"] == "instance")?;
            let destinations = instance["destinations"].as_array()?.clone();
            destinations
                .iter()
                .all(|d| d["written"] == true)
                .then_some(destinations)
                .filter(|d| !d.is_empty())
        })
        .await;
        let head = testkit::git(&["rev-parse", "main"], &bare);
        assert_eq!(
            Value::Array(landed),
            json!([{"destination": "dev", "version": head.trim(), "written": true}])
        );
    })
    .await;
}
