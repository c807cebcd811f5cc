//! Finding Works and WorkPlacements by their labels.

use crate::api::{labels, Object, WorkPlacementStatus, SYSTEM_NAMESPACE};
use crate::api::{WorkType, WorkflowType};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::subject::Subject;
use crate::controllers::{status, Error, Runtime};

pub(super) fn selector(pairs: &[(&str, &str)]) -> Selector {
    Selector::from_labels(pairs.iter().copied())
}

/// The WorkPlacements of one Work.
pub(super) async fn placements_of(
    rt: &Runtime,
    namespace: Option<&str>,
    work_name: &str,
) -> Result<Vec<Object>, Error> {
    Ok(rt
        .cp
        .list(
            &builtin(crate::api::Builtin::WorkPlacement),
            namespace,
            &selector(&[(labels::WORK, work_name)]),
        )
        .await?)
}

/// The placement's files are written for its current generation.
pub(super) fn placement_written(wp: &Object) -> bool {
    status::status_or_default::<WorkPlacementStatus>(wp).written_for(wp.metadata.generation)
}

/// The Works a Promise's or request's workflow produced.
pub(crate) async fn works_of(rt: &Runtime, subject: &Subject) -> Result<Vec<Object>, Error> {
    let mut pairs = vec![
        (
            labels::PROMISE_NAME.to_string(),
            subject.promise_name.clone(),
        ),
        (
            labels::WORK_TYPE.to_string(),
            WorkType::from(subject.workflow_type).as_str().to_string(),
        ),
    ];
    if subject.workflow_type == WorkflowType::Resource {
        pairs.push((labels::RESOURCE_NAME.to_string(), subject.name()));
    }
    let sel = Selector::from_labels(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut works = rt
        .cp
        .list(
            &builtin(crate::api::Builtin::Work),
            Some(&subject.run_namespace()),
            &sel,
        )
        .await?;
    if subject.workflow_type == WorkflowType::Promise {
        let statics = rt
            .cp
            .list(
                &builtin(crate::api::Builtin::Work),
                Some(SYSTEM_NAMESPACE),
                &selector(&[
                    (labels::PROMISE_NAME, &subject.promise_name),
                    (labels::WORK_TYPE, WorkType::StaticDependency.as_str()),
                ]),
            )
            .await?;
        works.extend(statics);
    }
    Ok(works)
}
