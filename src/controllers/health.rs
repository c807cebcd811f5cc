//! Health: the HealthRecords of a request combined into its `status.healthStatus`, as Kratix's
//! HealthRecord controller does (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/healthrecord_controller.go>):
//! the worst state wins, and each record is listed with its state, last run, source and details.

use serde_json::{json, Map, Value};

use crate::api::object::label;
use crate::api::{labels, HealthRecord, Object, ObjectKey};

use super::health_index::Named;
use super::{lookups, Error, Runtime};

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

/// What a request is: the Promise it belongs to (and that Promise's version), its namespace and
/// name.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub promise: &'a str,
    /// The Promise's `kratix.io/promise-version`, if labelled.
    pub promise_version: Option<&'a str>,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Whether a record counts for the request: it names the request and its Promise, and, when the
/// record is labelled with a Promise version, that is the Promise's current one (a record a
/// health check of another version made says nothing about this one).
pub fn counts(record: &HealthRecord, record_version: Option<&str>, target: &Target) -> bool {
    let names_it = record.data.promise_ref.name == target.promise
        && record
            .data
            .resource_ref
            .as_ref()
            .is_some_and(|r| r.name == target.name && r.namespace == target.namespace);
    let same_version = match record_version {
        None => true,
        Some(v) => target.promise_version == Some(v),
    };
    names_it && same_version
}

/// `status.healthStatus` from the records that count, sorted by namespace and name: the worst
/// state among them (`ready` when there are none) and one entry per record.
pub fn aggregate(records: &[HealthRecord]) -> Value {
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

/// The request's `status.healthStatus` now: `None` when no record counts and it never had one
/// (a request nobody checks has no health), else the aggregate. `version` is the Promise version
/// the request runs with (its binding's, else the Promise's label). `had` is whether its status
/// holds a `healthStatus` already: once the last record goes, the state goes back to `ready`.
pub async fn health_status(
    rt: &Runtime,
    promise: &str,
    version: Option<&str>,
    request: &Object,
    had: bool,
) -> Result<Option<Value>, Error> {
    let target = Target {
        promise,
        promise_version: version,
        namespace: request.metadata.namespace.as_deref().unwrap_or_default(),
        name: request.metadata.name.as_deref().unwrap_or_default(),
    };
    let kind = rt.kind(crate::api::Builtin::HealthRecord);
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
        if counts(&record, label(&obj, labels::PROMISE_VERSION), &target) {
            records.push(record);
        }
    }
    if records.is_empty() && !had {
        return Ok(None);
    }
    Ok(Some(aggregate(&records)))
}

/// The request a HealthRecord is about, so that a record's change (deletion included) wakes it.
pub async fn owners(rt: &Runtime, obj: &Object) -> Result<Vec<ObjectKey>, Error> {
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

    #[test]
    fn only_records_of_the_request_and_its_promise_version_count() {
        let target = Target {
            promise: "redis",
            promise_version: Some("v2"),
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
            promise_version: None,
            ..target
        };
        let cases = [
            (record("x", "ready"), None, target, true),
            (record("x", "ready"), Some("v2"), target, true),
            (record("x", "ready"), Some("v1"), target, false),
            (record("x", "ready"), Some("v1"), unversioned_target, false),
            (record("x", "ready"), None, unversioned_target, true),
            (other_request, None, target, false),
            (other_namespace, None, target, false),
            (other_promise, None, target, false),
            (no_request, None, target, false),
        ];
        for (i, (rec, version, target, want)) in cases.into_iter().enumerate() {
            assert_eq!(counts(&rec, version, &target), want, "case {i}");
        }
    }
}
