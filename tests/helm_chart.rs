//! The Helm chart `charts/kratix-rs` with a real helm (scripts/helm.sh): it lints, its CRDs are
//! deploy/'s, and rendered with its defaults it makes the objects `kubectl apply -k deploy`
//! makes, field for field, but for Helm's own labels; its values change what they say. Its
//! install on a real node is tests/kubernetes_node.rs with `KRATIX_TEST_INSTALL=helm`.

#[path = "support/helm.rs"]
mod helm;

use std::collections::BTreeMap;
use std::path::PathBuf;

use helm::chart_dir;
use serde::Deserialize;
use serde_json::Value;

/// Labels Helm's conventions add, which deploy/ has no use for.
const HELM_LABELS: [&str; 3] = [
    "helm.sh/chart",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
];

fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

/// Objects by kind, namespace and name, without Helm's labels.
fn by_key(objects: Vec<Value>) -> BTreeMap<String, Value> {
    objects
        .into_iter()
        .map(|mut o| {
            if let Some(labels) = o["metadata"]["labels"].as_object_mut() {
                for key in HELM_LABELS {
                    labels.remove(key);
                }
            }
            let key = format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["namespace"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            );
            (key, o)
        })
        .collect()
}

/// deploy/'s objects but its CRDs, as kustomization.yaml lists them.
fn deploy_objects() -> Vec<Value> {
    manifests("deploy")
}

/// The objects of the kustomization (or component) at `folder`'s resources but CRDs.
fn manifests(folder: &str) -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(folder);
    let kustomization: Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.join("kustomization.yaml")).expect("kustomization.yaml"),
    )
    .expect("kustomization parses");
    kustomization["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r.as_str())
        .filter(|r| !r.starts_with("crds/"))
        .flat_map(|r| documents(&std::fs::read_to_string(dir.join(r)).expect("a manifest")))
        .collect()
}

fn render(extra: &[&str]) -> Vec<Value> {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        "kratix-rs",
        chart.to_str().expect("UTF-8 path"),
        "--namespace",
        "kratix-platform-system",
    ];
    args.extend_from_slice(extra);
    documents(&helm::run(&args).unwrap_or_else(|e| panic!("{e}")))
}

fn controller(objects: &[Value]) -> &Value {
    objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .map(|d| &d["spec"]["template"]["spec"]["containers"][0])
        .expect("the Deployment")
}

fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| &e["value"])
}

#[test]
fn the_chart_lints() {
    if helm::helm().is_none() {
        return;
    }
    let chart = chart_dir();
    let out = helm::run(&["lint", "--strict", chart.to_str().expect("UTF-8 path")])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("0 chart(s) failed"), "{out}");
}

#[test]
fn the_chart_crds_are_deploys() {
    let ours = std::fs::read_to_string(chart_dir().join("crds/platform.kratix.io_crds.yaml"))
        .expect("the chart's CRDs");
    let deploy = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/crds/platform.kratix.io_crds.yaml"),
    )
    .expect("deploy's CRDs");
    assert!(
        ours == deploy,
        "charts/kratix-rs/crds differs from deploy/crds: copy deploy's over"
    );
}

#[test]
fn rendered_with_its_defaults_the_chart_makes_deploys_objects() {
    if helm::helm().is_none() {
        return;
    }
    let chart = by_key(render(&["--set", "namespace.create=true"]));
    let deploy = by_key(deploy_objects());
    assert_eq!(
        chart.keys().collect::<Vec<_>>(),
        deploy.keys().collect::<Vec<_>>(),
        "the same objects"
    );
    for (key, want) in &deploy {
        assert_eq!(&chart[key], want, "{key} differs from deploy/");
    }
}

#[test]
fn with_platform_sync_the_chart_makes_deploys_objects_and_its_component() {
    if helm::helm().is_none() {
        return;
    }
    let chart = by_key(render(&[
        "--set",
        "namespace.create=true,platformSync.enabled=true",
    ]));
    let mut objects = deploy_objects();
    objects.extend(manifests("deploy/components/platform-sync"));
    let deploy = by_key(objects);
    assert!(deploy.contains_key("ClusterRole /kratix-rs-platform-sync"));
    assert_eq!(
        chart.keys().collect::<Vec<_>>(),
        deploy.keys().collect::<Vec<_>>(),
        "the same objects"
    );
    for (key, want) in &deploy {
        assert_eq!(&chart[key], want, "{key} differs from deploy/");
    }
}

#[test]
fn the_chart_values_say_what_changes() {
    if helm::helm().is_none() {
        return;
    }
    let defaults = render(&[]);
    assert!(
        defaults.iter().all(|o| o["kind"] != "Namespace"),
        "no Namespace unless asked: helm stores the release in it first"
    );
    assert!(defaults.iter().all(|o| o["kind"] != "ServiceMonitor"));
    let c = controller(&defaults);
    assert_eq!(env(c, "KRATIX_MAX_PARALLEL"), None, "no cap by default");

    let set = render(&[
        "--set",
        "image.repository=registry.example/kratix-rs,image.tag=1.2.3,image.pullSecret=regcred",
        "--set",
        "replicas=2,pipelines.maxParallel=20,pipelines.podShape=kratix,log.format=text",
        "--set",
        "metrics.serviceMonitor.enabled=true,leaderElection.leaseDuration=30",
    ]);
    let c = controller(&set);
    assert_eq!(c["image"], "registry.example/kratix-rs:1.2.3");
    assert_eq!(
        env(c, "KRATIX_PIPELINE_ADAPTER_IMAGE"),
        Some(&Value::from("registry.example/kratix-rs:1.2.3"))
    );
    assert_eq!(
        env(c, "KRATIX_PIPELINE_ADAPTER_PULL_SECRET"),
        Some(&Value::from("regcred"))
    );
    assert_eq!(env(c, "KRATIX_MAX_PARALLEL"), Some(&Value::from("20")));
    assert_eq!(
        env(c, "KRATIX_PIPELINE_POD_SHAPE"),
        Some(&Value::from("kratix"))
    );
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(args.contains(&"--log-format=text"), "{args:?}");
    assert!(args.contains(&"--lease-duration=30"), "{args:?}");
    let deployment = set
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["imagePullSecrets"][0]["name"],
        "regcred"
    );
    let monitor = set
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
        .expect("the ServiceMonitor");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");

    // Another namespace: everything goes there, the Lease too.
    let chart = chart_dir();
    let elsewhere = documents(
        &helm::run(&[
            "template",
            "kratix-rs",
            chart.to_str().expect("UTF-8 path"),
            "--namespace",
            "platform",
        ])
        .unwrap_or_else(|e| panic!("{e}")),
    );
    for o in &elsewhere {
        let namespaced = !matches!(
            o["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding")
        );
        if namespaced {
            assert_eq!(o["metadata"]["namespace"], "platform", "{o:#}");
        }
    }
    let c = controller(&elsewhere);
    assert!(
        c["args"]
            .as_array()
            .expect("args")
            .contains(&Value::from("--leader-election-namespace=platform")),
        "{c:#}"
    );
}
