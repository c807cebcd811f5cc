//! Reads what a commit message template may need of the object a Work was made for.

use std::collections::BTreeMap;

use crate::controllers::{lookups, Error, Runtime};

/// What a template may say of the object a Work was made for.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectMeta {
    pub(crate) generation: Option<i64>,
    pub(crate) annotations: BTreeMap<String, String>,
}

/// The generation and annotations of a Work's object: the request named by `resource`
/// (namespace, name), or the Promise for a promise workflow. Default values when it is gone.
pub(crate) async fn generation_and_annotations(
    rt: &Runtime,
    promise: &str,
    resource: Option<(&str, &str)>,
) -> Result<ObjectMeta, Error> {
    let object = match resource {
        None => lookups::promise(rt, promise).await?,
        Some((namespace, name)) => match lookups::request_kind_of(rt, promise).await? {
            Some(kind) => rt.cp.get(&kind, Some(namespace), name).await?,
            None => None,
        },
    };
    Ok(object
        .map(|o| ObjectMeta {
            generation: o.metadata.generation,
            annotations: o.metadata.annotations.unwrap_or_default(),
        })
        .unwrap_or_default())
}
