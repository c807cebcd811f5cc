//! Creating and updating Works (a run makes its own with [`upsert_work`]), and a Promise's static
//! dependencies.

use std::collections::BTreeMap;

use crate::api::work::WorkloadGroup;
use crate::api::{
    finalizers, labels, Object, ObjectKey, Promise, Work, WorkSpec, WorkType, SYSTEM_NAMESPACE,
};
use crate::platform::builtin;

use crate::controllers::work::delete::delete_works;
use crate::controllers::work::query::selector;
use crate::controllers::{now_rfc3339, status, Error, Runtime};

pub(crate) fn promise_selectors(promise: &Promise) -> Vec<BTreeMap<String, String>> {
    promise
        .spec
        .destination_selectors
        .iter()
        .map(|s| s.match_labels.clone())
        .collect()
}

/// What a Work is made of.
pub(crate) struct NewWork<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) labels: &'a [(&'a str, &'a str)],
    pub(crate) promise_name: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) groups: &'a [WorkloadGroup],
}

/// Why a Work could not be written this time.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The Work does not encode.
    #[error("cannot encode the Work")]
    Encode(#[source] serde_json::Error),
    /// A Work of that name is still being deleted; the next run will create it.
    #[error("Work {namespace}/{name} is still being deleted")]
    StillDeleting { namespace: String, name: String },
}

/// Why a Work could not be written.
pub(crate) enum Upsert {
    Failed(Error),
    /// Not this time.
    Refused(Refusal),
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
pub(crate) async fn upsert_work(rt: &Runtime, new: &NewWork<'_>) -> Result<(), Upsert> {
    let kind = builtin(crate::api::Builtin::Work);
    let spec = WorkSpec {
        promise_name: new.promise_name.to_string(),
        resource_name: new.resource.to_string(),
        workload_groups: new.groups.to_vec(),
        // Changes on every run, as in Kratix, so every run re-checks the stores (restoring files
        // of ours that someone changed) even when the output is identical.
        last_execution_timestamp: Some(now_rfc3339()),
    };
    let refused = |source| Upsert::Refused(Refusal::Encode(source));
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
            Err(Upsert::Refused(Refusal::StillDeleting {
                namespace: new.namespace.to_string(),
                name: new.name.to_string(),
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Keeps the Promise's static-dependency Work in line with `spec.dependencies`.
pub(crate) async fn sync_static_dependencies(rt: &Runtime, promise: &Promise) -> Result<(), Error> {
    let name = promise.metadata.name.clone().unwrap_or_default();
    let work_labels = [
        (labels::PROMISE_NAME, name.as_str()),
        (labels::WORK_TYPE, WorkType::StaticDependency.as_str()),
    ];
    let existing = rt
        .cp
        .list(
            &builtin(crate::api::Builtin::Work),
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
    .map_err(|source| super::error::Error::InvalidDependencies {
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
            Upsert::Refused(source) => super::error::Error::Refused {
                name: work_name.clone(),
                source,
            }
            .into(),
        })
}
