//! Real Kratix-shaped YAML (fixtures/api) parses into the typed API and round-trips unchanged.
//!
//! Round trip: YAML → JSON (the original) → typed struct → JSON, compared with the original.
//! The fixtures spell out every field, so the comparison is exact. Fields left out gain these
//! defaults when serialized again (checked by `omitted_fields_gain_only_the_documented_defaults`):
//! - Destination: `spec.path: ""`, `spec.strictMatchLabels: false`, `spec.filepath.mode:
//!   nestedByMetadata` (when `filepath` is given), `spec.initWorkloads.enabled: true` (when
//!   `initWorkloads` is given).
//! - BucketStateStore: `spec.insecure: false`.
//! - Promise: `spec.destinationSelectors[].matchLabels: {}`.
//! - Work: `spec.promiseName: ""`, `workloadGroups[].directory: ""`, `workloadGroups[].workloads: []`,
//!   `workloads[].content: ""`, `destinationSelectors[].matchLabels: {}`, `…source: ""`.
//! - WorkPlacement: `spec.promiseName: ""`, `spec.workloads: []`, `spec.generation: 0`.
//! - PipelineRun: `spec.last: false`, `status.phase: Pending`.
//! - Pipeline: `spec: {containers: []}`.
//!
//! And the other way: a condition's empty `reason` or `message` (`""`) is left out.

#[allow(dead_code)]
#[path = "support/testworld.rs"]
mod testworld;

use std::io::Read as _;
use std::path::PathBuf;

use base64::Engine as _;
use kratix::api::hash::spec_hash;
use kratix::api::object::to_typed;
use kratix::api::promise_api::{all_kinds, request_kind, resolve_kind};
use kratix::api::validation::{validate, Error as ValidationError};
use kratix::api::{
    secret, BucketStateStore, Destination, FilepathMode, GitStateStore, HealthRecord, Object,
    Pipeline, PipelineRun, Promise, ResourceBinding, Secret, Work, WorkPlacement,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/api")
        .join(name)
}

/// The documents of a fixture file, as JSON.
fn documents(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture_path(name)).expect("fixture is readable");
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).expect("fixture is valid YAML"))
        .filter(|doc| !doc.is_null())
        .collect()
}

fn round_trip<T: DeserializeOwned + Serialize>(doc: &Value) -> Value {
    let typed: T = serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", doc["metadata"]["name"]));
    serde_json::to_value(&typed).expect("typed objects serialize")
}

/// Round-trips `doc` through the typed struct of its kind, and through the untyped `Object`.
fn round_trip_by_kind(doc: &Value) -> (Value, Value) {
    let typed = match doc["kind"].as_str().expect("every fixture has a kind") {
        "Promise" => round_trip::<Promise>(doc),
        "Destination" => round_trip::<Destination>(doc),
        "GitStateStore" => round_trip::<GitStateStore>(doc),
        "BucketStateStore" => round_trip::<BucketStateStore>(doc),
        "Work" => round_trip::<Work>(doc),
        "WorkPlacement" => round_trip::<WorkPlacement>(doc),
        "PipelineRun" => round_trip::<PipelineRun>(doc),
        "Secret" => round_trip::<Secret>(doc),
        "ResourceBinding" => round_trip::<ResourceBinding>(doc),
        "HealthRecord" => {
            // Its typed struct holds the metadata and `data` only.
            let mut typed = round_trip::<HealthRecord>(doc);
            typed["apiVersion"] = doc["apiVersion"].clone();
            typed["kind"] = doc["kind"].clone();
            typed
        }
        other => panic!("no typed struct for kind {other}"),
    };
    (typed, round_trip::<Object>(doc))
}

#[test]
fn every_fixture_round_trips_through_its_typed_struct() {
    let cases = [
        ("promise.yaml", "Promise", 1),
        ("destinations.yaml", "Destination", 3),
        ("gitstatestore.yaml", "GitStateStore", 1),
        ("bucketstatestore.yaml", "BucketStateStore", 1),
        ("work.yaml", "Work", 1),
        ("workplacement.yaml", "WorkPlacement", 1),
        ("pipelinerun.yaml", "PipelineRun", 1),
        ("secret.yaml", "Secret", 2),
        ("resourcebinding.yaml", "ResourceBinding", 1),
        ("healthrecord.yaml", "HealthRecord", 1),
    ];
    for (file, kind, count) in cases {
        let docs = documents(file);
        assert_eq!(docs.len(), count, "{file}: documents");
        for doc in docs {
            assert_eq!(doc["kind"], json!(kind), "{file}");
            let (typed, untyped) = round_trip_by_kind(&doc);
            assert_eq!(
                typed, doc,
                "{file}: typed round trip of {}",
                doc["metadata"]["name"]
            );
            assert_eq!(
                untyped, doc,
                "{file}: Object round trip of {}",
                doc["metadata"]["name"]
            );
        }
    }
}

#[test]
fn omitted_fields_gain_only_the_documented_defaults() {
    let meta = json!({"name": "x"});
    let cases: Vec<(Value, Value)> = vec![
        (
            json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Destination", "metadata": meta,
                   "spec": {"filepath": {}, "initWorkloads": {}}}),
            json!({"path": "", "strictMatchLabels": false, "filepath": {"mode": "nestedByMetadata"},
                   "initWorkloads": {"enabled": true}}),
        ),
        (
            json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "BucketStateStore", "metadata": meta,
                   "spec": {"bucketName": "b", "endpoint": "e"}}),
            json!({"bucketName": "b", "endpoint": "e", "insecure": false}),
        ),
        (
            json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Promise", "metadata": meta,
                   "spec": {"destinationSelectors": [{}]}}),
            json!({"destinationSelectors": [{"matchLabels": {}}]}),
        ),
        (
            json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work", "metadata": meta,
                   "spec": {"workloadGroups": [{"id": "i", "destinationSelectors": [{}]},
                                                {"id": "j", "workloads": [{"filepath": "f"}]}]}}),
            json!({"promiseName": "", "workloadGroups": [
                {"id": "i", "directory": "", "workloads": [],
                 "destinationSelectors": [{"matchLabels": {}, "source": ""}]},
                {"id": "j", "directory": "", "workloads": [{"filepath": "f", "content": ""}]}]}),
        ),
        (
            json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "WorkPlacement", "metadata": meta,
                   "spec": {"targetDestinationName": "d", "id": "i"}}),
            json!({"targetDestinationName": "d", "id": "i", "promiseName": "", "workloads": [],
                   "generation": 0}),
        ),
    ];
    for (doc, want_spec) in cases {
        let (typed, _) = round_trip_by_kind(&doc);
        assert_eq!(typed["spec"], want_spec, "{}", doc["kind"]);
    }

    let run = json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "PipelineRun", "metadata": meta,
        "spec": {"sequence": 1, "promiseName": "p", "pipelineName": "a", "pipelineIndex": 0,
                 "workflowType": "promise", "workflowAction": "configure", "hash": "h",
                 "pipeline": {}},
        "status": {}});
    let typed = round_trip::<PipelineRun>(&run);
    assert_eq!(typed["spec"]["last"], json!(false));
    assert_eq!(typed["status"], json!({"phase": "Pending"}));

    let pipeline = json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Pipeline",
                          "metadata": {"name": "a"}});
    let parsed = Pipeline::parse_list("spec.workflows.promise.configure", &[pipeline])
        .expect("a pipeline without spec is valid");
    assert_eq!(
        serde_json::to_value(&parsed[0]).expect("serializes")["spec"],
        json!({"containers": []})
    );
}

#[test]
fn pipelines_of_every_workflow_parse_in_order_and_round_trip() {
    let doc = &documents("promise.yaml")[0];
    let workflows = &doc["spec"]["workflows"];
    let cases = [
        ("promise", "configure", vec![("install-operator", 1)]),
        (
            "resource",
            "configure",
            vec![("instance", 2), ("database-docs", 1)],
        ),
        ("resource", "delete", vec![("teardown", 1)]),
    ];
    for (workflow_type, action, want) in cases {
        let path = format!("spec.workflows.{workflow_type}.{action}");
        let values = workflows[workflow_type][action]
            .as_array()
            .unwrap_or_else(|| panic!("{path} is a list"));
        let pipelines = Pipeline::parse_list(&path, values).expect("valid pipelines");
        let got: Vec<(&str, usize)> = pipelines
            .iter()
            .map(|p| (p.name(), p.spec.containers.len()))
            .collect();
        assert_eq!(got, want, "{path}");
        for (pipeline, original) in pipelines.iter().zip(values) {
            assert_eq!(
                &serde_json::to_value(pipeline).expect("serializes"),
                original,
                "{path}: {} round trip",
                pipeline.name()
            );
        }
    }

    let promise: Promise = serde_json::from_value(doc.clone()).expect("promise parses");
    let instance = Pipeline::parse_list(
        "spec.workflows.resource.configure",
        &promise
            .spec
            .workflows
            .as_ref()
            .and_then(|w| w.resource.as_ref())
            .expect("resource workflows")
            .configure,
    )
    .expect("valid")
    .remove(0);
    assert_eq!(instance.metadata.labels["team"], "data");
    assert_eq!(
        instance.spec.containers[0].env[0].value.as_deref(),
        Some("16")
    );
    assert!(instance.spec.containers[0].env[1].value_from.is_some());
    assert_eq!(
        instance.spec.containers[0].args.as_deref(),
        Some(&["--output".to_string(), "/kratix/output".to_string()][..])
    );
    assert!(
        instance.spec.extra.contains_key("volumes"),
        "Kubernetes-only settings are kept"
    );
}

#[test]
fn typed_views_expose_the_kratix_fields() {
    let promise: Promise =
        serde_json::from_value(documents("promise.yaml").remove(0)).expect("promise");
    assert_eq!(promise.spec.dependencies.len(), 2);
    assert_eq!(
        promise.spec.destination_selectors[0].match_labels["environment"],
        "dev"
    );

    let modes: Vec<(String, FilepathMode, bool, bool)> = documents("destinations.yaml")
        .into_iter()
        .map(|d| serde_json::from_value::<Destination>(d).expect("destination"))
        .map(|d| {
            (
                d.spec.path.clone(),
                d.spec.filepath_mode(),
                d.spec.strict_match_labels,
                d.spec.init_workloads_enabled(),
            )
        })
        .collect();
    assert_eq!(
        modes,
        vec![
            (
                "worker-1".into(),
                FilepathMode::NestedByMetadata,
                false,
                true
            ),
            ("backstage".into(), FilepathMode::AggregatedYaml, true, true),
            ("terraform/prod".into(), FilepathMode::None, true, false),
        ]
    );

    let git: GitStateStore =
        serde_json::from_value(documents("gitstatestore.yaml").remove(0)).expect("git");
    assert_eq!(git.spec.branch(), "main");
    assert_eq!(git.spec.auth_method.as_deref(), Some("basicAuth"));
    assert_eq!(
        git.spec.git_author.as_ref().and_then(|a| a.name.as_deref()),
        Some("Kratix Bot")
    );

    let work: Work = serde_json::from_value(documents("work.yaml").remove(0)).expect("work");
    let content = &work.spec.workload_groups[0].workloads[0].content;
    let gzipped = base64::engine::general_purpose::STANDARD
        .decode(content)
        .expect("base64");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_string(&mut text)
        .expect("gzip");
    assert_eq!(text, "kind: Example\n");
    assert!(!work.spec.is_dependency());

    let placement: WorkPlacement =
        serde_json::from_value(documents("workplacement.yaml").remove(0)).expect("wp");
    let status = placement.status.expect("status");
    assert_eq!(
        status.version_id.as_deref(),
        Some("0f4a1c2b7d9e8f60112233445566778899aabbcc")
    );

    let secrets: Vec<Secret> = documents("secret.yaml")
        .into_iter()
        .map(|d| serde_json::from_value(d).expect("secret"))
        .collect();
    assert_eq!(secret::values(&secrets[0])["username"], b"kratix".to_vec());
    assert_eq!(
        secret::values(&secrets[1])["accessKeyID"],
        b"minioadmin".to_vec()
    );
}

#[test]
fn the_promise_api_accepts_valid_requests_and_refuses_bad_ones() {
    let promise_doc = documents("promise.yaml").remove(0);
    let promise: Promise = serde_json::from_value(promise_doc.clone()).expect("promise");
    let api = request_kind(&promise)
        .expect("valid api")
        .expect("has an api");
    assert_eq!(api.kind.api_version(), "marketplace.kratix.io/v1alpha1");
    assert_eq!(api.kind.kind, "PostgreSQL");

    let objects: Vec<Object> = vec![serde_json::from_value(promise_doc).expect("object")];
    let kinds = all_kinds(&objects);
    for name in [
        "pg",
        "postgresql",
        "PostgreSQLs",
        "postgresqls.marketplace.kratix.io",
    ] {
        assert_eq!(
            resolve_kind(name, &kinds).map(|k| k.kind),
            Some("PostgreSQL".to_string()),
            "{name}"
        );
    }

    let schema = api.schema.expect("the storage version has a schema");
    let request = documents("postgresql-request.yaml").remove(0);
    let validated = validate(&schema, &request).expect("the fixture request is valid");
    assert!(validated.pruned.is_empty());
    assert_eq!(validated.object["spec"]["env"], json!("dev"));
    assert_eq!(validated.object["spec"]["dbName"], json!("postgres"));
    assert_eq!(validated.object["spec"]["size"], json!(3));
    let object: Object = serde_json::from_value(validated.object.clone()).expect("object");
    let typed_request: Value = to_typed(&object).expect("json");
    assert_eq!(spec_hash(&typed_request), spec_hash(&validated.object));

    let mut bad = request.clone();
    bad["spec"]["size"] = json!("big");
    bad["spec"]["env"] = json!("staging");
    bad["spec"]["colour"] = json!("blue");
    bad["spec"].as_object_mut().expect("spec").remove("teamId");
    assert_eq!(
        validate(&schema, &bad),
        Err(ValidationError::Invalid {
            violations: vec![
                r#"spec.env: "staging" is not one of ["dev", "prod"]"#.to_string(),
                r#"spec.size: "big" is not of type integer"#.to_string(),
                "spec.teamId: required".to_string(),
            ]
        })
    );
}

#[test]
fn unknown_request_fields_are_pruned_as_the_api_server_prunes_them() {
    let promise: Promise =
        serde_json::from_value(documents("promise.yaml").remove(0)).expect("promise");
    let schema = request_kind(&promise)
        .expect("valid api")
        .and_then(|api| api.schema)
        .expect("schema");
    let mut request = documents("postgresql-request.yaml").remove(0);
    request["spec"]["colour"] = json!("blue");
    request["spec"]["backups"]["retention"] = json!(3);
    let validated = validate(&schema, &request).expect("valid once pruned");
    assert_eq!(validated.pruned, ["spec.backups.retention", "spec.colour"]);
    // What kube-apiserver 1.20 stored for the same request under the same CRD.
    assert_eq!(
        validated.object["spec"],
        json!({"backups": {"enabled": true, "schedule": "0 2 * * *"}, "dbName": "postgres",
               "env": "dev", "extensions": ["pg_stat_statements"], "size": 3, "teamId": "acme"})
    );
}

/// A kube-apiserver started by `scripts/testworld`, stopped on drop.
struct ApiServer(testworld::KubeWorld);

impl ApiServer {
    fn start() -> Self {
        Self(testworld::KubeWorld::start())
    }

    /// Runs kubectl with `stdin`; returns stdout, panicking with stderr on failure.
    #[track_caller]
    fn kubectl(&self, args: &[&str], stdin: &str) -> String {
        self.0
            .try_kubectl(args, stdin)
            .unwrap_or_else(|stderr| panic!("kubectl {args:?} failed: {stderr}"))
    }

    /// Applies CRDs and waits until the API server serves them.
    fn apply_crds(&self, yaml: &str) {
        self.kubectl(&["apply", "-f", "-"], yaml);
        self.kubectl(
            &[
                "wait",
                "--for",
                "condition=Established",
                "crd",
                "--all",
                "--timeout=120s",
            ],
            "",
        );
    }

    /// A merge patch of `doc`'s object through the status subresource, as the API server
    /// stored it. Through the API rather than kubectl: Debian's kubectl predates
    /// `kubectl patch --subresource`. The plural is the kind's, lower case, with an `s`.
    fn patch_status(&self, doc: &Value, patch: Value) -> Value {
        let kind = doc["kind"].as_str().expect("kind");
        let (group, version) = doc["apiVersion"]
            .as_str()
            .and_then(|v| v.split_once('/'))
            .expect("a grouped apiVersion");
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let resource = kube::api::ApiResource::from_gvk_with_plural(
            &gvk,
            &format!("{}s", kind.to_ascii_lowercase()),
        );
        let name = doc["metadata"]["name"].as_str().expect("name");
        let namespace = doc["metadata"]["namespace"].as_str();
        let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
        runtime.block_on(async {
            let client = self.0.client().await;
            let api: kube::Api<kube::api::DynamicObject> = match namespace {
                Some(ns) => kube::Api::namespaced_with(client, ns, &resource),
                None => kube::Api::all_with(client, &resource),
            };
            let patched = api
                .patch_status(
                    name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await
                .unwrap_or_else(|e| panic!("patching the status of {kind} {name}: {e}"));
            serde_json::to_value(patched).expect("an object is JSON")
        })
    }
}

#[test]
#[ignore = "starts a real kube-apiserver with scripts/testworld; run with --ignored"]
fn crds_are_accepted_by_a_real_api_server_and_keep_every_fixture_field() {
    let server = ApiServer::start();
    server.apply_crds(&kratix::api::crds::crds_yaml());
    server.kubectl(&["create", "namespace", "kratix-platform-system"], "");
    server.kubectl(&["create", "namespace", "monitoring"], "");
    for file in [
        "promise.yaml",
        "destinations.yaml",
        "gitstatestore.yaml",
        "bucketstatestore.yaml",
        "work.yaml",
        "workplacement.yaml",
        "pipelinerun.yaml",
        "resourcebinding.yaml",
        "healthrecord.yaml",
    ] {
        for doc in documents(file) {
            let stored: Value = serde_json::from_str(
                &server.kubectl(&["create", "-f", "-", "-o", "json"], &doc.to_string()),
            )
            .expect("kubectl prints JSON");
            // The API server fills in the CRDs' defaults; ours must be exactly the same.
            let mut defaulted = doc.clone();
            if let Some(schema) = doc["kind"].as_str().and_then(kratix::api::crds::schema_of) {
                kratix::api::defaults::apply(schema, &mut defaulted);
            }
            // A HealthRecord's content is its `data`.
            let content = if doc["kind"] == "HealthRecord" {
                "data"
            } else {
                "spec"
            };
            assert_eq!(
                stored[content], defaulted[content],
                "{file}: the API server pruned or changed {content}, or defaulted it unlike us"
            );
            let Some(status) = doc.get("status") else {
                continue;
            };
            // Status goes through the status subresource, with a field no schema declares.
            let mut status = status.clone();
            status["writtenByAPipeline"] = json!({"any": ["thing", 1]});
            let patched = server.patch_status(&doc, json!({"status": status}));
            assert_eq!(
                patched["status"], status,
                "{file}: the API server pruned status"
            );
        }
    }
}

/// Kratix's keyed workflow status with every field it may hold: configure and delete entries,
/// a suspended workflow's generation and the last successful configure time.
fn keyed_workflows() -> Value {
    json!({
        "configure": {
            "lastSuccessfulConfigureWorkflowTime": "2026-09-20T10:00:00Z",
            "suspendedGeneration": 3,
            "pipelines": [
                {"name": "instance", "hash": "7e3e19", "phase": "Succeeded", "attempts": 1,
                 "lastTransitionTime": "2026-09-20T09:59:58Z"},
                {"name": "approve", "hash": "7e3e19", "phase": "Suspended", "attempts": 2,
                 "message": "waiting for approval", "nextRetryAt": "2026-09-20T10:05:00Z",
                 "lastTransitionTime": "2026-09-20T10:00:00Z"},
            ],
        },
        "delete": {"pipelines": [{"name": "goodbye", "hash": "7e3e19", "phase": "Failed",
                                   "attempts": 3, "nextRetryAt": "2026-09-20T10:01:00Z"}]},
    })
}

#[test]
#[ignore = "starts a real kube-apiserver with scripts/testworld; run with --ignored"]
fn the_keyed_workflow_status_is_kept_whole_by_a_real_api_server() {
    let server = ApiServer::start();
    server.apply_crds(&kratix::api::crds::crds_yaml());
    let mut promise = documents("promise.yaml").remove(0);
    // A Promise whose API declares a status of its own, which would prune whatever else is
    // written there: Kratix's part must be kept all the same.
    promise["spec"]["api"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["status"] = json!({"type": "object", "properties": {"ready": {"type": "boolean"}}});
    // The request kind's CRD as `kratix-rs controller` installs it for the Promise.
    let crd = kratix::kube::crd::request_crd("postgresql", &promise["spec"]["api"]);
    server.apply_crds(&crd.to_string());
    let request = documents("postgresql-request.yaml").remove(0);
    for doc in [&promise, &request] {
        server.kubectl(&["create", "-f", "-"], &doc.to_string());
        let status = json!({
            "kratix": {"status": "Available", "workflows": keyed_workflows()},
            "message": "Resource requested",
            "pipelines": [{"name": "instance", "phase": "Succeeded", "attempts": 1,
                           "destinations": [{"destination": "d", "version": "1a2b3c", "written": true}]}],
        });
        let patched = server.patch_status(doc, json!({"status": status}));
        assert_eq!(
            patched["status"], status,
            "{}: the API server pruned or changed the keyed layout",
            doc["kind"]
        );
        // Read back as stored, and as the typed view reads it.
        let name = doc["metadata"]["name"].as_str().expect("name");
        let mut get = vec![
            "get",
            doc["kind"].as_str().expect("kind"),
            name,
            "-o",
            "json",
        ];
        if let Some(ns) = doc["metadata"]["namespace"].as_str() {
            get.extend(["-n", ns]);
        }
        let stored: Value =
            serde_json::from_str(&server.kubectl(&get, "")).expect("kubectl prints JSON");
        assert_eq!(stored["status"]["kratix"]["workflows"], keyed_workflows());
        let typed: kratix::api::workflow_status::WorkflowStatuses =
            serde_json::from_value(stored["status"]["kratix"]["workflows"].clone())
                .expect("the typed keyed layout");
        assert_eq!(
            serde_json::to_value(&typed).expect("JSON"),
            keyed_workflows()
        );

        // Kept because the layout is declared, entry by entry (the API server prunes what an
        // entry does not declare), not because anything under it goes.
        let mut undeclared = keyed_workflows();
        undeclared["delete"]["pipelines"][0]["undeclared"] = json!(1);
        let patched = server.patch_status(
            doc,
            json!({"status": {"kratix": {"workflows": undeclared}}}),
        );
        assert_eq!(
            patched["status"]["kratix"]["workflows"],
            keyed_workflows(),
            "{}",
            doc["kind"]
        );
    }
}
