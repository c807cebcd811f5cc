//! The Work controller: schedules a Work onto Destinations by creating, updating and deleting
//! its WorkPlacements, then reports its conditions.

use std::collections::BTreeMap;

use crate::api::destination_paths::{self, PathRefusal};
use crate::api::object::{label, to_typed};
use crate::api::work::WorkloadGroup;
use crate::api::{
    condition, finalizers, labels, ConditionStatus, Destination, Object, ObjectKey, WorkPlacement,
    WorkPlacementSpec, WorkPlacementStatus, WorkStatus,
};
use crate::controllers::work::schedule;
use crate::controllers::work::schedule::DestinationInfo;
use crate::controllers::work::schedule::ExistingPlacement;
use crate::controllers::work::schedule::WorkKind;
use crate::platform::builtin;

use crate::controllers::placement;
use crate::controllers::work::conditions::status_due;
use crate::controllers::work::conditions::work_conditions;
use crate::controllers::work::conditions::Placed;
use crate::controllers::work::delete::remove_with_reason;
use crate::controllers::work::query::placement_written;
use crate::controllers::work::query::placements_of;
use crate::controllers::{status, Error, Next, Runtime};

fn destination_info(d: &Object, refused: &BTreeMap<String, PathRefusal>) -> DestinationInfo {
    let name = d.metadata.name.clone().unwrap_or_default();
    DestinationInfo {
        refused: refused.contains_key(&name),
        name,
        labels: d.metadata.labels.clone().unwrap_or_default(),
        strict_match_labels: to_typed::<Destination>(d).is_ok_and(|d| d.spec.strict_match_labels),
        deleting: d.metadata.deletion_timestamp.is_some(),
    }
}

fn existing_placement(p: &Object) -> ExistingPlacement {
    let spec = to_typed::<WorkPlacement>(p)
        .map(|typed| typed.spec)
        .unwrap_or_default();
    ExistingPlacement {
        name: p.metadata.name.clone().unwrap_or_default(),
        group_id: spec.id,
        destination: spec.target_destination_name,
    }
}

fn write_succeeded(p: &Object) -> Option<ConditionStatus> {
    let s: WorkPlacementStatus = status::status_or_default(p);
    condition::find(&s.conditions, crate::api::words::types::WRITE_SUCCEEDED).map(|c| c.status)
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
    let wp_kind = builtin(crate::api::Builtin::WorkPlacement);
    for wp in placements {
        remove_with_reason(rt, &wp_kind, wp, &reason).await?;
    }
    if placements.is_empty() {
        status::remove_finalizer(
            rt.cp.as_ref(),
            &builtin(crate::api::Builtin::Work),
            work,
            finalizers::WORK,
        )
        .await?;
    }
    Ok(Next::Done)
}

/// Schedules a Work: creates, updates and deletes its WorkPlacements, then reports.
pub(crate) async fn reconcile(rt: &Runtime, work: Object) -> Result<Next, Error> {
    let kind = builtin(crate::api::Builtin::Work);
    let wp_kind = builtin(crate::api::Builtin::WorkPlacement);
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
    let destination_objects = rt.destinations.all(rt).await?;
    let refused = destination_paths::refusals(&destination_objects);
    let destinations: Vec<DestinationInfo> = destination_objects
        .iter()
        .map(|d| destination_info(d, &refused))
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
    let decision = schedule::schedule(
        &name,
        work_kind,
        &typed.spec.workload_groups,
        &destinations,
        &existing,
    );
    let pipeline = label(&work, labels::PIPELINE_NAME)
        .unwrap_or_default()
        .to_string();
    // Whether any placement was written: only then are they read again for the report.
    let mut wrote = false;
    for (group, g) in typed.spec.workload_groups.iter().zip(&decision.groups) {
        for dest in &g.targets {
            let wp_name = schedule::placement_name(&name, dest, &group.id);
            let misplaced = existing
                .iter()
                .any(|p| p.name == wp_name && g.misplaced.contains(&p.name));
            let placement = Placement {
                group,
                destination: dest,
                destination_object: destination_objects
                    .iter()
                    .find(|d| d.metadata.name.as_deref() == Some(dest.as_str())),
                name: &wp_name,
                pipeline: &pipeline,
                misplaced,
            };
            let existing = placements
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(wp_name.as_str()));
            wrote |= upsert_placement(rt, &work, &typed, &placement, existing).await?;
        }
    }
    for wp in placements.iter().filter(|p| {
        decision
            .delete
            .iter()
            .any(|d| Some(d) == p.metadata.name.as_ref())
    }) {
        status::delete_if_present(rt.cp.as_ref(), &wp_kind, wp).await?;
        wrote = true;
    }
    // Report: Ready only once every placement is written for its current generation.
    let placements = if wrote {
        placements_of(rt, Some(&namespace), &name).await?
    } else {
        placements
    };
    let unscheduled = decision.unscheduled_group_ids();
    let placed = Placed {
        unscheduled: &unscheduled,
        failing: placements
            .iter()
            .any(|p| write_succeeded(p) == Some(ConditionStatus::False)),
        misplaced: decision.has_misplaced(),
        all_written: placements.iter().all(placement_written),
    };
    let groups = typed.spec.workload_groups.len();
    if !status_due(groups, &placed) {
        return Ok(Next::Done);
    }
    let conditions = work_conditions(&placed);
    let landings = super::landed::landings(&placements);
    let generation = work.metadata.generation;
    let created = groups - unscheduled.len();
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let stored = status::update_typed_status_of(
        rt.cp.as_ref(),
        &kind,
        &work,
        "Work",
        |s: &mut WorkStatus| {
            status::merge_conditions(&mut s.conditions, conditions.clone());
            s.observed_generation = generation;
            s.work_placements = Some(count(groups));
            s.work_placements_created = Some(count(created));
            s.landings = landings.clone();
        },
    )
    .await?;
    // Its request hears of the write; the Work itself decided it from its placements, which
    // wake it when they change.
    if let Some(stored) =
        stored.filter(|s| s.metadata.resource_version != work.metadata.resource_version)
    {
        rt.wrote_own_status(&stored);
    }
    Ok(Next::Done)
}

/// One WorkPlacement as scheduled: a workload group on a Destination.
struct Placement<'a> {
    group: &'a WorkloadGroup,
    destination: &'a str,
    /// The Destination as the scheduler saw it.
    destination_object: Option<&'a Object>,
    name: &'a str,
    pipeline: &'a str,
    misplaced: bool,
}

/// Creates the placement or brings it in line with the Work; whether anything was written.
/// `listed` is the placement as this reconcile listed it: when it says the same already,
/// nothing is read again.
async fn upsert_placement(
    rt: &Runtime,
    work: &Object,
    typed: &crate::api::Work,
    placement: &Placement<'_>,
    listed: Option<&Object>,
) -> Result<bool, Error> {
    let kind = builtin(crate::api::Builtin::WorkPlacement);
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
    let spec = WorkPlacementSpec {
        target_destination_name: placement.destination.to_string(),
        workloads: group.workloads.clone(),
        promise_name: typed.spec.promise_name.clone(),
        resource_name: typed.spec.resource_name.clone(),
        id: group.id.clone(),
        generation: work.metadata.generation.unwrap_or(0),
    };
    // The spec is made here: a failure to serialize it is ours, not a stored object's.
    let unserializable = |source| Error::Serialize {
        key: ObjectKey::new(
            crate::api::GROUP,
            "WorkPlacement",
            Some(&namespace),
            placement.name,
        ),
        kind: "WorkPlacement".into(),
        source,
    };
    if let Some(listed) = listed {
        let same_spec = listed.data.get("spec") == Some(&spec.stored().map_err(unserializable)?);
        if same_spec && listed.metadata.labels.as_ref() == Some(&wp_labels) {
            return Ok(false);
        }
    }
    match rt.cp.get(&kind, Some(&namespace), placement.name).await? {
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => Ok(false),
        Some(existing) => {
            let spec = spec.stored().map_err(unserializable)?;
            status::update_object(rt.cp.as_ref(), &kind, &ObjectKey::of(&existing), |o| {
                if let Some(map) = o.data.as_object_mut() {
                    map.insert("spec".into(), spec.clone());
                }
                o.metadata.labels = Some(wp_labels.clone());
            })
            .await?;
            Ok(true)
        }
        None => {
            let stored = spec.stored().map_err(unserializable)?;
            let mut typed_wp = WorkPlacement::new(placement.name, spec);
            typed_wp.metadata.namespace = Some(namespace.clone());
            typed_wp.metadata.labels = Some(wp_labels);
            typed_wp.metadata.finalizers = Some(vec![finalizers::WORK_PLACEMENT.to_string()]);
            let mut wp = crate::api::object::from_typed_with_spec(&typed_wp, stored)
                .map_err(unserializable)?;
            // Made owning the files its first write will put, that write needs no record first.
            if let Some(dest) = placement.destination_object {
                placement::own_files_at_creation(rt, dest, &mut wp, work).await?;
            }
            match rt.cp.create_with_status(&kind, &wp).await {
                Ok(_) | Err(crate::store::Error::AlreadyExists { .. }) => Ok(true),
                Err(e) => Err(e.into()),
            }
        }
    }
}
