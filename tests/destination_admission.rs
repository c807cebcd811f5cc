//! Destination admission as Kratix's webhook does it, through `apply`: a Destination needs a
//! `spec.path`, no two Destinations of one state store may share a path (an update keeping its
//! own path is not its own duplicate; the documents of one batch count as if applied one after
//! another), and a missing state store is a warning, not a refusal. A refused batch stores
//! nothing.

mod support;

use support::Kratix;

const STORES: &str = "apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {name: default}
spec: {url: state.git}
---
apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {name: other}
spec: {url: other.git}
";

fn destination(name: &str, path: Option<&str>, store: &str) -> String {
    let path = path.map(|p| format!("path: {p:?}, ")).unwrap_or_default();
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata: {{name: {name}}}\n\
         spec: {{{path}stateStoreRef: {{kind: GitStateStore, name: {store}}}}}\n"
    )
}

fn batch(docs: &[String]) -> String {
    docs.join("---\n")
}

fn names(k: &Kratix, kind: &str) -> Vec<String> {
    let mut names: Vec<String> = k
        .list_json(kind, &[])
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// A refused `apply` of `yaml`: its error says each of `expected`, and nothing is stored.
#[track_caller]
fn refused(k: &Kratix, yaml: &str, expected: &[&str]) {
    let destinations = names(k, "destinations");
    let stores = names(k, "gitstatestores");
    let run = k.apply_yaml(yaml, &["--no-wait"]);
    run.assert_failed();
    for e in expected {
        assert!(run.stderr.contains(e), "expected {e:?} in: {}", run.stderr);
    }
    assert_eq!(
        names(k, "destinations"),
        destinations,
        "no Destination stored"
    );
    assert_eq!(names(k, "gitstatestores"), stores, "no state store stored");
}

#[test]
fn a_destination_without_a_path_is_refused_with_its_batch() {
    let k = Kratix::new();
    refused(
        &k,
        &batch(&[STORES.into(), destination("worker", None, "default")]),
        &[
            "document 3 (Destination worker)",
            "spec.path: path field is required",
        ],
    );
    refused(
        &k,
        &batch(&[STORES.into(), destination("worker", Some(""), "default")]),
        &["document 3", "spec.path: path field is required"],
    );
}

#[test]
fn two_destinations_on_one_path_of_one_store_are_refused() {
    let k = Kratix::new();
    // Within one batch: the later document is the duplicate.
    refused(
        &k,
        &batch(&[
            STORES.into(),
            destination("first", Some("same"), "default"),
            destination("second", Some("same"), "default"),
        ]),
        &[
            "document 4 (Destination second)",
            "spec.path: destination path 'same' already exists for state store 'default' (Destination \"first\")",
        ],
    );

    // Against what is stored; the same folder spelt differently counts too.
    k.apply_yaml(
        &batch(&[STORES.into(), destination("first", Some("same"), "default")]),
        &["--no-wait"],
    )
    .assert_ok();
    for path in ["same", "./same/", "/same"] {
        refused(
            &k,
            &destination("second", Some(path), "default"),
            &[
                "document 1 (Destination second)",
                &format!("destination path '{path}' already exists for state store 'default'"),
            ],
        );
    }

    // Its own stored self is no duplicate; another store, or another folder, is no clash.
    let run = k.apply_yaml(
        &destination("first", Some("same"), "default"),
        &["--no-wait"],
    );
    run.assert_ok();
    assert!(
        run.stdout.contains("destination/first unchanged"),
        "{}",
        run.stdout
    );
    k.apply_yaml(
        &batch(&[
            destination("elsewhere", Some("same"), "other"),
            destination("nested", Some("same/inner"), "default"),
        ]),
        &["--no-wait"],
    )
    .assert_ok();
    assert_eq!(names(&k, "destinations"), ["elsewhere", "first", "nested"]);
}

#[test]
fn a_batch_counts_as_applied_one_document_after_another() {
    let k = Kratix::new();
    k.apply_yaml(
        &batch(&[STORES.into(), destination("first", Some("same"), "default")]),
        &["--no-wait"],
    )
    .assert_ok();
    // `second` takes the path before `first` leaves it: refused, as applying them one at a
    // time would be.
    refused(
        &k,
        &batch(&[
            destination("second", Some("same"), "default"),
            destination("first", Some("moved"), "default"),
        ]),
        &["document 1 (Destination second)", "already exists"],
    );
    // `first` leaves it first: both admitted.
    k.apply_yaml(
        &batch(&[
            destination("first", Some("moved"), "default"),
            destination("second", Some("same"), "default"),
        ]),
        &["--no-wait"],
    )
    .assert_ok();
    let first = k.get_json("destination", "first", None).expect("stored");
    assert_eq!(first["spec"]["path"], "moved");
}

#[test]
fn a_missing_state_store_is_a_warning_not_a_refusal() {
    let k = Kratix::new();
    let run = k.apply_yaml(
        &destination("worker", Some("worker"), "nope"),
        &["--no-wait"],
    );
    run.assert_ok();
    assert!(
        run.stderr.contains(
            "warning: <stdin> document 1 (Destination worker): spec.stateStoreRef: referenced GitStateStore \"nope\" does not exist"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(names(&k, "destinations"), ["worker"]);
    // A store of the same batch exists for the Destination: no warning.
    let run = k.apply_yaml(
        &batch(&[
            STORES.into(),
            destination("worker-2", Some("w2"), "default"),
        ]),
        &["--no-wait"],
    );
    run.assert_ok();
    assert!(!run.stderr.contains("does not exist"), "{}", run.stderr);
}
