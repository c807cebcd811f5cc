use serde_json::{json, Value};

use super::super::render::{text, Charset};
use super::*;

fn object(
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
    name: &str,
    labels: Value,
    rest: Value,
) -> Object {
    let mut value = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "labels": labels},
    });
    if let Some(ns) = ns {
        value["metadata"]["namespace"] = json!(ns);
    }
    if let (Some(target), Some(extra)) = (value.as_object_mut(), rest.as_object()) {
        target.extend(extra.clone());
    }
    serde_json::from_value(value).expect("a valid object")
}

fn kratix(kind: &str, ns: Option<&str>, name: &str, labels: Value, rest: Value) -> Object {
    object("platform.kratix.io/v1alpha1", kind, ns, name, labels, rest)
}

fn ready(type_: &str, status: &str, message: &str) -> Value {
    json!({"conditions": [{"type": type_, "status": status, "message": message}]})
}

/// A run of `pipeline` (`how`: pipeline, action, sequence, phase).
fn run(
    ns: &str,
    name: &str,
    promise: &str,
    request: Option<&str>,
    (pipeline, action, seq, phase): (&str, &str, i64, &str),
) -> Object {
    let mut labels = json!({
        "kratix.io/promise-name": promise,
        "kratix.io/pipeline-name": pipeline,
        "kratix.io/workflow-action": action,
    });
    if let Some(r) = request {
        labels["kratix.io/resource-name"] = json!(r);
    }
    kratix(
        "PipelineRun",
        Some(ns),
        name,
        labels,
        json!({"spec": {"sequence": seq}, "status": {"phase": phase}}),
    )
}

fn work(
    ns: &str,
    name: &str,
    promise: &str,
    request: Option<&str>,
    pipeline: Option<&str>,
) -> Object {
    let mut labels = json!({"kratix.io/promise-name": promise});
    if let Some(r) = request {
        labels["kratix.io/resource-name"] = json!(r);
    }
    if let Some(p) = pipeline {
        labels["kratix.io/pipeline-name"] = json!(p);
    }
    kratix(
        "Work",
        Some(ns),
        name,
        labels,
        json!({"status": ready("Ready", "True", "Ready")}),
    )
}

fn placement(ns: &str, work: &str, dest: &str, files: &[&str], version: Option<&str>) -> Object {
    let mut status = ready("WriteSucceeded", "True", "written");
    status["files"] = json!(files);
    if let Some(v) = version {
        status["versionID"] = json!(v);
    }
    kratix(
        "WorkPlacement",
        Some(ns),
        &format!("{work}.{dest}-5058f"),
        json!({"kratix.io/work": work, "kratix.io/targetDestinationName": dest}),
        json!({"spec": {"targetDestinationName": dest}, "status": status}),
    )
}

fn destination(name: &str, store_kind: &str) -> Object {
    kratix(
        "Destination",
        None,
        name,
        json!({}),
        json!({
            "spec": {"path": name, "stateStoreRef": {"kind": store_kind, "name": "default"}},
            "status": ready("Ready", "True", "ok"),
        }),
    )
}

fn request(name: &str, reconciled: &str) -> Object {
    object(
        "example.kratix.io/v1alpha1",
        "WebApp",
        Some("default"),
        name,
        json!({"kratix.io/promise-name": "webapp"}),
        json!({"status": ready("Reconciled", reconciled, "Pipeline failed: deployment")}),
    )
}

fn promise() -> Object {
    kratix(
        "Promise",
        None,
        "webapp",
        json!({}),
        json!({"status": {"status": "Available"}}),
    )
}

/// A Promise with a promise workflow and static dependencies, two requests (one re-run, one
/// failed), a delete run, and placements on a Git and a bucket Destination.
fn platform() -> Objects {
    let sys = "kratix-platform-system";
    Objects {
        requests: vec![request("shop", "True"), request("blog", "False"), {
            let mut other = request("other", "True");
            other
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("kratix.io/promise-name".into(), "another".into());
            other
        }],
        runs: vec![
            run(
                sys,
                "webapp-setup-1",
                "webapp",
                None,
                ("setup", "configure", 1, "Succeeded"),
            ),
            run(
                "default",
                "webapp-shop-deploy-2",
                "webapp",
                Some("shop"),
                ("deploy", "configure", 2, "Succeeded"),
            ),
            run(
                "default",
                "webapp-shop-deploy-5",
                "webapp",
                Some("shop"),
                ("deploy", "configure", 5, "Running"),
            ),
            run(
                "default",
                "webapp-blog-deploy-3",
                "webapp",
                Some("blog"),
                ("deploy", "configure", 3, "Failed"),
            ),
            run(
                "default",
                "webapp-shop-bye-6",
                "webapp",
                Some("shop"),
                ("bye", "delete", 6, "Pending"),
            ),
            run(
                "other",
                "webapp-shop-deploy-4",
                "webapp",
                Some("shop"),
                ("deploy", "configure", 4, "Succeeded"),
            ),
        ],
        works: vec![
            work(sys, "webapp-setup", "webapp", None, Some("setup")),
            work(sys, "webapp-static-deps", "webapp", None, None),
            work(
                "default",
                "webapp-shop-deploy",
                "webapp",
                Some("shop"),
                Some("deploy"),
            ),
        ],
        placements: vec![
            placement(
                sys,
                "webapp-setup",
                "git-1",
                &["git-1/dependencies/webapp/setup/5058f/q.yaml"],
                Some("abc123"),
            ),
            placement(
                sys,
                "webapp-static-deps",
                "git-1",
                &["git-1/dependencies/webapp/5058f/static/d.yaml"],
                Some("abc122"),
            ),
            placement(
                "default",
                "webapp-shop-deploy",
                "git-1",
                &["git-1/resources/default/webapp/shop/deploy/5058f/d.yaml"],
                Some("def456"),
            ),
            placement(
                "default",
                "webapp-shop-deploy",
                "s3-1",
                &["s3-1/resources/default/webapp/shop/deploy/5058f/d.yaml"],
                Some("e1f2"),
            ),
            placement(
                "default",
                "webapp-shop-deploy",
                "gone",
                &["gone/x.yaml"],
                None,
            ),
        ],
        destinations: vec![
            destination("git-1", "GitStateStore"),
            destination("s3-1", "BucketStateStore"),
        ],
    }
}

#[test]
fn trees_of_a_promise_a_request_and_a_destination() {
    let objects = platform();
    let shop = &objects.requests[0];
    let git = &objects.destinations[0];
    let shop_tree = "\
WebApp/default/shop  Reconciled
|-- PipelineRun/webapp-shop-deploy-5  deploy configure Running
|   `-- Work/webapp-shop-deploy  Ready
|       |-- WorkPlacement/webapp-shop-deploy.git-1-5058f  destination git-1, WriteSucceeded
|       |   `-- GitStateStore/default  commit def456
|       |       `-- git-1/resources/default/webapp/shop/deploy/5058f/d.yaml
|       |-- WorkPlacement/webapp-shop-deploy.gone-5058f  destination gone, WriteSucceeded
|       |   `-- gone/x.yaml
|       `-- WorkPlacement/webapp-shop-deploy.s3-1-5058f  destination s3-1, WriteSucceeded
|           `-- BucketStateStore/default  version e1f2
|               `-- s3-1/resources/default/webapp/shop/deploy/5058f/d.yaml
`-- PipelineRun/webapp-shop-bye-6  bye delete Pending
";
    let cases: Vec<(&str, Node, String)> = vec![
        (
            "request: latest run per pipeline, Works under their run",
            request_tree(shop, &objects),
            shop_tree.to_string(),
        ),
        (
            "promise: own workflow, static dependencies, its requests only",
            promise_tree(&promise(), &objects),
            format!(
                "\
Promise/webapp  Available
|-- PipelineRun/webapp-setup-1  setup configure Succeeded
|   `-- Work/webapp-setup  Ready
|       `-- WorkPlacement/webapp-setup.git-1-5058f  destination git-1, WriteSucceeded
|           `-- GitStateStore/default  commit abc123
|               `-- git-1/dependencies/webapp/setup/5058f/q.yaml
|-- Work/webapp-static-deps  Ready
|   `-- WorkPlacement/webapp-static-deps.git-1-5058f  destination git-1, WriteSucceeded
|       `-- GitStateStore/default  commit abc122
|           `-- git-1/dependencies/webapp/5058f/static/d.yaml
|-- WebApp/default/blog  Reconciled=False (Pipeline failed: deployment)
|   `-- PipelineRun/webapp-blog-deploy-3  deploy configure Failed
`-- {}",
                shop_tree
                    .lines()
                    .enumerate()
                    .map(|(i, l)| if i == 0 {
                        format!("{l}\n")
                    } else {
                        format!("    {l}\n")
                    })
                    .collect::<String>()
            ),
        ),
        (
            "destination: its placements, whatever their Work",
            destination_tree(git, &objects),
            "\
Destination/git-1  GitStateStore default, Ready
|-- WorkPlacement/webapp-shop-deploy.git-1-5058f  destination git-1, WriteSucceeded
|   `-- GitStateStore/default  commit def456
|       `-- git-1/resources/default/webapp/shop/deploy/5058f/d.yaml
|-- WorkPlacement/webapp-setup.git-1-5058f  destination git-1, WriteSucceeded
|   `-- GitStateStore/default  commit abc123
|       `-- git-1/dependencies/webapp/setup/5058f/q.yaml
`-- WorkPlacement/webapp-static-deps.git-1-5058f  destination git-1, WriteSucceeded
    `-- GitStateStore/default  commit abc122
        `-- git-1/dependencies/webapp/5058f/static/d.yaml
"
            .to_string(),
        ),
        (
            "an empty Destination",
            destination_tree(&destination("empty", "GitStateStore"), &objects),
            "Destination/empty  GitStateStore default, Ready\n".to_string(),
        ),
    ];
    for (name, tree, want) in cases {
        assert_eq!(text(&tree, Charset::Ascii), want, "{name}");
    }
}

#[test]
fn conditions_read_as_a_word_or_their_state() {
    let with = |status: Value| kratix("Work", Some("d"), "w", json!({}), json!({"status": status}));
    let cases = [
        (with(ready("Ready", "True", "ok")), "Ready"),
        (
            with(ready("Ready", "False", "store down")),
            "Ready=False (store down)",
        ),
        (with(ready("Ready", "Unknown", "")), "Ready=Unknown"),
        (with(json!({})), ""),
    ];
    for (obj, want) in cases {
        assert_eq!(condition_word(&obj, "Ready"), want);
    }
}

#[test]
fn sub_requests_are_named_by_either_label_family() {
    let child = |labels: Value| {
        object(
            "test.kratix.io/v1",
            "Child",
            Some("team"),
            "c",
            labels,
            json!({}),
        )
    };
    let cases = [
        (
            json!({"kratix.io/component-of-promise-name": "app",
                   "kratix.io/component-of-resource-name": "shop",
                   "kratix.io/component-of-resource-namespace": "team"}),
            true,
        ),
        (
            json!({"kratix.io/parent-promise-name": "app",
                   "kratix.io/parent-resource-name": "shop"}),
            true,
        ),
        (
            json!({"kratix.io/component-of-promise-name": "app",
                   "kratix.io/component-of-resource-name": "shop",
                   "kratix.io/component-of-resource-namespace": "other"}),
            false,
        ),
        (
            json!({"kratix.io/component-of-promise-name": "db",
                   "kratix.io/component-of-resource-name": "shop"}),
            false,
        ),
        (json!({"kratix.io/promise-name": "app"}), false),
    ];
    for (labels, want) in cases {
        assert_eq!(
            is_sub_request_of(&child(labels.clone()), "app", "team", "shop"),
            want,
            "{labels}"
        );
    }
}
