//! The Work controller: schedules a Work onto Destinations by creating, updating and deleting
//! its WorkPlacements, then reports its conditions.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::api::object::label;
use crate::api::work::WorkloadGroup;
use crate::api::{finalizers, labels, Object, ObjectKey, API_VERSION};
use crate::scheduler::{self, DestinationInfo, ExistingPlacement, WorkKind};
use crate::store::Selector;

use super::super::{status, Error, Next, Runtime};
use super::conditions::{work_conditions, Placed};
use super::delete::remove_with_reason;
use super::query::{observed_current, placements_of};

fn destination_info(d: &Object) -> DestinationInfo {
    DestinationInfo {
        name: d.metadata.name.clone().unwrap_or_default(),
        labels: d.metadata.labels.clone().unwrap_or_default(),
        strict_match_labels: d
            .data
            .pointer("/spec/strictMatchLabels")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        deleting: d.metadata.deletion_timestamp.is_some(),
    }
}

fn existing_placement(p: &Object) -> ExistingPlacement {
    let text = |pointer: &str| {
        p.data
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ExistingPlacement {
        name: p.metadata.name.clone().unwrap_or_default(),
        group_id: text("/spec/id"),
        destination: text("/spec/targetDestinationName"),
    }
}

fn write_succeeded(p: &Object) -> Option<String> {
    status::condition_status(p, "WriteSucceeded").map(|(s, _, _)| s)
}

/// A Work being deleted: its placements go first (with the Work's removal reason), then its
/// finalizer.
async fn remove(rt: &Runtime, work: &Object, placements: &[Object]) -> Result<Next, Error> {
    let reason = work
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(labels::REMOVAL_REASON))
        .cloned()
        .unwrap_or_else(|| "delete".into());
    let wp_kind = rt.kind(crate::api::Builtin::WorkPlacement);
    for wp in placements {
        remove_with_reason(rt, &wp_kind, wp, &reason).await?;
    }
    if placements.is_empty() {
        status::remove_finalizer(
            rt.cp.as_ref(),
            &rt.kind(crate::api::Builtin::Work),
            work,
            finalizers::WORK,
        )
        .await?;
    }
    Ok(Next::Done)
}

/// Schedules a Work: creates, updates and deletes its WorkPlacements, then reports.
pub async fn reconcile(rt: &Runtime, work: Object) -> Result<Next, Error> {
    let kind = rt.kind(crate::api::Builtin::Work);
    let wp_kind = rt.kind(crate::api::Builtin::WorkPlacement);
    let key = ObjectKey::of(&work);
    let name = key.name.clone();
    let namespace = key.namespace.clone().unwrap_or_default();
    let placements = placements_of(rt, Some(&namespace), &name).await?;
    if work.metadata.deletion_timestamp.is_some() {
        return remove(rt, &work, &placements).await;
    }
    let Some(work) = status::add_finalizer(rt.cp.as_ref(), &kind, &work, finalizers::WORK).await?
    else {
        return Ok(Next::Done);
    };
    let typed: crate::api::Work = crate::api::object::to_typed(&work)
        .map_err(|source| Error::malformed(&work, "Work", source))?;
    let destinations: Vec<DestinationInfo> = rt
        .cp
        .list(
            &rt.kind(crate::api::Builtin::Destination),
            None,
            &Selector::everything(),
        )
        .await?
        .iter()
        .map(destination_info)
        .collect();
    let existing: Vec<ExistingPlacement> = placements
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(existing_placement)
        .collect();
    let work_kind = if typed.spec.is_dependency() {
        WorkKind::Dependency
    } else {
        WorkKind::Resource
    };
    let decision = scheduler::schedule(
        &name,
        work_kind,
        &typed.spec.workload_groups,
        &destinations,
        &existing,
    );
    let pipeline = label(&work, labels::PIPELINE_NAME)
        .unwrap_or_default()
        .to_string();
    for (group, g) in typed.spec.workload_groups.iter().zip(&decision.groups) {
        for dest in &g.targets {
            let wp_name = scheduler::placement_name(&name, dest, &group.id);
            let misplaced = existing
                .iter()
                .any(|p| p.name == wp_name && g.misplaced.contains(&p.name));
            let placement = Placement {
                group,
                destination: dest,
                name: &wp_name,
                pipeline: &pipeline,
                misplaced,
            };
            upsert_placement(rt, &work, &typed, &placement).await?;
        }
    }
    for wp in placements.iter().filter(|p| {
        decision
            .delete
            .iter()
            .any(|d| Some(d) == p.metadata.name.as_ref())
    }) {
        status::delete_if_present(rt.cp.as_ref(), &wp_kind, wp).await?;
    }
    // Report: Ready only once every placement is written for its current generation.
    let placements = placements_of(rt, Some(&namespace), &name).await?;
    let unscheduled = decision.unscheduled_group_ids();
    let conditions = work_conditions(&Placed {
        unscheduled: &unscheduled,
        failing: placements
            .iter()
            .any(|p| write_succeeded(p).as_deref() == Some("False")),
        misplaced: decision.has_misplaced(),
        all_written: placements
            .iter()
            .all(|p| observed_current(p) && write_succeeded(p).as_deref() == Some("True")),
    });
    let generation = work.metadata.generation;
    let groups = typed.spec.workload_groups.len();
    let created = groups - unscheduled.len();
    status::update_status(rt.cp.as_ref(), &kind, &key, |_, s| {
        status::set_conditions(s, conditions.clone());
        status::set_field(s, "observedGeneration", json!(generation));
        status::set_field(s, "workPlacements", json!(groups));
        status::set_field(s, "workPlacementsCreated", json!(created));
    })
    .await?;
    Ok(Next::Done)
}

/// One WorkPlacement as scheduled: a workload group on a Destination.
struct Placement<'a> {
    group: &'a WorkloadGroup,
    destination: &'a str,
    name: &'a str,
    pipeline: &'a str,
    misplaced: bool,
}

async fn upsert_placement(
    rt: &Runtime,
    work: &Object,
    typed: &crate::api::Work,
    placement: &Placement<'_>,
) -> Result<(), Error> {
    let kind = rt.kind(crate::api::Builtin::WorkPlacement);
    let namespace = work.metadata.namespace.clone().unwrap_or_default();
    let work_name = work.metadata.name.clone().unwrap_or_default();
    let group = placement.group;
    let mut wp_labels = BTreeMap::from([
        (labels::WORK.to_string(), work_name.clone()),
        (labels::WORKLOAD_GROUP_ID.to_string(), group.id.clone()),
        (
            labels::TARGET_DESTINATION.to_string(),
            placement.destination.to_string(),
        ),
        (
            labels::PIPELINE_NAME.to_string(),
            placement.pipeline.to_string(),
        ),
    ]);
    if placement.misplaced {
        wp_labels.insert(labels::MISPLACED.into(), "true".into());
    }
    let spec = json!({
        "targetDestinationName": placement.destination,
        "workloads": group.workloads,
        "promiseName": typed.spec.promise_name,
        "resourceName": typed.spec.resource_name,
        "id": group.id,
        "generation": work.metadata.generation.unwrap_or(0),
    });
    match rt.cp.get(&kind, Some(&namespace), placement.name).await? {
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => Ok(()),
        Some(existing) => {
            status::update_object(rt.cp.as_ref(), &kind, &ObjectKey::of(&existing), |o| {
                if let Some(map) = o.data.as_object_mut() {
                    map.insert("spec".into(), spec.clone());
                }
                o.metadata.labels = Some(wp_labels.clone());
            })
            .await?;
            Ok(())
        }
        None => {
            let wp: Object = serde_json::from_value(json!({
                "apiVersion": API_VERSION,
                "kind": "WorkPlacement",
                "metadata": {
                    "name": placement.name,
                    "namespace": namespace,
                    "labels": wp_labels,
                    "finalizers": [finalizers::WORK_PLACEMENT],
                },
                "spec": spec,
            }))
            .map_err(|source| Error::Malformed {
                key: ObjectKey::new(
                    crate::api::GROUP,
                    "WorkPlacement",
                    Some(&namespace),
                    placement.name,
                ),
                kind: "WorkPlacement".into(),
                source,
            })?;
            match rt.cp.create(&kind, &wp).await {
                Ok(_) | Err(crate::store::Error::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
    }
}
