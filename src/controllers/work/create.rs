//! Creating and updating Works: from a successful configure run, and from a Promise's static
//! dependencies.

use std::collections::BTreeMap;

use crate::api::work::WorkloadGroup;
use crate::api::WorkflowType;
use crate::api::{
    finalizers, labels, Object, ObjectKey, PipelineRun, Promise, Work, WorkSpec, SYSTEM_NAMESPACE,
};
use crate::pipeline::{Metadata, Output};

use crate::controllers::run::failure;
use crate::controllers::work::delete::delete_works;
use crate::controllers::work::query::selector;
use crate::controllers::{now_rfc3339, status, Error, Runtime};

fn promise_selectors(promise: &Promise) -> Vec<BTreeMap<String, String>> {
    promise
        .spec
        .destination_selectors
        .iter()
        .map(|s| s.match_labels.clone())
        .collect()
}

/// Creates or updates the Work of one successful configure run.
pub async fn upsert_from_run(
    rt: &Runtime,
    run: &Object,
    promise: &Promise,
    output: &Output,
    metadata: &Metadata,
) -> Result<(), Error> {
    let run_name = run.metadata.name.clone().unwrap_or_default();
    let spec = crate::api::object::to_typed::<PipelineRun>(run)
        .map_err(|e| Error::run(&run_name, failure::Error::StoredRun(e)))?
        .spec;
    let (promise_name, pipeline_name, resource) =
        (spec.promise_name, spec.pipeline_name, spec.resource_name);
    let workflow_type = if spec.workflow_type == "resource" {
        WorkflowType::Resource
    } else {
        WorkflowType::Promise
    };
    let groups = crate::controllers::work::from_output::workload_groups(
        output,
        &metadata.destination_selectors,
        &promise_selectors(promise),
        workflow_type,
    )
    .map_err(|e| Error::run(&run_name, e))?;
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
    let work = NewWork {
        namespace: &namespace,
        name: &name,
        labels: &work_labels,
        promise_name: &promise_name,
        resource: &resource,
        groups: &groups,
    };
    upsert_work(rt, &work)
        .await
        .map_err(|failure| match failure {
            Upsert::Failed(e) => e,
            Upsert::Refused(source) => Error::run(&run_name, source),
        })
}

/// What a Work is made of.
struct NewWork<'a> {
    namespace: &'a str,
    name: &'a str,
    labels: &'a [(&'a str, &'a str)],
    promise_name: &'a str,
    resource: &'a str,
    groups: &'a [WorkloadGroup],
}

/// Why a Work could not be written.
enum Upsert {
    Failed(Error),
    /// Not this time (e.g. its predecessor is still being deleted).
    Refused(failure::Error),
}

impl From<Error> for Upsert {
    fn from(e: Error) -> Self {
        Upsert::Failed(e)
    }
}

impl From<crate::store::Error> for Upsert {
    fn from(e: crate::store::Error) -> Self {
        Upsert::Failed(e.into())
    }
}

/// Finds the Work by its labels (Kratix's identity) and replaces its spec, or creates it.
async fn upsert_work(rt: &Runtime, new: &NewWork<'_>) -> Result<(), Upsert> {
    let kind = rt.kind(crate::api::Builtin::Work);
    let spec = WorkSpec {
        promise_name: new.promise_name.to_string(),
        resource_name: new.resource.to_string(),
        workload_groups: new.groups.to_vec(),
        // Changes on every run, as in Kratix, so every run re-checks the stores (restoring files
        // of ours that someone changed) even when the output is identical.
        last_execution_timestamp: Some(now_rfc3339()),
    };
    let refused = |source| {
        Upsert::Refused(failure::Error::Encode {
            what: "the Work",
            source,
        })
    };
    let existing = rt
        .cp
        .list(&kind, Some(new.namespace), &selector(new.labels))
        .await?
        .into_iter()
        .find(|w| w.metadata.deletion_timestamp.is_none());
    if let Some(work) = existing {
        let spec = spec.stored().map_err(refused)?;
        status::update_object(rt.cp.as_ref(), &kind, &ObjectKey::of(&work), |w| {
            if let Some(map) = w.data.as_object_mut() {
                map.insert("spec".into(), spec.clone());
            }
        })
        .await?;
        return Ok(());
    }
    let stored = spec.stored().map_err(refused)?;
    let mut typed = Work::new(new.name, spec);
    typed.metadata.namespace = Some(new.namespace.to_string());
    typed.metadata.labels = Some(
        new.labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    // Created with the finalizer the Work controller would add first thing: one write less.
    typed.metadata.finalizers = Some(vec![finalizers::WORK.to_string()]);
    let work: Object = crate::api::object::from_typed_with_spec(&typed, stored).map_err(refused)?;
    match rt.cp.create(&kind, &work).await {
        Ok(_) => Ok(()),
        Err(crate::store::Error::AlreadyExists { .. }) => {
            Err(Upsert::Refused(failure::Error::WorkStillDeleting {
                namespace: new.namespace.to_string(),
                name: new.name.to_string(),
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Keeps the Promise's static-dependency Work in line with `spec.dependencies`.
pub async fn sync_static_dependencies(rt: &Runtime, promise: &Promise) -> Result<(), Error> {
    let name = promise.metadata.name.clone().unwrap_or_default();
    let work_labels = [
        (labels::PROMISE_NAME, name.as_str()),
        (labels::WORK_TYPE, "static-dependency"),
    ];
    let existing = rt
        .cp
        .list(
            &rt.kind(crate::api::Builtin::Work),
            Some(SYSTEM_NAMESPACE),
            &selector(&work_labels),
        )
        .await?;
    if promise.spec.dependencies.is_empty() {
        return delete_works(rt, &existing, "configure").await;
    }
    let group = crate::controllers::work::from_output::static_dependencies_group(
        &name,
        &promise.spec.dependencies,
        &promise_selectors(promise),
    )
    .map_err(|source| Error::InvalidDependencies {
        key: ObjectKey::new(crate::api::GROUP, "Promise", None, &name),
        source,
    })?;
    // Only rewrite when the content changed: the timestamp would otherwise make every Promise
    // reconcile a new Work generation.
    if let Some(work) = existing.first() {
        let same = crate::api::object::to_typed::<Work>(work)
            .is_ok_and(|w| w.spec.workload_groups == [group.clone()]);
        if same {
            return Ok(());
        }
    }
    let work_name = format!("{name}-static-deps");
    let work = NewWork {
        namespace: SYSTEM_NAMESPACE,
        name: &work_name,
        labels: &work_labels,
        promise_name: &name,
        resource: "",
        groups: std::slice::from_ref(&group),
    };
    upsert_work(rt, &work)
        .await
        .map_err(|failure| match failure {
            Upsert::Failed(e) => e,
            Upsert::Refused(source) => Error::run(&work_name, source),
        })
}
