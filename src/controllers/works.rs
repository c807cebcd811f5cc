//! Works: turning a pipeline's output (or a Promise's static dependencies) into the pipeline's
//! Work, scheduling Works onto Destinations as WorkPlacements, and reporting whether they are
//! written.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::api::object::label;
use crate::api::pipeline::Pipeline;
use crate::api::work::WorkloadGroup;
use crate::api::{
    labels, Condition, ConditionStatus, Object, ObjectKey, Promise, API_VERSION, SYSTEM_NAMESPACE,
};
use crate::pipeline::{Metadata, Output};
use crate::scheduler::{self, DestinationInfo, ExistingPlacement, WorkKind};
use crate::store::Selector;
use crate::workflow::{WorkflowType, WorksState};

use super::workflows::Subject;
use super::{now_rfc3339, status, Error, Next, Runtime};

pub const FINALIZER: &str = "kratix.io/work-cleanup";
/// Why a Work (and so its placements' files) is being removed: `configure` when its pipeline left
/// the workflow, `delete` when its object is deleted. Becomes the commit's `Kratix-Workflow`.
pub const REMOVAL_REASON: &str = "kratix.io/removal-reason";

fn selector(pairs: &[(&str, &str)]) -> Selector {
    Selector::from_labels(pairs.iter().copied())
}

/// Creates or updates the Work of one successful configure run.
pub async fn upsert_from_run(
    rt: &Runtime,
    run: &Object,
    promise: &Promise,
    output: &Output,
    metadata: &Metadata,
) -> Result<(), Error> {
    let spec = run.data.get("spec").cloned().unwrap_or_default();
    let text = |f: &str| {
        spec.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (promise_name, pipeline_name, resource) = (
        text("promiseName"),
        text("pipelineName"),
        text("resourceName"),
    );
    let workflow_type = if text("workflowType") == "resource" {
        WorkflowType::Resource
    } else {
        WorkflowType::Promise
    };
    let promise_selectors: Vec<BTreeMap<String, String>> = promise
        .spec
        .destination_selectors
        .iter()
        .map(|s| s.match_labels.clone())
        .collect();
    let groups = crate::works::workload_groups(
        output,
        &metadata.destination_selectors,
        &promise_selectors,
        workflow_type,
    )
    .map_err(|e| Error::Run {
        run: run.metadata.name.clone().unwrap_or_default(),
        reason: super::ErrorChain(&e).to_string(),
    })?;
    let namespace = run
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| SYSTEM_NAMESPACE.into());
    let (name, work_type) = match workflow_type {
        WorkflowType::Promise => (format!("{promise_name}-{pipeline_name}"), "promise"),
        WorkflowType::Resource => (
            format!("{promise_name}-{resource}-{pipeline_name}"),
            "resource",
        ),
    };
    let mut work_labels = vec![
        (labels::PROMISE_NAME, promise_name.as_str()),
        (labels::WORK_TYPE, work_type),
        (labels::PIPELINE_NAME, pipeline_name.as_str()),
    ];
    if workflow_type == WorkflowType::Resource {
        work_labels.push((labels::RESOURCE_NAME, resource.as_str()));
    }
    upsert_work(
        rt,
        &namespace,
        &name,
        &work_labels,
        &promise_name,
        &resource,
        &groups,
    )
    .await
}

/// Finds the Work by its labels (Kratix's identity) and replaces its spec, or creates it.
async fn upsert_work(
    rt: &Runtime,
    namespace: &str,
    name: &str,
    work_labels: &[(&str, &str)],
    promise_name: &str,
    resource: &str,
    groups: &[WorkloadGroup],
) -> Result<(), Error> {
    let kind = rt.kind("Work");
    let spec = json!({
        "promiseName": promise_name,
        "resourceName": resource,
        "workloadGroups": groups,
        // Changes on every run, as in Kratix, so every run re-checks the stores (restoring files
        // of ours that someone changed) even when the output is identical.
        "lastExecutionTimestamp": now_rfc3339(),
    });
    let existing = rt
        .cp
        .list(&kind, Some(namespace), &selector(work_labels))
        .await?
        .into_iter()
        .find(|w| w.metadata.deletion_timestamp.is_none());
    match existing {
        Some(work) => {
            status::update_object(rt.cp.as_ref(), &kind, &ObjectKey::of(&work), |w| {
                if let Some(map) = w.data.as_object_mut() {
                    map.insert("spec".into(), spec.clone());
                }
            })
            .await?;
        }
        None => {
            let label_map: serde_json::Map<String, Value> = work_labels
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            let work: Object = serde_json::from_value(json!({
                "apiVersion": API_VERSION,
                "kind": "Work",
                "metadata": {"name": name, "namespace": namespace, "labels": label_map},
                "spec": spec,
            }))
            .map_err(|e| Error::Run {
                run: name.to_string(),
                reason: e.to_string(),
            })?;
            match rt.cp.create(&kind, &work).await {
                Ok(_) => {}
                // A Work of that name is still being deleted; the next run will create it.
                Err(crate::store::Error::AlreadyExists { .. }) => {
                    return Err(Error::Run {
                        run: name.to_string(),
                        reason: format!("Work {namespace}/{name} is still being deleted"),
                    })
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Keeps the Promise's static-dependency Work in line with `spec.dependencies`.
pub async fn sync_static_dependencies(rt: &Runtime, promise: &Promise) -> Result<(), Error> {
    let name = promise.metadata.name.clone().unwrap_or_default();
    let work_labels = [
        (labels::PROMISE_NAME, name.as_str()),
        (labels::WORK_TYPE, "static-dependency"),
    ];
    if promise.spec.dependencies.is_empty() {
        let existing = rt
            .cp
            .list(
                &rt.kind("Work"),
                Some(SYSTEM_NAMESPACE),
                &selector(&work_labels),
            )
            .await?;
        return delete_works(rt, &existing, "configure").await;
    }
    let promise_selectors: Vec<BTreeMap<String, String>> = promise
        .spec
        .destination_selectors
        .iter()
        .map(|s| s.match_labels.clone())
        .collect();
    let group = crate::works::static_dependencies_group(
        &name,
        &promise.spec.dependencies,
        &promise_selectors,
    )
    .map_err(|e| Error::Malformed {
        key: ObjectKey::new(crate::api::GROUP, "Promise", None, &name),
        kind: "Promise".into(),
        reason: super::ErrorChain(&e).to_string(),
    })?;
    // Only rewrite when the content changed: the timestamp would otherwise make every Promise
    // reconcile a new Work generation.
    let existing = rt
        .cp
        .list(
            &rt.kind("Work"),
            Some(SYSTEM_NAMESPACE),
            &selector(&work_labels),
        )
        .await?;
    if let Some(work) = existing.first() {
        let same = work.data.pointer("/spec/workloadGroups")
            == serde_json::to_value([&group]).ok().as_ref();
        if same {
            return Ok(());
        }
    }
    upsert_work(
        rt,
        SYSTEM_NAMESPACE,
        &format!("{name}-static-deps"),
        &work_labels,
        &name,
        "",
        &[group],
    )
    .await
}

/// The Works a Promise's or request's workflow produced.
pub async fn works_of(rt: &Runtime, subject: &Subject) -> Result<Vec<Object>, Error> {
    let mut pairs = vec![
        (
            labels::PROMISE_NAME.to_string(),
            subject.promise_name.clone(),
        ),
        (
            labels::WORK_TYPE.to_string(),
            subject.workflow_type.as_str().to_string(),
        ),
    ];
    if subject.workflow_type == WorkflowType::Resource {
        pairs.push((labels::RESOURCE_NAME.to_string(), subject.name()));
    }
    let sel = Selector::from_labels(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut works = rt
        .cp
        .list(&rt.kind("Work"), Some(&subject.run_namespace()), &sel)
        .await?;
    if subject.workflow_type == WorkflowType::Promise {
        let statics = rt
            .cp
            .list(
                &rt.kind("Work"),
                Some(SYSTEM_NAMESPACE),
                &selector(&[
                    (labels::PROMISE_NAME, &subject.promise_name),
                    (labels::WORK_TYPE, "static-dependency"),
                ]),
            )
            .await?;
        works.extend(statics);
    }
    Ok(works)
}

/// Deletes the Works of pipelines no longer in the workflow. Returns whether any was deleted.
pub async fn delete_obsolete(
    rt: &Runtime,
    works: &[Object],
    pipelines: &[Pipeline],
) -> Result<bool, Error> {
    let current: Vec<String> = pipelines.iter().map(|p| p.name().to_string()).collect();
    let obsolete: Vec<Object> = works
        .iter()
        .filter(|w| label(w, labels::WORK_TYPE) != Some("static-dependency"))
        .filter(|w| {
            let pipeline = label(w, labels::PIPELINE_NAME)
                .unwrap_or_default()
                .to_string();
            !crate::workflow::obsolete_pipelines(&[pipeline], &current).is_empty()
        })
        .filter(|w| w.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect();
    delete_works(rt, &obsolete, "configure").await?;
    Ok(!obsolete.is_empty())
}

/// Marks why the Works go, then deletes them (their placements' files follow).
pub async fn delete_works(rt: &Runtime, works: &[Object], reason: &str) -> Result<(), Error> {
    let kind = rt.kind("Work");
    for work in works {
        remove_with_reason(rt, &kind, work, reason).await?;
    }
    Ok(())
}

/// Records why a Work or WorkPlacement goes ([`REMOVAL_REASON`]), then deletes it. Objects
/// already being deleted keep the reason they were given.
pub async fn remove_with_reason(
    rt: &Runtime,
    kind: &crate::api::KindInfo,
    obj: &Object,
    reason: &str,
) -> Result<(), Error> {
    if obj.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    status::update_object(rt.cp.as_ref(), kind, &ObjectKey::of(obj), |o| {
        o.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(REMOVAL_REASON.into(), reason.into());
    })
    .await?;
    status::delete_if_present(rt.cp.as_ref(), kind, obj).await
}

/// Deletes every Work of a Promise (all namespaces); returns how many still exist.
pub async fn delete_all_of_promise(rt: &Runtime, promise: &str) -> Result<usize, Error> {
    let works = rt
        .cp
        .list(
            &rt.kind("Work"),
            None,
            &selector(&[(labels::PROMISE_NAME, promise)]),
        )
        .await?;
    delete_works(rt, &works, "delete").await?;
    Ok(works.len())
}

/// Deletes the run records (and their folders) of a Promise or request that is going away.
pub async fn delete_runs(rt: &Runtime, subject: &Subject) -> Result<(), Error> {
    let kind = rt.kind("PipelineRun");
    for (run, _) in super::workflows::runs_of(rt, subject).await? {
        let _ = std::fs::remove_dir_all(super::runs::run_dir(&rt.platform, &run));
        status::delete_if_present(rt.cp.as_ref(), &kind, &run).await?;
    }
    Ok(())
}

fn ready_message(obj: &Object) -> Option<String> {
    status::condition_status(obj, "Ready").map(|(_, _, m)| m)
}

/// The aggregate of Works' `Ready` messages, failing before pending before misplaced.
pub fn works_state(works: &[Object]) -> WorksState {
    if works.is_empty() {
        return WorksState::NoWorks;
    }
    // A Work's conditions only count for the generation they were written for: a Work that a
    // new run just changed is pending, whatever its previous generation said. A Work being
    // deleted (a removed pipeline's) is pending until its files have left the stores.
    let messages: Vec<String> = works
        .iter()
        .map(|w| {
            if !observed_current(w) || w.metadata.deletion_timestamp.is_some() {
                "Pending".to_string()
            } else if status::condition_status(w, "Ready").is_some_and(|(s, _, _)| s == "True") {
                "Ready".to_string()
            } else {
                ready_message(w).unwrap_or_else(|| "Pending".into())
            }
        })
        .collect();
    if messages.iter().any(|m| m == "Failing") {
        WorksState::Failing
    } else if messages.iter().any(|m| m != "Ready" && m != "Misplaced") {
        WorksState::Pending
    } else if messages.iter().any(|m| m == "Misplaced") {
        WorksState::Misplaced
    } else {
        WorksState::Ready
    }
}

fn observed_current(obj: &Object) -> bool {
    obj.data
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        == obj.metadata.generation
}

pub fn works_succeeded_condition(state: WorksState) -> Condition {
    match state {
        WorksState::Ready | WorksState::NoWorks => Condition::new(
            "WorksSucceeded",
            ConditionStatus::True,
            "WorksSucceeded",
            "All works associated with this resource are ready",
        ),
        WorksState::Pending => Condition::new(
            "WorksSucceeded",
            ConditionStatus::Unknown,
            "WorksPending",
            "Some works associated with this resource are not ready",
        ),
        WorksState::Failing => Condition::new(
            "WorksSucceeded",
            ConditionStatus::False,
            "WorksFailing",
            "Some works associated with this resource failed",
        ),
        WorksState::Misplaced => Condition::new(
            "WorksSucceeded",
            ConditionStatus::False,
            "WorksMisplaced",
            "Some works associated with this resource are misplaced",
        ),
    }
}

/// Per pipeline: the destinations its files went to and the version (commit) holding them.
pub async fn where_files_landed(
    rt: &Runtime,
    works: &[Object],
) -> Result<HashMap<String, Value>, Error> {
    let mut out: HashMap<String, Value> = HashMap::new();
    for work in works {
        let Some(pipeline) = label(work, labels::PIPELINE_NAME) else {
            continue;
        };
        let name = work.metadata.name.clone().unwrap_or_default();
        let placements = rt
            .cp
            .list(
                &rt.kind("WorkPlacement"),
                work.metadata.namespace.as_deref(),
                &selector(&[(labels::WORK, &name)]),
            )
            .await?;
        let mut entries: Vec<Value> = Vec::new();
        for wp in &placements {
            let entry = json!({
                "destination": wp.data.pointer("/spec/targetDestinationName").cloned().unwrap_or(Value::Null),
                "version": wp.data.pointer("/status/versionID").cloned().unwrap_or(Value::Null),
                "written": super::status::condition_status(wp, "WriteSucceeded").is_some_and(|(s, _, _)| s == "True") && observed_current(wp),
            });
            // Workload groups of one pipeline on one Destination share a commit: list it once.
            if !entries.contains(&entry) {
                entries.push(entry);
            }
        }
        out.insert(pipeline.to_string(), Value::Array(entries));
    }
    Ok(out)
}

/// Schedules a Work: creates, updates and deletes its WorkPlacements, then reports.
pub async fn reconcile(rt: &Runtime, work: Object) -> Result<Next, Error> {
    let kind = rt.kind("Work");
    let wp_kind = rt.kind("WorkPlacement");
    let key = ObjectKey::of(&work);
    let name = key.name.clone();
    let namespace = key.namespace.clone().unwrap_or_default();
    let placements = rt
        .cp
        .list(
            &wp_kind,
            Some(&namespace),
            &selector(&[(labels::WORK, &name)]),
        )
        .await?;
    if work.metadata.deletion_timestamp.is_some() {
        let reason = work
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REMOVAL_REASON))
            .cloned()
            .unwrap_or_else(|| "delete".into());
        for wp in &placements {
            remove_with_reason(rt, &wp_kind, wp, &reason).await?;
        }
        if placements.is_empty() {
            status::remove_finalizer(rt.cp.as_ref(), &kind, &work, FINALIZER).await?;
        }
        return Ok(Next::Done);
    }
    let Some(work) = status::add_finalizer(rt.cp.as_ref(), &kind, &work, FINALIZER).await? else {
        return Ok(Next::Done);
    };
    let typed: crate::api::Work =
        crate::api::object::to_typed(&work).map_err(|e| Error::Malformed {
            key: key.clone(),
            kind: "Work".into(),
            reason: e.to_string(),
        })?;
    let destinations: Vec<DestinationInfo> = rt
        .cp
        .list(&rt.kind("Destination"), None, &Selector::everything())
        .await?
        .iter()
        .map(|d| DestinationInfo {
            name: d.metadata.name.clone().unwrap_or_default(),
            labels: d.metadata.labels.clone().unwrap_or_default(),
            strict_match_labels: d
                .data
                .pointer("/spec/strictMatchLabels")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            deleting: d.metadata.deletion_timestamp.is_some(),
        })
        .collect();
    let existing: Vec<ExistingPlacement> = placements
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| ExistingPlacement {
            name: p.metadata.name.clone().unwrap_or_default(),
            group_id: p
                .data
                .pointer("/spec/id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            destination: p
                .data
                .pointer("/spec/targetDestinationName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
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
            upsert_placement(
                rt, &work, &typed, group, dest, &wp_name, &pipeline, misplaced,
            )
            .await?;
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
    let placements = rt
        .cp
        .list(
            &wp_kind,
            Some(&namespace),
            &selector(&[(labels::WORK, &name)]),
        )
        .await?;
    let unscheduled = decision.unscheduled_group_ids();
    let failing = placements.iter().any(|p| {
        status::condition_status(p, "WriteSucceeded").is_some_and(|(s, _, _)| s == "False")
    });
    let all_written = placements.iter().all(|p| {
        observed_current(p)
            && status::condition_status(p, "WriteSucceeded").is_some_and(|(s, _, _)| s == "True")
    });
    let (ready, message, reason) = if !unscheduled.is_empty() {
        (ConditionStatus::False, "Pending", "UnscheduledWorkloads")
    } else if failing {
        (ConditionStatus::False, "Failing", "WorkplacementsFailing")
    } else if decision.has_misplaced() {
        (
            ConditionStatus::False,
            "Misplaced",
            "DestinationSelectorMismatch",
        )
    } else if !all_written {
        (ConditionStatus::False, "Pending", "WorkplacementsPending")
    } else {
        (ConditionStatus::True, "Ready", "AllWorkplacementsWritten")
    };
    let schedule_condition = if unscheduled.is_empty() {
        Condition::new(
            "ScheduleSucceeded",
            ConditionStatus::True,
            "AllWorkplacementsScheduled",
            "All workplacements scheduled successfully",
        )
    } else {
        Condition::new(
            "ScheduleSucceeded",
            ConditionStatus::False,
            "UnscheduledWorkloads",
            &format!(
                "No matching destination found for workloadGroups: [{}]",
                unscheduled.join(" ")
            ),
        )
    };
    let generation = work.metadata.generation;
    let groups = typed.spec.workload_groups.len();
    let created = groups - unscheduled.len();
    status::update_status(rt.cp.as_ref(), &kind, &key, |_, s| {
        status::set_conditions(
            s,
            [
                Condition::new("Ready", ready, reason, message),
                schedule_condition.clone(),
            ],
        );
        status::set_field(s, "observedGeneration", json!(generation));
        status::set_field(s, "workPlacements", json!(groups));
        status::set_field(s, "workPlacementsCreated", json!(created));
    })
    .await?;
    Ok(Next::Done)
}

#[allow(clippy::too_many_arguments)]
async fn upsert_placement(
    rt: &Runtime,
    work: &Object,
    typed: &crate::api::Work,
    group: &WorkloadGroup,
    destination: &str,
    wp_name: &str,
    pipeline: &str,
    misplaced: bool,
) -> Result<(), Error> {
    let kind = rt.kind("WorkPlacement");
    let namespace = work.metadata.namespace.clone().unwrap_or_default();
    let work_name = work.metadata.name.clone().unwrap_or_default();
    let mut wp_labels = BTreeMap::from([
        (labels::WORK.to_string(), work_name.clone()),
        (labels::WORKLOAD_GROUP_ID.to_string(), group.id.clone()),
        (
            labels::TARGET_DESTINATION.to_string(),
            destination.to_string(),
        ),
        (labels::PIPELINE_NAME.to_string(), pipeline.to_string()),
    ]);
    if misplaced {
        wp_labels.insert(labels::MISPLACED.into(), "true".into());
    }
    let spec = json!({
        "targetDestinationName": destination,
        "workloads": group.workloads,
        "promiseName": typed.spec.promise_name,
        "resourceName": typed.spec.resource_name,
        "id": group.id,
        "generation": work.metadata.generation.unwrap_or(0),
    });
    match rt.cp.get(&kind, Some(&namespace), wp_name).await? {
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
                    "name": wp_name,
                    "namespace": namespace,
                    "labels": wp_labels,
                    "finalizers": [super::placements::FINALIZER],
                },
                "spec": spec,
            }))
            .map_err(|e| Error::Malformed {
                key: ObjectKey::new(
                    crate::api::GROUP,
                    "WorkPlacement",
                    Some(&namespace),
                    wp_name,
                ),
                kind: "WorkPlacement".into(),
                reason: e.to_string(),
            })?;
            match rt.cp.create(&kind, &wp).await {
                Ok(_) | Err(crate::store::Error::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(generation: i64, observed: i64, ready: &str, message: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "Work",
            "metadata": {"name": "w", "namespace": "default", "generation": generation},
            "status": {"observedGeneration": observed, "conditions": [
                {"type": "Ready", "status": ready, "message": message}]},
        }))
        .expect("valid Work")
    }

    #[test]
    fn works_state_counts_only_conditions_of_the_current_generation() {
        let cases: Vec<(&str, Vec<Object>, WorksState)> = vec![
            ("no works", vec![], WorksState::NoWorks),
            (
                "all ready",
                vec![work(1, 1, "True", "Ready"), work(2, 2, "True", "Ready")],
                WorksState::Ready,
            ),
            (
                "ready for an older generation",
                vec![work(2, 1, "True", "Ready")],
                WorksState::Pending,
            ),
            (
                "pending",
                vec![work(1, 1, "True", "Ready"), work(1, 1, "False", "Pending")],
                WorksState::Pending,
            ),
            (
                "failing wins",
                vec![
                    work(1, 1, "False", "Pending"),
                    work(1, 1, "False", "Failing"),
                ],
                WorksState::Failing,
            ),
            (
                "misplaced",
                vec![
                    work(1, 1, "True", "Ready"),
                    work(1, 1, "False", "Misplaced"),
                ],
                WorksState::Misplaced,
            ),
            (
                "pending before misplaced",
                vec![
                    work(1, 1, "False", "Misplaced"),
                    work(3, 2, "True", "Ready"),
                ],
                WorksState::Pending,
            ),
        ];
        for (name, works, want) in cases {
            assert_eq!(works_state(&works), want, "{name}");
        }
    }
}
