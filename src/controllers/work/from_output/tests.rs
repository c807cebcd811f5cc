use std::collections::BTreeMap;

use serde::Deserialize;

use crate::api::work::WorkloadGroupSelector;
use crate::controllers::work::from_output::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// An output as `read_output` builds it: files sorted by path.
fn output(files: &[&str], dirs: &[&str]) -> Output {
    let mut files: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|f| (f.to_string(), format!("content of {f}").into_bytes()))
        .collect();
    files.sort();
    Output {
        files,
        dirs: dirs.iter().map(std::string::ToString::to_string).collect(),
    }
}

fn entry(directory: Option<&str>, l: &[(&str, &str)]) -> DestinationSelectorEntry {
    DestinationSelectorEntry {
        match_labels: labels(l),
        directory: directory.map(String::from),
    }
}

fn selector(source: &str, l: &[(&str, &str)]) -> WorkloadGroupSelector {
    WorkloadGroupSelector {
        match_labels: labels(l),
        source: source.to_string(),
    }
}

/// A group as (directory, file paths, selectors), content checked separately.
type Shape = (String, Vec<String>, Vec<WorkloadGroupSelector>);

fn shape(groups: &[WorkloadGroup]) -> Vec<Shape> {
    groups
        .iter()
        .map(|g| {
            assert_eq!(g.id, group_id(&g.directory), "id of {}", g.directory);
            (
                g.directory.clone(),
                g.workloads.iter().map(|w| w.filepath.clone()).collect(),
                g.destination_selectors.clone(),
            )
        })
        .collect()
}

fn want(directory: &str, files: &[&str], selectors: Vec<WorkloadGroupSelector>) -> Shape {
    (
        directory.to_string(),
        files.iter().map(std::string::ToString::to_string).collect(),
        selectors,
    )
}

#[test]
fn groups_follow_the_work_creator() {
    let promise = vec![
        labels(&[("zone", "eu")]),
        labels(&[("zone", "us"), ("tier", "gold")]),
    ];
    let squashed_promise = selector("promise", &[("tier", "gold"), ("zone", "eu")]);
    type Case = (
        &'static str,
        Output,
        Vec<DestinationSelectorEntry>,
        Vec<BTreeMap<String, String>>,
        WorkflowType,
        Vec<Shape>,
    );
    let cases: Vec<Case> = vec![
        (
            "root only, no selectors",
            output(&["a.yaml", "sub/b.yaml"], &["sub"]),
            vec![],
            vec![],
            WorkflowType::Resource,
            vec![want(".", &["a.yaml", "sub/b.yaml"], vec![])],
        ),
        (
            "root entry and promise selectors on the default group",
            output(&["a.yaml"], &[]),
            vec![entry(None, &[("env", "dev")])],
            promise.clone(),
            WorkflowType::Resource,
            vec![want(
                ".",
                &["a.yaml"],
                vec![
                    selector("resource-workflow", &[("env", "dev")]),
                    squashed_promise.clone(),
                ],
            )],
        ),
        (
            "directory groups first, promise selectors only on the default group",
            output(
                &[
                    "a.yaml",
                    "db/x.yaml",
                    "db/deep/y.yaml",
                    "dbx/z.yaml",
                    "web/w.yaml",
                ],
                &["db", "db/deep", "dbx", "web"],
            ),
            vec![
                entry(Some("web"), &[("app", "web")]),
                entry(Some("db"), &[("app", "db")]),
            ],
            promise.clone(),
            WorkflowType::Promise,
            vec![
                want(
                    "web",
                    &["web/w.yaml"],
                    vec![selector("promise-workflow", &[("app", "web")])],
                ),
                want(
                    "db",
                    &["db/deep/y.yaml", "db/x.yaml"],
                    vec![selector("promise-workflow", &[("app", "db")])],
                ),
                want(
                    ".",
                    &["a.yaml", "dbx/z.yaml"],
                    vec![squashed_promise.clone()],
                ),
            ],
        ),
        (
            "everything claimed: no default group; an empty folder is an empty group",
            output(&["db/x.yaml"], &["db", "empty"]),
            vec![
                entry(Some("db"), &[("a", "b")]),
                entry(Some("empty"), &[("c", "d")]),
            ],
            promise.clone(),
            WorkflowType::Resource,
            vec![
                want(
                    "db",
                    &["db/x.yaml"],
                    vec![selector("resource-workflow", &[("a", "b")])],
                ),
                want(
                    "empty",
                    &[],
                    vec![selector("resource-workflow", &[("c", "d")])],
                ),
            ],
        ),
        (
            "empty output: no groups",
            output(&[], &[]),
            vec![entry(None, &[("env", "dev")])],
            promise.clone(),
            WorkflowType::Resource,
            vec![],
        ),
    ];
    for (case, out, selectors, promise_selectors, workflow_type, expected) in cases {
        let groups = workload_groups(&out, &selectors, &promise_selectors, workflow_type)
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(shape(&groups), expected, "{case}");
        for group in &groups {
            for w in &group.workloads {
                let bytes = crate::api::work::decode_content(&w.content).expect("decodes");
                assert_eq!(
                    bytes,
                    format!("content of {}", w.filepath).into_bytes(),
                    "{case}"
                );
            }
        }
    }
}

#[test]
fn missing_directory_fails_naming_it() {
    let cases = [
        output(&["a.yaml"], &[]),
        // A file, not a folder, of that name.
        output(&["db"], &[]),
    ];
    for out in cases {
        let err = workload_groups(
            &out,
            &[entry(Some("db"), &[("a", "b")])],
            &[],
            WorkflowType::Resource,
        )
        .expect_err("db is not a folder");
        assert!(err.to_string().contains("directory \"db\""), "{err}");
    }
}

#[test]
fn group_ids_are_md5_of_the_directory() {
    let cases = [
        (".", "5058f1af8388633f609cadb75a75dc9d"),
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("db", "d77d5e503ad1439f585ac494268b351b"),
    ];
    for (directory, id) in cases {
        assert_eq!(group_id(directory), id, "{directory:?}");
    }
}

#[test]
fn content_round_trips_through_gzip_and_base64() {
    let cases: [&[u8]; 4] = [
        b"",
        b"apiVersion: v1\nkind: Namespace\n",
        &[0, 159, 146, 150],
        &[b'x'; 100_000],
    ];
    for bytes in cases {
        let encoded = crate::api::work::encode_content(bytes).expect("encodes");
        assert!(
            encoded.starts_with("H4sI"),
            "gzip magic, base64: {encoded:.10}"
        );
        assert_eq!(
            crate::api::work::decode_content(&encoded).expect("round trip"),
            bytes
        );
    }
    assert!(crate::api::work::decode_content("not base64!").is_err());
    assert!(
        crate::api::work::decode_content("aGVsbG8=").is_err(),
        "base64 of plain text is not gzip"
    );
}

#[test]
fn static_dependencies_are_one_multi_document_file() {
    let deps = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}),
    ];
    let promise = vec![
        labels(&[("env", "prod")]),
        labels(&[("env", "dev"), ("zone", "eu")]),
    ];
    let group = static_dependencies_group("redis", &deps, &promise).expect("group");
    assert_eq!(group.id, "5058f1af8388633f609cadb75a75dc9d");
    assert_eq!(group.directory, ".");
    assert_eq!(
        group.destination_selectors,
        vec![selector("promise", &[("env", "prod"), ("zone", "eu")])]
    );
    assert_eq!(group.workloads.len(), 1);
    assert_eq!(
        group.workloads[0].filepath,
        "static/redis-dependencies.yaml"
    );
    let text = String::from_utf8(
        crate::api::work::decode_content(&group.workloads[0].content).expect("decodes"),
    )
    .expect("utf-8");
    let docs: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde_json::Value::deserialize(d).expect("document"))
        .collect();
    assert_eq!(docs, deps);
    assert_eq!(text.matches("---\n").count(), 1, "{text}");

    let no_selectors = static_dependencies_group("redis", &deps, &[]).expect("group");
    assert!(no_selectors.destination_selectors.is_empty());
}
