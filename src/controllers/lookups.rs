//! Promise lookups shared by the controllers: the Promise of a name, the request kind it
//! defines, its requests, and the Promises that require it.

use crate::api::{promise_api, KindInfo, Object, ObjectKey, Promise};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::{Error, Runtime};

pub(crate) async fn promise(rt: &Runtime, name: &str) -> Result<Option<Object>, Error> {
    Ok(rt
        .cp
        .get(&builtin(crate::api::Builtin::Promise), None, name)
        .await?)
}

/// The request kind a Promise defines, if it exists and defines one.
pub(crate) async fn request_kind_of(
    rt: &Runtime,
    promise_name: &str,
) -> Result<Option<KindInfo>, Error> {
    let Some(obj) = promise(rt, promise_name).await? else {
        return Ok(None);
    };
    Ok(promise_api::kinds_from_promises(std::slice::from_ref(&obj))
        .into_iter()
        .next())
}

/// Keys of every request of a Promise.
pub(crate) async fn request_keys(
    rt: &Runtime,
    promise_name: &str,
) -> Result<Vec<ObjectKey>, Error> {
    let Some(kind) = request_kind_of(rt, promise_name).await? else {
        return Ok(vec![]);
    };
    Ok(rt
        .cp
        .list(&kind, None, &Selector::everything())
        .await?
        .iter()
        .map(ObjectKey::of)
        .collect())
}

/// Every Promise with its typed view; one that does not parse is left out.
pub(crate) async fn typed_promises(rt: &Runtime) -> Result<Vec<(Object, Promise)>, Error> {
    Ok(rt
        .platform
        .promises()
        .await?
        .into_iter()
        .filter_map(|p| {
            let typed = crate::api::object::to_typed::<Promise>(&p).ok()?;
            Some((p, typed))
        })
        .collect())
}

/// Keys of the Promises whose `spec.requiredPromises` name `promise_name`: whether they are
/// available depends on it.
pub(crate) async fn promises_requiring(
    rt: &Runtime,
    promise_name: &str,
) -> Result<Vec<ObjectKey>, Error> {
    Ok(typed_promises(rt)
        .await?
        .iter()
        .filter(|(_, typed)| {
            typed
                .spec
                .required_promises
                .iter()
                .any(|r| r.name == promise_name)
        })
        .map(|(p, _)| ObjectKey::of(p))
        .collect())
}

/// Keys of the Promises that list `promise_name` in their `status.requiredBy`, or that it
/// requires (`promise`, its stored object, when it still exists): their `requiredBy` changes
/// with it, including when it stops requiring them or is deleted.
pub(crate) async fn promises_required_by(
    rt: &Runtime,
    promise_name: &str,
    promise: Option<&Object>,
) -> Result<Vec<ObjectKey>, Error> {
    let requires: Vec<String> = promise
        .and_then(|p| crate::api::object::to_typed::<Promise>(p).ok())
        .map(|p| {
            p.spec
                .required_promises
                .into_iter()
                .map(|r| r.name)
                .collect()
        })
        .unwrap_or_default();
    Ok(typed_promises(rt)
        .await?
        .iter()
        .filter(|(p, typed)| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            requires.iter().any(|r| r == name)
                || typed
                    .status
                    .as_ref()
                    .is_some_and(|s| s.required_by.iter().any(|r| r.promise.name == promise_name))
        })
        .map(|(p, _)| ObjectKey::of(p))
        .collect())
}
