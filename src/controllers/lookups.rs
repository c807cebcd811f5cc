//! Promise lookups shared by the controllers: the Promise of a name, the request kind it
//! defines, its requests, and the Promises that require it.

use crate::api::{promise_api, KindInfo, Object, ObjectKey, Promise};
use crate::store::Selector;

use super::{Error, Runtime};

pub async fn promise(rt: &Runtime, name: &str) -> Result<Option<Object>, Error> {
    Ok(rt
        .cp
        .get(&rt.kind(crate::api::Builtin::Promise), None, name)
        .await?)
}

/// The request kind a Promise defines, if it exists and defines one.
pub async fn request_kind_of(rt: &Runtime, promise_name: &str) -> Result<Option<KindInfo>, Error> {
    let Some(obj) = promise(rt, promise_name).await? else {
        return Ok(None);
    };
    Ok(promise_api::kinds_from_promises(std::slice::from_ref(&obj))
        .into_iter()
        .next())
}

/// Keys of every request of a Promise.
pub async fn request_keys(rt: &Runtime, promise_name: &str) -> Result<Vec<ObjectKey>, Error> {
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

/// Keys of the Promises whose `spec.requiredPromises` name `promise_name`: whether they are
/// available depends on it.
pub async fn promises_requiring(rt: &Runtime, promise_name: &str) -> Result<Vec<ObjectKey>, Error> {
    Ok(rt
        .platform
        .promises()
        .await?
        .iter()
        .filter(|p| {
            crate::api::object::to_typed::<Promise>(p).is_ok_and(|typed| {
                typed
                    .spec
                    .required_promises
                    .iter()
                    .any(|r| r.name == promise_name)
            })
        })
        .map(ObjectKey::of)
        .collect())
}
