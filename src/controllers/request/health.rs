//! Health: the HealthRecords of a request combined into its `status.healthStatus`, as Kratix's
//! HealthRecord controller does (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/healthrecord_controller.go>):
//! the worst state wins, and each record is listed with its state, last run, source and details.
//! Only records of the Promise version the request runs with count, and the health says which
//! version it describes; a request that moves to another version is `unknown` until a record
//! of that version arrives, as Kratix's versioned health has it (`data.promiseVersion` on the
//! record, `promiseVersion` on the health, its `{state, promiseVersion}` on the binding).

use serde_json::{json, Map, Value};

use crate::api::versions::{run_version, BindingHealth};
use crate::api::{HealthRecord, Object, ObjectKey};
use crate::platform::builtin;

use crate::controllers::request::health_index::Named;
use crate::controllers::{lookups, Error, Runtime};

/// How bad each state is, worst first, as Kratix ranks them; an unknown word counts as worst.
fn rank(state: &str) -> u8 {
    match state {
        "unhealthy" => 1,
        "degraded" => 2,
        "unknown" => 3,
        "healthy" => 4,
        "ready" => 5,
        _ => 0,
    }
}

/// What a request is: the Promise it belongs to, the Promise version it runs with, its
/// namespace and name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) promise: &'a str,
    /// The version the request runs with (`KRATIX_PROMISE_VERSION` of its pipelines: its
    /// binding's revision, or `not-set` for an unversioned Promise).
    pub(crate) promise_version: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
}

/// Whether a record counts for the request: it names the request and its Promise, and its
/// `data.promiseVersion`, when it has one, is the version the request runs with (a record a
/// health check of another version made says nothing about this one; a record without a
/// version, from a health check that does not know versions, always counts).
pub(crate) fn counts(record: &HealthRecord, target: &Target) -> bool {
    let names_it = record.data.promise_ref.name == target.promise
        && record
            .data
            .resource_ref
            .as_ref()
            .is_some_and(|r| r.name == target.name && r.namespace == target.namespace);
    let same_version = match record.data.promise_version.as_deref() {
        None | Some("") => true,
        Some(v) => v == target.promise_version,
    };
    names_it && same_version
}

/// `status.healthStatus` from the records that count, sorted by namespace and name: the worst
/// state among them (`ready` when there are none) and one entry per record.
pub(crate) fn aggregate(records: &[HealthRecord]) -> Value {
    let mut sorted: Vec<&HealthRecord> = records.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    let mut state = "ready";
    let mut entries = Vec::new();
    for record in sorted {
        if rank(&record.data.state) < rank(state) {
            state = &record.data.state;
        }
        let mut entry = Map::new();
        entry.insert("state".into(), json!(record.data.state));
        entry.insert("lastRun".into(), json!(record.data.last_run.unwrap_or(0)));
        entry.insert(
            "source".into(),
            json!({
                "name": record.metadata.name.clone().unwrap_or_default(),
                "namespace": record.metadata.namespace.clone().unwrap_or_default(),
            }),
        );
        if let Some(details) = &record.data.details {
            entry.insert("details".into(), details.clone());
        }
        entries.push(Value::Object(entry));
    }
    let mut out = Map::new();
    out.insert("state".into(), json!(state));
    if !entries.is_empty() {
        out.insert("healthRecords".into(), Value::Array(entries));
    }
    Value::Object(out)
}

/// The request's `status.healthStatus` after `prior` (what it says now), given the version the
/// request runs with (`None`: its Promise has no versions) and the records that count:
/// - records count: their aggregate, at `version`;
/// - none, and nobody ever checked the request: no health;
/// - none, and the request now runs at another version than its health describes: `unknown`
///   at the new version, until a record of that version arrives (as Kratix's status-writer
///   resets it when a configure workflow runs at a version);
/// - none, still waiting for the first record of the version (`unknown`, nothing listed):
///   still `unknown`;
/// - none, once there were some at this version: `ready` again.
pub(crate) fn next_health(
    prior: Option<&Value>,
    version: Option<&str>,
    counted: &[HealthRecord],
) -> Option<Value> {
    let at_version = |mut health: Value| {
        if let (Some(v), Some(map)) = (version, health.as_object_mut()) {
            map.insert("promiseVersion".into(), json!(v));
        }
        health
    };
    if !counted.is_empty() {
        return Some(at_version(aggregate(counted)));
    }
    let prior = prior?;
    let prior_version = prior.get("promiseVersion").and_then(Value::as_str);
    let waiting = prior.get("state").and_then(Value::as_str) == Some("unknown")
        && prior
            .get("healthRecords")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    let state = if prior_version != version || waiting {
        "unknown"
    } else {
        "ready"
    };
    Some(at_version(json!({ "state": state })))
}

/// The binding's copy of the request's health: its state and the version it describes.
pub(crate) fn binding_health(health: &Value) -> Option<BindingHealth> {
    Some(BindingHealth {
        state: health.get("state")?.as_str()?.to_string(),
        promise_version: health
            .get("promiseVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

/// The request's `status.healthStatus` now (see [`next_health`]). `version` is the Promise
/// version the request runs with (`None` for an unversioned Promise).
pub(crate) async fn health_status(
    rt: &Runtime,
    promise: &str,
    version: Option<&str>,
    request: &Object,
) -> Result<Option<Value>, Error> {
    let target = Target {
        promise,
        promise_version: run_version(version),
        namespace: request.metadata.namespace.as_deref().unwrap_or_default(),
        name: request.metadata.name.as_deref().unwrap_or_default(),
    };
    let kind = builtin(crate::api::Builtin::HealthRecord);
    let mut records = Vec::new();
    // Kratix looks at every namespace: a record need not live beside its request. The index
    // names the records about this request, wherever they live.
    let named = Named {
        promise: promise.to_string(),
        namespace: target.namespace.to_string(),
        name: target.name.to_string(),
    };
    for key in rt.health_records.records_of(&named) {
        let Some(obj) = rt
            .cp
            .get(&kind, key.namespace.as_deref(), &key.name)
            .await?
        else {
            continue; // gone: its deletion reaches the index through the change feed
        };
        let Ok(record) = crate::api::object::to_typed::<HealthRecord>(&obj) else {
            continue; // not ours to judge: a malformed record counts for nothing
        };
        if counts(&record, &target) {
            records.push(record);
        }
    }
    let prior = request.data.pointer("/status/healthStatus");
    Ok(next_health(prior, version, &records))
}

/// The request a HealthRecord is about, so that a record's change (deletion included) wakes it.
pub(crate) async fn owners(rt: &Runtime, obj: &Object) -> Result<Vec<ObjectKey>, Error> {
    let Ok(record) = crate::api::object::to_typed::<HealthRecord>(obj) else {
        return Ok(vec![]);
    };
    let Some(resource) = &record.data.resource_ref else {
        return Ok(vec![]);
    };
    let Some(kind) = lookups::request_kind_of(rt, &record.data.promise_ref.name).await? else {
        return Ok(vec![]);
    };
    Ok(vec![ObjectKey::new(
        &kind.group,
        &kind.kind,
        Some(&resource.namespace),
        &resource.name,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::health_record::{HealthRecordData, PromiseRef, ResourceRef};

    fn record(name: &str, state: &str) -> HealthRecord {
        HealthRecord {
            metadata: kube::core::ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            data: HealthRecordData {
                promise_ref: PromiseRef {
                    name: "redis".into(),
                },
                resource_ref: Some(ResourceRef {
                    name: "cache".into(),
                    namespace: "default".into(),
                    generation: None,
                }),
                state: state.into(),
                last_run: Some(100),
                promise_version: None,
                details: None,
            },
        }
    }

    #[test]
    fn the_worst_state_wins() {
        let cases: [(&[&str], &str); 9] = [
            (&[], "ready"),
            (&["ready"], "ready"),
            (&["healthy", "ready"], "healthy"),
            (&["ready", "unknown", "healthy"], "unknown"),
            (&["healthy", "degraded", "unknown"], "degraded"),
            (&["degraded", "unhealthy", "ready"], "unhealthy"),
            (&["unhealthy", "degraded"], "unhealthy"),
            (&["ready", "ready"], "ready"),
            (&["ready", "sideways"], "sideways"),
        ];
        for (states, want) in cases {
            let records: Vec<HealthRecord> = states
                .iter()
                .enumerate()
                .map(|(i, s)| record(&format!("r{i}"), s))
                .collect();
            let got = aggregate(&records);
            assert_eq!(got["state"], json!(want), "{states:?}");
            let listed = got["healthRecords"].as_array().map_or(0, Vec::len);
            assert_eq!(listed, states.len(), "{states:?}");
        }
    }

    #[test]
    fn entries_name_their_source_sorted_with_details() {
        let mut b = record("b", "healthy");
        b.data.details = Some(json!({"checks": 3}));
        let a = record("a", "degraded");
        let got = aggregate(&[b, a]);
        assert_eq!(
            got,
            json!({"state": "degraded", "healthRecords": [
                {"state": "degraded", "lastRun": 100,
                 "source": {"name": "a", "namespace": "default"}},
                {"state": "healthy", "lastRun": 100,
                 "source": {"name": "b", "namespace": "default"}, "details": {"checks": 3}},
            ]})
        );
    }

    fn at(version: &str) -> HealthRecord {
        let mut r = record("x", "ready");
        r.data.promise_version = Some(version.into());
        r
    }

    #[test]
    fn only_records_of_the_request_and_its_promise_version_count() {
        let target = Target {
            promise: "redis",
            promise_version: "v2",
            namespace: "default",
            name: "cache",
        };
        let other_request = {
            let mut r = record("x", "ready");
            r.data.resource_ref = Some(ResourceRef {
                name: "other".into(),
                namespace: "default".into(),
                generation: None,
            });
            r
        };
        let other_namespace = {
            let mut r = record("x", "ready");
            r.data.resource_ref = Some(ResourceRef {
                name: "cache".into(),
                namespace: "team-a".into(),
                generation: None,
            });
            r
        };
        let other_promise = {
            let mut r = record("x", "ready");
            r.data.promise_ref.name = "postgres".into();
            r
        };
        let no_request = {
            let mut r = record("x", "ready");
            r.data.resource_ref = None;
            r
        };
        let unversioned_target = Target {
            promise_version: "not-set",
            ..target
        };
        let cases = [
            ("no version: always", record("x", "ready"), target, true),
            ("empty version: always", at(""), target, true),
            ("the request's version", at("v2"), target, true),
            ("another version", at("v1"), target, false),
            ("versions are exact", at("V2"), target, false),
            (
                "a version, unversioned Promise",
                at("v1"),
                unversioned_target,
                false,
            ),
            (
                "the placeholder, unversioned",
                at("not-set"),
                unversioned_target,
                true,
            ),
            (
                "no version, unversioned",
                record("x", "ready"),
                unversioned_target,
                true,
            ),
            ("another request", other_request, target, false),
            ("another namespace", other_namespace, target, false),
            ("another Promise", other_promise, target, false),
            ("no request", no_request, target, false),
        ];
        for (name, rec, target, want) in cases {
            assert_eq!(counts(&rec, &target), want, "{name}");
        }
    }

    #[test]
    fn health_describes_a_version_and_is_unknown_until_a_record_of_a_new_one_arrives() {
        let degraded = [record("a", "degraded")];
        let listed = json!([{"state": "degraded", "lastRun": 100,
            "source": {"name": "a", "namespace": "default"}}]);
        let checked_v1 = json!({"state": "healthy", "promiseVersion": "v1",
            "healthRecords": [{"state": "healthy"}]});
        let ready_v1 = json!({"state": "ready", "promiseVersion": "v1"});
        let waiting_v2 = json!({"state": "unknown", "promiseVersion": "v2"});
        let unversioned = json!({"state": "healthy", "healthRecords": [{"state": "healthy"}]});
        let records_gone_unknown = json!({"state": "unknown", "promiseVersion": "v1", "healthRecords": [{"state": "unknown"}]});
        type Case<'a> = (
            &'a str,
            Option<&'a Value>,
            Option<&'a str>,
            &'a [HealthRecord],
            Option<Value>,
        );
        let cases: Vec<Case> = vec![
            ("nobody checked it", None, Some("v1"), &[], None),
            ("nobody checked it, unversioned", None, None, &[], None),
            (
                "the first record",
                None,
                Some("v1"),
                &degraded,
                Some(json!({"state": "degraded", "promiseVersion": "v1", "healthRecords": listed})),
            ),
            (
                "unversioned: no version written",
                None,
                None,
                &degraded,
                Some(json!({"state": "degraded", "healthRecords": listed})),
            ),
            (
                "records gone: ready",
                Some(&checked_v1),
                Some("v1"),
                &[],
                Some(ready_v1.clone()),
            ),
            (
                "records gone, unversioned: ready",
                Some(&unversioned),
                None,
                &[],
                Some(json!({"state": "ready"})),
            ),
            (
                "records of unknown state gone: ready",
                Some(&records_gone_unknown),
                Some("v1"),
                &[],
                Some(ready_v1.clone()),
            ),
            (
                "another version: unknown",
                Some(&checked_v1),
                Some("v2"),
                &[],
                Some(waiting_v2.clone()),
            ),
            (
                "ready, another version: unknown",
                Some(&ready_v1),
                Some("v2"),
                &[],
                Some(waiting_v2.clone()),
            ),
            (
                "still waiting",
                Some(&waiting_v2),
                Some("v2"),
                &[],
                Some(waiting_v2.clone()),
            ),
            (
                "a record of the new version",
                Some(&waiting_v2),
                Some("v2"),
                &degraded,
                Some(json!({"state": "degraded", "promiseVersion": "v2", "healthRecords": listed})),
            ),
            (
                "the Promise got versions",
                Some(&unversioned),
                Some("v1"),
                &[],
                Some(json!({"state": "unknown", "promiseVersion": "v1"})),
            ),
            (
                "back to the version the health describes",
                Some(&waiting_v2),
                Some("v1"),
                &[],
                Some(json!({"state": "unknown", "promiseVersion": "v1"})),
            ),
        ];
        for (name, prior, version, counted, want) in cases {
            assert_eq!(next_health(prior, version, counted), want, "{name}");
        }
    }

    #[test]
    fn bindings_carry_the_state_and_version_of_the_health() {
        let cases = [
            (
                json!({"state": "degraded", "promiseVersion": "v2", "healthRecords": []}),
                Some(("degraded", "v2")),
            ),
            (json!({"state": "ready"}), Some(("ready", ""))),
            (json!({"promiseVersion": "v2"}), None),
            (json!({"state": 3}), None),
        ];
        for (health, want) in cases {
            let got = binding_health(&health);
            let got = got
                .as_ref()
                .map(|h| (h.state.as_str(), h.promise_version.as_str()));
            assert_eq!(got, want, "{health}");
        }
    }
}
