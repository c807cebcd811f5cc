//! Promise lookups shared by the controllers: the Promise of a name, the request kind it
//! defines, and its requests.

use crate::api::{promise_api, KindInfo, Object, ObjectKey};
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
