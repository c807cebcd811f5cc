//! Deleting Works (their placements' files follow) and the run records of a workflow that is
//! going away.

use crate::api::{labels, KindInfo, Object, ObjectKey};
use crate::platform::builtin;

use crate::controllers::work::query::selector;
use crate::controllers::{status, Error, Runtime};

/// Marks why the Works go, then deletes them (their placements' files follow).
pub(crate) async fn delete_works(
    rt: &Runtime,
    works: &[Object],
    reason: &str,
) -> Result<(), Error> {
    let kind = builtin(crate::api::Builtin::Work);
    for work in works {
        remove_with_reason(rt, &kind, work, reason).await?;
    }
    Ok(())
}

/// Records why a Work or WorkPlacement goes ([`labels::REMOVAL_REASON`]), then deletes it.
/// Objects already being deleted keep the reason they were given.
pub(crate) async fn remove_with_reason(
    rt: &Runtime,
    kind: &KindInfo,
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
            .insert(labels::REMOVAL_REASON.into(), reason.into());
    })
    .await?;
    status::delete_if_present(rt.cp.as_ref(), kind, obj).await
}

/// Deletes every Work of a Promise (all namespaces); returns how many still exist.
pub(crate) async fn delete_all_of_promise(rt: &Runtime, promise: &str) -> Result<usize, Error> {
    let works = rt
        .cp
        .list(
            &builtin(crate::api::Builtin::Work),
            None,
            &selector(&[(labels::PROMISE_NAME, promise)]),
        )
        .await?;
    delete_works(rt, &works, "delete").await?;
    Ok(works.len())
}
