//! Defaults as the API server stores them: every default Kratix's CRDs declare (and a Promise's
//! request schema declares) is on the stored object, `get` shows it, and the controllers act on
//! it — above all, deleting a Destination leaves its files unless it says `cleanup: all`.

mod support;

use serde_json::{json, Value};
use support::Kratix;
use testkit::git;

const STORE: &str = "apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {name: default}
spec: {url: state.git}
";

fn destination(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: {name}
  labels: {{env: dev}}
spec:
  path: {name}
  stateStoreRef: {{kind: GitStateStore, name: default}}
{extra}"
    )
}

/// A Promise with static dependencies only: every matching Destination gets its files without
/// running a pipeline.
const PROMISE: &str = "apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {name: deps}
spec:
  destinationSelectors: [{matchLabels: {env: dev}}]
  dependencies:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: shared, namespace: default}
      data: {a: b}
";

/// Every file in the state store's `main` branch under `prefix`.
fn files_under(k: &Kratix, prefix: &str) -> Vec<String> {
    let repo = k.home().join("state.git");
    git(
        &[
            "--git-dir",
            repo.to_str().expect("utf-8 path"),
            "ls-tree",
            "-r",
            "--name-only",
            "main",
        ],
        k.home(),
    )
    .lines()
    .filter(|l| l.starts_with(prefix))
    .map(str::to_string)
    .collect()
}

#[test]
fn kratix_crd_defaults_are_stored_shown_and_stable() {
    let k = Kratix::new();
    let bucket = "apiVersion: platform.kratix.io/v1alpha1
kind: BucketStateStore
metadata: {name: bucket}
spec: {bucketName: b, endpoint: 127.0.0.1:1}
";
    let yaml = format!("{STORE}---\n{}---\n{bucket}", destination("worker-1", ""));
    k.apply_yaml(&yaml, &["--no-wait"]).assert_ok();

    let dest = k.get_json("destination", "worker-1", None).expect("stored");
    let store = k
        .get_json("gitstatestore", "default", None)
        .expect("stored");
    let bucket_store = k
        .get_json("bucketstatestore", "bucket", None)
        .expect("stored");
    // (object, field, default)
    let cases: [(&Value, &str, Value); 9] = [
        (&dest, "/spec/cleanup", json!("none")),
        (&dest, "/spec/filepath/mode", json!("nestedByMetadata")),
        (&dest, "/spec/initWorkloads/enabled", json!(true)),
        (&dest, "/spec/strictMatchLabels", json!(false)),
        (&dest, "/spec/path", json!("worker-1")),
        (&store, "/spec/branch", json!("main")),
        (&store, "/spec/authMethod", json!("basicAuth")),
        (&store, "/spec/gitAuthor", json!({"name": "kratix"})),
        (&bucket_store, "/spec/authMethod", json!("accessKey")),
    ];
    for (object, field, want) in cases {
        assert_eq!(object.pointer(field), Some(&want), "{field} in {object}");
    }
    let yaml_out = k.run(&["get", "destination", "worker-1", "-o", "yaml"]);
    yaml_out.assert_ok();
    assert!(
        yaml_out.stdout.contains("cleanup: none"),
        "{}",
        yaml_out.stdout
    );

    // Applying the same text again stores nothing new: defaulting is not a change.
    let again = k.apply_yaml(&yaml, &["--no-wait"]);
    again.assert_ok();
    for line in [
        "gitstatestore/default unchanged",
        "destination/worker-1 unchanged",
        "bucketstatestore/bucket unchanged",
    ] {
        assert!(again.stdout.contains(line), "{line}: {}", again.stdout);
    }
    // Spelling the defaults out is the same object too: only the applied configuration (the
    // last-applied annotation) changes, as with kubectl; the spec and its generation stay.
    let spelled = format!(
        "{STORE}---\n{}",
        destination(
            "worker-1",
            "  cleanup: none\n  filepath: {mode: nestedByMetadata}\n  initWorkloads: {enabled: true}\n"
        )
    );
    let run = k.apply_yaml(&spelled, &["--no-wait"]);
    run.assert_ok();
    let respelled = k.get_json("destination", "worker-1", None).expect("stored");
    assert_eq!(
        (&respelled["spec"], &respelled["metadata"]["generation"]),
        (&dest["spec"], &dest["metadata"]["generation"]),
        "{}",
        run.stdout
    );
    let run = k.apply_yaml(&spelled, &["--no-wait"]);
    run.assert_ok();
    assert!(
        run.stdout.contains("destination/worker-1 unchanged"),
        "{}",
        run.stdout
    );
    // A given value wins over the default.
    let run = k.apply_yaml(
        &format!(
            "{STORE}---\n{}",
            destination("worker-1", "  cleanup: all\n")
        ),
        &["--no-wait"],
    );
    assert!(
        run.stdout.contains("destination/worker-1 configured"),
        "{}",
        run.stdout
    );
    let dest = k.get_json("destination", "worker-1", None).expect("stored");
    assert_eq!(dest["spec"]["cleanup"], "all");
}

#[test]
fn deleting_a_destination_keeps_its_files_unless_cleanup_is_all() {
    let k = Kratix::new();
    let yaml = [
        STORE.to_string(),
        destination("keep", ""),
        destination("wipe", "  cleanup: all\n"),
        PROMISE.to_string(),
    ]
    .join("---\n");
    k.apply_yaml(&yaml, &[]).assert_ok();
    let keep_before = files_under(&k, "keep/");
    let wipe_before = files_under(&k, "wipe/");
    for (name, files) in [("keep", &keep_before), ("wipe", &wipe_before)] {
        assert!(
            files
                .iter()
                .any(|f| f.starts_with(&format!("{name}/dependencies/"))
                    && f.ends_with(".yaml")
                    && !f.contains("kratix-canary")),
            "{name} got the Promise's dependencies: {files:?}"
        );
        assert!(
            files.iter().any(|f| f.contains("kratix-canary")),
            "{name} got canary files: {files:?}"
        );
    }

    k.run(&["delete", "destination", "keep"]).assert_ok();
    k.run(&["delete", "destination", "wipe"]).assert_ok();
    assert!(k.get_json("destination", "keep", None).is_none());
    assert!(k.get_json("destination", "wipe", None).is_none());

    assert_eq!(
        files_under(&k, "keep/"),
        keep_before,
        "cleanup defaults to none: every file stays"
    );
    assert_eq!(
        files_under(&k, "wipe/"),
        Vec::<String>::new(),
        "cleanup: all removes every file"
    );
}

#[test]
fn request_schema_defaults_are_stored_nested_ones_too() {
    let k = Kratix::new();
    let promise = "apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {name: db}
spec:
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: dbs.example.kratix.io}
    spec:
      group: example.kratix.io
      names: {kind: Db, plural: dbs, singular: db}
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
                  default: {}
                  properties:
                    size: {type: integer, default: 1}
                    backup:
                      type: object
                      default: {}
                      properties:
                        schedule: {type: string, default: '@daily'}
                    users:
                      type: array
                      items:
                        type: object
                        properties:
                          role: {type: string, default: reader}
";
    k.apply_yaml(promise, &["--no-wait"]).assert_ok();
    let request = "apiVersion: example.kratix.io/v1alpha1
kind: Db
metadata: {name: orders}
spec:
  users: [{name: a}, {name: b, role: admin}]
";
    k.apply_yaml(request, &["--no-wait"]).assert_ok();
    let db = k.get_json("db", "orders", Some("default")).expect("stored");
    assert_eq!(
        db["spec"],
        json!({
            "size": 1,
            "backup": {"schedule": "@daily"},
            "users": [{"role": "reader"}, {"role": "admin"}]
        }),
        "defaults applied, unknown fields (users[].name) pruned: {db}"
    );
    let again = k.apply_yaml(request, &["--no-wait"]);
    assert!(
        again.stdout.contains("db/orders unchanged"),
        "{}",
        again.stdout
    );
}
