//! The Work of a successful configure run: its output's workload groups, named and labelled as
//! Kratix's work-creator names them, created or brought up to date.

use crate::api::{labels, Object, PipelineRun, Promise, WorkType, WorkflowType, SYSTEM_NAMESPACE};
use crate::controllers::run::error::Error as RunError;
use crate::controllers::run::failure;
use crate::controllers::{work, Error, Runtime};
use crate::pipeline::{Metadata, Output};

/// Creates or updates the Work of one successful configure run.
pub(super) async fn upsert(
    rt: &Runtime,
    run: &Object,
    promise: &Promise,
    output: &Output,
    metadata: &Metadata,
) -> Result<(), Error> {
    let run_name = run.metadata.name.clone().unwrap_or_default();
    let spec = crate::api::object::to_typed::<PipelineRun>(run)
        .map_err(|e| RunError::not_carried_out(&run_name, failure::Error::StoredRun(e)))?
        .spec;
    let (promise_name, pipeline_name, resource) =
        (spec.promise_name, spec.pipeline_name, spec.resource_name);
    let workflow_type = spec.workflow_type;
    let groups = work::from_output::workload_groups(
        output,
        &metadata.destination_selectors,
        &work::promise_selectors(promise),
        workflow_type,
    )
    .map_err(|e| RunError::not_carried_out(&run_name, e))?;
    let namespace = run
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| SYSTEM_NAMESPACE.into());
    let name = match workflow_type {
        WorkflowType::Promise => format!("{promise_name}-{pipeline_name}"),
        WorkflowType::Resource => format!("{promise_name}-{resource}-{pipeline_name}"),
    };
    let mut work_labels = vec![
        (labels::PROMISE_NAME, promise_name.as_str()),
        (labels::WORK_TYPE, WorkType::from(workflow_type).as_str()),
        (labels::PIPELINE_NAME, pipeline_name.as_str()),
    ];
    if workflow_type == WorkflowType::Resource {
        work_labels.push((labels::RESOURCE_NAME, resource.as_str()));
    }
    let work = work::NewWork {
        namespace: &namespace,
        name: &name,
        labels: &work_labels,
        promise_name: &promise_name,
        resource: &resource,
        groups: &groups,
    };
    work::upsert_work(rt, &work)
        .await
        .map_err(|failure| match failure {
            work::Upsert::Failed(e) => e,
            work::Upsert::Refused(source) => RunError::not_carried_out(&run_name, source).into(),
        })
}
