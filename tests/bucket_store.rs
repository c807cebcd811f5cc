//! BucketStateStore end to end: the `kratix-rs` binary writes a Promise's pipelines into a real
//! S3 bucket (testkit::s3: SeaweedFS, or Garage), and an independent S3 client looks at what the bucket holds (keys, ETags,
//! LastModified). Each test has its own platform home and its own bucket on one shared server.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use support::bucket::BucketInspector;
use support::{condition, condition_is, eventually, fixtures, Kratix};

use testkit::s3::{self, AccessKey, S3Server};

/// The store's `spec.path`: every key Kratix writes lives below it.
const STORE_PATH: &str = "platform";
const DESTINATION: &str = "worker-bucket";
const STORE: &str = "garage";
const SECRET: &str = "bucket-credentials";
const PROMISE: &str = "bucketapp";
const KIND: &str = "bucketapp";
const REQUEST: &str = "shop";
const NAMESPACE: &str = "default";

/// Generous: pipelines run in a sandbox on a busy two-core machine.
const WAIT: Duration = Duration::from_secs(180);

/// The Kratix canary files, exactly as Kratix writes them.
const CANARY_NAMESPACE: &str =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kratix-worker-system\nspec: {}\nstatus: {}\n";
const CANARY_CONFIGMAP: &str = "apiVersion: v1\ndata:\n  canary: this confirms your infrastructure is reading from Kratix state stores\nkind: ConfigMap\nmetadata:\n  name: kratix-info\n  namespace: kratix-worker-system\n";

/// The files each configure pipeline of `fixtures/bucket/promise.yaml` writes, in order.
const PIPELINE_FILES: &[(&str, &[&str])] = &[
    ("render", &["deployment.yaml", "extra/config.yaml"]),
    ("expose", &["service.yaml"]),
    ("monitor", &["alerts.yaml"]),
];

// ---------------------------------------------------------------------------------------------
// The bucket as an independent S3 client sees it.

/// What one HEAD says about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ObjectState {
    e_tag: Option<String>,
    last_modified: jiff::Timestamp,
}

/// One test's bucket on the shared S3 server, looked at without going through kratix-rs.
struct TestBucket {
    name: String,
    inspector: BucketInspector,
}

impl TestBucket {
    fn new() -> Self {
        let server = S3Server::shared();
        let name = server.new_bucket();
        let inspector = BucketInspector::new(server, &name);
        Self { name, inspector }
    }

    /// Every key in the bucket (LIST), sorted.
    fn keys(&self) -> BTreeSet<String> {
        self.inspector.keys()
    }

    /// Every key under `prefix`, with what a HEAD of it says.
    fn states_under(&self, prefix: &str) -> BTreeMap<String, ObjectState> {
        self.keys()
            .into_iter()
            .filter(|k| k.starts_with(&format!("{prefix}/")))
            .map(|key| {
                let meta = self.inspector.head(&key);
                let state = ObjectState {
                    e_tag: meta.e_tag,
                    // The S3 client's own time type, in the one time library of this project.
                    last_modified: jiff::Timestamp::from_microsecond(
                        meta.last_modified.timestamp_micros(),
                    )
                    .expect("an S3 time is within jiff's range"),
                };
                (key, state)
            })
            .collect()
    }

    fn get(&self, key: &str) -> String {
        self.inspector.get(key)
    }

    /// Puts an object that kratix-rs did not write.
    fn put_foreign(&self, key: &str) {
        self.inspector.put(key, "written by someone else\n".into());
    }
}

// ---------------------------------------------------------------------------------------------
// Kratix objects and paths.

fn credentials_yaml(key: &AccessKey) -> String {
    format!(
        r"apiVersion: v1
kind: Secret
metadata:
  name: {SECRET}
  namespace: {NAMESPACE}
type: Opaque
stringData:
  accessKeyID: {id}
  secretAccessKey: {secret}
",
        id = key.id,
        secret = key.secret
    )
}

fn store_yaml(endpoint: &str, bucket: &str) -> String {
    format!(
        r"apiVersion: platform.kratix.io/v1alpha1
kind: BucketStateStore
metadata:
  name: {STORE}
spec:
  endpoint: {endpoint}
  bucketName: {bucket}
  path: {STORE_PATH}
  insecure: true
  authMethod: accessKey
  secretRef:
    name: {SECRET}
    namespace: {NAMESPACE}
"
    )
}

fn destination_yaml() -> String {
    format!(
        r"apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: {DESTINATION}
  labels:
    store: bucket
spec:
  path: {DESTINATION}
  stateStoreRef:
    kind: BucketStateStore
    name: {STORE}
"
    )
}

/// Secret, store and Destination on `bucket` of the shared server with `key`.
fn platform_yaml(bucket: &str, key: &AccessKey) -> String {
    let endpoint = &S3Server::shared().s3_endpoint;
    [
        credentials_yaml(key),
        store_yaml(endpoint, bucket),
        destination_yaml(),
    ]
    .join("---\n")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("bucket").join(name)).expect("bucket fixture")
}

/// The Promise without its last configure pipeline.
fn promise_without_last_pipeline() -> String {
    let mut promise: serde_yaml::Value =
        serde_yaml::from_str(&fixture("promise.yaml")).expect("promise fixture is YAML");
    let pipelines = promise["spec"]["workflows"]["resource"]["configure"]
        .as_sequence_mut()
        .expect("the promise has resource configure pipelines");
    let removed = pipelines.pop().expect("at least one pipeline");
    assert_eq!(removed["metadata"]["name"].as_str(), Some("monitor"));
    serde_yaml::to_string(&promise).expect("promise serialises")
}

fn destination_prefix() -> String {
    format!("{STORE_PATH}/{DESTINATION}")
}

/// Where Kratix puts a resource pipeline's files (mode nestedByMetadata, root output folder).
fn pipeline_prefix(pipeline: &str) -> String {
    format!(
        "{}/resources/{NAMESPACE}/{PROMISE}/{REQUEST}/{pipeline}/5058f",
        destination_prefix()
    )
}

fn canary_keys() -> [String; 2] {
    [
        format!(
            "{}/dependencies/kratix-canary-namespace.yaml",
            destination_prefix()
        ),
        format!(
            "{}/resources/kratix-canary-configmap.yaml",
            destination_prefix()
        ),
    ]
}

/// The keys the request's pipelines write, for the first `pipelines` of the Promise.
fn request_keys(pipelines: usize) -> BTreeSet<String> {
    PIPELINE_FILES
        .iter()
        .take(pipelines)
        .flat_map(|(pipeline, files)| {
            files
                .iter()
                .map(move |file| format!("{}/{file}", pipeline_prefix(pipeline)))
        })
        .collect()
}

/// Polls `f` until it returns `Ok`, panicking after [`WAIT`] with `what` and the last `Err`
/// (what was seen instead).
#[track_caller]
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        match f() {
            Ok(found) => return found,
            Err(seen) if std::time::Instant::now() > deadline => {
                panic!("timed out waiting for {what}; last seen:\n{seen}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(300)),
        }
    }
}

fn reconciled_for_current_generation(obj: &Value) -> bool {
    condition_is(obj, "Reconciled", "True")
        && obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
}

fn workplacements(k: &Kratix) -> Vec<Value> {
    k.list_json("workplacements", &["-n", NAMESPACE])
}

/// A platform on a fresh bucket with the Promise and its request applied and settled.
fn platform_with_request() -> (Kratix, TestBucket) {
    let bucket = TestBucket::new();
    let k = Kratix::new();
    let yaml = [
        platform_yaml(&bucket.name, &S3Server::shared().key),
        fixture("promise.yaml"),
        fixture("request.yaml"),
    ]
    .join("---\n");
    k.apply_yaml(&yaml, &["--timeout", "300"]).assert_ok();
    (k, bucket)
}

/// Everything `get -o yaml` shows about the store, the Destination, the placements and the
/// request, plus `extra` (stderr of commands): none of it may contain `secret`.
#[track_caller]
fn assert_secret_nowhere(k: &Kratix, secret: &str, extra: &[&str]) {
    let mut shown: Vec<String> = extra.iter().map(std::string::ToString::to_string).collect();
    for (kind, name, ns) in [
        ("bucketstatestore", Some(STORE), None),
        ("destination", Some(DESTINATION), None),
        ("workplacements", None, Some(NAMESPACE)),
        ("works", None, Some(NAMESPACE)),
        (KIND, None, Some(NAMESPACE)),
    ] {
        let mut args = vec!["get", kind];
        args.extend(name);
        args.extend(["-o", "yaml"]);
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        let run = k.run(&args);
        shown.push(run.stdout);
        shown.push(run.stderr);
    }
    for text in shown {
        assert!(
            !text.contains(secret),
            "a secret access key was shown:\n{text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn three_pipelines_land_in_the_bucket_at_kratix_paths() {
    let (k, bucket) = platform_with_request();

    let keys = bucket.keys();
    let expected: BTreeSet<String> = request_keys(PIPELINE_FILES.len())
        .into_iter()
        .chain(canary_keys())
        .collect();
    assert_eq!(keys, expected, "the bucket holds exactly Kratix's files");
    let [namespace_canary, configmap_canary] = canary_keys();
    assert_eq!(bucket.get(&namespace_canary), CANARY_NAMESPACE);
    assert_eq!(bucket.get(&configmap_canary), CANARY_CONFIGMAP);
    let deployment = bucket.get(&format!("{}/deployment.yaml", pipeline_prefix("render")));
    assert!(
        deployment.contains("kind: Deployment") && deployment.contains(&format!("name: {REQUEST}")),
        "the pipeline's own file: {deployment}"
    );

    let request = k.get_json(KIND, REQUEST, Some(NAMESPACE)).expect("request");
    assert!(
        reconciled_for_current_generation(&request),
        "request Reconciled: {request:#}"
    );
    assert!(condition_is(&request, "WorksSucceeded", "True"));

    let placements = workplacements(&k);
    assert_eq!(placements.len(), PIPELINE_FILES.len(), "{placements:#?}");
    let mut versions = BTreeMap::new();
    for wp in &placements {
        let pipeline = wp["metadata"]["labels"]["kratix.io/pipeline-name"]
            .as_str()
            .expect("pipeline label")
            .to_string();
        let version = wp["status"]["versionID"].as_str().unwrap_or_default();
        assert!(!version.is_empty(), "WorkPlacement has a versionID: {wp:#}");
        assert_eq!(wp["spec"]["targetDestinationName"], DESTINATION);
        let files: BTreeSet<String> = wp["status"]["files"]
            .as_array()
            .expect("status.files")
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let wanted: BTreeSet<String> = PIPELINE_FILES
            .iter()
            .find(|(p, _)| *p == pipeline)
            .map(|(_, files)| {
                files
                    .iter()
                    .map(|f| format!("{}/{f}", pipeline_prefix(&pipeline)))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(files, wanted, "status.files of {pipeline}");
        versions.insert(pipeline, version.to_string());
    }

    let pipelines = request["status"]["pipelines"]
        .as_array()
        .expect("status.pipelines");
    assert_eq!(pipelines.len(), PIPELINE_FILES.len(), "{pipelines:#?}");
    for entry in pipelines {
        let name = entry["name"].as_str().expect("pipeline name");
        let destinations = entry["destinations"]
            .as_array()
            .unwrap_or_else(|| panic!("destinations of {name}: {entry:#}"));
        assert_eq!(destinations.len(), 1, "{entry:#}");
        assert_eq!(destinations[0]["destination"], DESTINATION, "{entry:#}");
        assert_eq!(
            destinations[0]["version"].as_str(),
            versions.get(name).map(String::as_str),
            "the request names the version its placement recorded: {entry:#}"
        );
    }
}

#[test]
fn an_identical_rerun_changes_no_object() {
    let (k, bucket) = platform_with_request();
    let before = bucket.states_under(STORE_PATH);
    assert_eq!(
        before.len(),
        request_keys(PIPELINE_FILES.len()).len() + canary_keys().len()
    );
    let runs_before = k.list_json("pipelineruns", &["-n", NAMESPACE]).len();

    k.run(&["reconcile", KIND, REQUEST, "-n", NAMESPACE])
        .assert_ok();

    let runs_after = k.list_json("pipelineruns", &["-n", NAMESPACE]).len();
    assert!(
        runs_after >= runs_before + PIPELINE_FILES.len(),
        "the re-run ran every pipeline again ({runs_before} runs before, {runs_after} after)"
    );
    let request = k.get_json(KIND, REQUEST, Some(NAMESPACE)).expect("request");
    assert!(reconciled_for_current_generation(&request), "{request:#}");
    let after = bucket.states_under(STORE_PATH);
    assert_eq!(
        after, before,
        "every object keeps its ETag and LastModified"
    );
}

#[test]
fn removing_the_last_pipeline_removes_exactly_its_objects() {
    let (k, bucket) = platform_with_request();
    // Objects Kratix did not write: inside the removed pipeline's folder, under the store path,
    // and outside it.
    let foreign = [
        format!("{}/written-by-hand.yaml", pipeline_prefix("monitor")),
        format!("{}/notes.txt", destination_prefix()),
        "elsewhere/readme.txt".to_string(),
    ];
    for key in &foreign {
        bucket.put_foreign(key);
    }
    let before = bucket.states_under(STORE_PATH);
    let removed = request_keys(PIPELINE_FILES.len())
        .difference(&request_keys(PIPELINE_FILES.len() - 1))
        .cloned()
        .collect::<BTreeSet<_>>();
    assert_eq!(removed.len(), 1, "{removed:?}");

    k.apply_yaml(&promise_without_last_pipeline(), &["--timeout", "300"])
        .assert_ok();
    // `apply` settles the Promise; `wait` drives the request's re-run (no `serve` runs here).
    k.run(&[
        "wait",
        KIND,
        REQUEST,
        "-n",
        NAMESPACE,
        "--for",
        "condition=Reconciled",
        "--timeout",
        "300",
    ])
    .assert_ok();
    wait_for("the request to settle on two pipelines", || {
        let request = k
            .get_json(KIND, REQUEST, Some(NAMESPACE))
            .ok_or("no request")?;
        let pipelines = request["status"]["pipelines"]
            .as_array()
            .map_or(0, Vec::len);
        let keys = bucket.keys();
        if reconciled_for_current_generation(&request)
            && pipelines == 2
            && keys.is_disjoint(&removed)
        {
            Ok(())
        } else {
            Err(format!(
                "request {:#}\nkeys {keys:#?}\nworks {:#?}\nplacements {:#?}",
                request["status"],
                k.list_json("works", &["-n", NAMESPACE])
                    .iter()
                    .map(|w| (&w["metadata"], &w["status"]))
                    .collect::<Vec<_>>(),
                workplacements(&k)
                    .iter()
                    .map(|wp| (&wp["metadata"], &wp["status"]))
                    .collect::<Vec<_>>()
            ))
        }
    });

    let keys = bucket.keys();
    let expected: BTreeSet<String> = before
        .keys()
        .filter(|key| !removed.contains(*key))
        .cloned()
        .chain(foreign.iter().cloned())
        .collect();
    assert_eq!(
        keys, expected,
        "only the removed pipeline's own objects are gone"
    );
    let after = bucket.states_under(STORE_PATH);
    for (key, state) in &after {
        assert_eq!(
            Some(state),
            before.get(key),
            "{key} is untouched by the Promise update"
        );
    }
    assert_eq!(
        workplacements(&k).len(),
        PIPELINE_FILES.len() - 1,
        "the removed pipeline's placement is gone"
    );
}

#[test]
fn wrong_credentials_are_reported_and_recovered_from_without_losing_anything() {
    let bucket = TestBucket::new();
    let server = S3Server::shared();
    let wrong = AccessKey {
        id: server.key.id.clone(),
        secret: s3::random_hex(32),
    };
    let outside = "elsewhere/kept.txt";
    bucket.put_foreign(outside);
    let mut k = Kratix::new();
    k.start_serve();
    let applied = k.apply_yaml(&platform_yaml(&bucket.name, &wrong), &["--no-wait"]);
    applied.assert_ok();

    let store = eventually("the store to be not ready", WAIT, || {
        k.get_json("bucketstatestore", STORE, None)
            .filter(|s| condition_is(s, "Ready", "False"))
    });
    let ready = condition(&store, "Ready").expect("Ready");
    assert_eq!(ready["reason"], "ErrorValidatingPermissions", "{ready:#}");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("write permission validation failed"),
        "{message}"
    );
    assert!(
        message.contains(&bucket.name) && message.contains("access denied"),
        "the message names the bucket and says the credentials were refused: {message}"
    );
    eventually("the Destination to be not ready", WAIT, || {
        k.get_json("destination", DESTINATION, None)
            .filter(|d| condition_is(d, "Ready", "False"))
    });

    // A request made meanwhile runs its pipelines; its files wait for the store.
    let requested = k.apply_yaml(
        &[fixture("promise.yaml"), fixture("request.yaml")].join("---\n"),
        &["--no-wait"],
    );
    requested.assert_ok();
    eventually("the placements to fail writing", WAIT, || {
        let placements = workplacements(&k);
        (placements.len() == PIPELINE_FILES.len()
            && placements
                .iter()
                .all(|wp| condition_is(wp, "WriteSucceeded", "False")))
        .then_some(())
    });
    assert_eq!(
        bucket.keys(),
        BTreeSet::from([outside.to_string()]),
        "nothing written, nothing lost"
    );
    assert_secret_nowhere(&k, &wrong.secret, &[&applied.stderr, &requested.stderr]);

    let fixed = k.apply_yaml(&credentials_yaml(&server.key), &["--no-wait"]);
    fixed.assert_ok();
    eventually("the store to recover", WAIT, || {
        k.get_json("bucketstatestore", STORE, None)
            .filter(|s| condition_is(s, "Ready", "True"))
    });
    eventually("the Destination to recover", WAIT, || {
        k.get_json("destination", DESTINATION, None)
            .filter(|d| condition_is(d, "Ready", "True"))
    });
    let expected: BTreeSet<String> = request_keys(PIPELINE_FILES.len())
        .into_iter()
        .chain(canary_keys())
        .chain([outside.to_string()])
        .collect();
    eventually("the pending writes to land", WAIT, || {
        (bucket.keys() == expected).then_some(())
    });
    eventually("the request to be reconciled", WAIT, || {
        k.get_json(KIND, REQUEST, Some(NAMESPACE))
            .filter(reconciled_for_current_generation)
    });
    assert_secret_nowhere(&k, &server.key.secret, &[&fixed.stderr]);
    k.stop_serve();
}

/// Applies a store (and its Secret) that cannot work, and returns its `Ready` condition.
fn not_ready_condition(endpoint: &str, bucket: &str) -> Value {
    let k = Kratix::new();
    let yaml = [
        credentials_yaml(&S3Server::shared().key),
        store_yaml(endpoint, bucket),
    ]
    .join("---\n");
    let run = k.apply_yaml(&yaml, &["--no-wait"]);
    run.assert_ok();
    let waited = k.run(&[
        "wait",
        "bucketstatestore",
        STORE,
        "--for",
        "condition=Ready=False",
        "--timeout",
        "120",
    ]);
    waited.assert_ok();
    let store = k
        .get_json("bucketstatestore", STORE, None)
        .expect("the store");
    assert_secret_nowhere(
        &k,
        &S3Server::shared().key.secret,
        &[&run.stderr, &waited.stderr],
    );
    condition(&store, "Ready").expect("Ready").clone()
}

#[test]
fn a_missing_bucket_is_not_ready_with_a_reason() {
    let ready = not_ready_condition(&S3Server::shared().s3_endpoint, "no-such-bucket");
    assert_eq!(ready["reason"], "ErrorValidatingPermissions", "{ready:#}");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no-such-bucket") && message.contains("NoSuchBucket"),
        "the message names the bucket and says it does not exist: {message}"
    );
}

#[test]
fn an_unreachable_endpoint_is_not_ready_with_a_reason() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port();
    let endpoint = format!("127.0.0.1:{closed}");
    let ready = not_ready_condition(&endpoint, "kratix");
    assert_eq!(ready["reason"], "ErrorValidatingPermissions", "{ready:#}");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&endpoint),
        "the message names the endpoint: {message}"
    );
    assert!(
        message.to_lowercase().contains("connect") || message.contains("unreachable"),
        "the message says the endpoint could not be reached: {message}"
    );
}

#[test]
fn the_write_permission_check_leaves_nothing_behind() {
    let bucket = TestBucket::new();
    let k = Kratix::new();
    let yaml = [
        credentials_yaml(&S3Server::shared().key),
        store_yaml(&S3Server::shared().s3_endpoint, &bucket.name),
    ]
    .join("---\n");
    k.apply_yaml(&yaml, &["--timeout", "120"]).assert_ok();
    let store = k
        .get_json("bucketstatestore", STORE, None)
        .expect("the store");
    assert!(condition_is(&store, "Ready", "True"), "{store:#}");

    assert_eq!(bucket.keys(), BTreeSet::new(), "no object in the bucket");
    assert_eq!(
        S3Server::shared().unfinished_uploads(&bucket.name),
        0,
        "no multipart upload left open"
    );
}

#[test]
fn deleting_the_request_removes_its_objects() {
    let (k, bucket) = platform_with_request();
    assert!(bucket
        .keys()
        .is_superset(&request_keys(PIPELINE_FILES.len())));

    k.run(&["delete", KIND, REQUEST, "-n", NAMESPACE])
        .assert_ok();

    assert!(k.get_json(KIND, REQUEST, Some(NAMESPACE)).is_none());
    let left = bucket.keys();
    assert_eq!(
        left,
        canary_keys().into_iter().collect::<BTreeSet<_>>(),
        "only the Destination's canaries remain"
    );
    assert_eq!(workplacements(&k).len(), 0);
}
