//! ResourceBindings: which revision of its Promise a request's workflows run with. A request of
//! a versioned Promise gets a binding whose `spec.version` is `latest` (the `floating` setting:
//! it follows each new latest revision) or the latest revision's version when it was made
//! (`pinned`); changing `spec.version` re-runs the request's workflows with that revision's
//! pipelines, and the binding reports the upgrade (`UpgradeSucceeded`, `lastAppliedVersion`,
//! `failedVersion`). As in Kratix's dynamic request controller:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/dynamic_resource_request_controller.go>.

use serde_json::{json, Value};

use crate::api::object::{label, to_typed};
use crate::api::versions::ResourceBindingStatus;
use crate::api::{labels, names, Builtin, KindInfo, Object, ObjectKey};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::promise::revision;
use crate::controllers::promise::revision::ResolveError;
use crate::controllers::{now_rfc3339, status, Error, Runtime};

pub(crate) mod decide;
use decide::labels_for;
pub(crate) use decide::{desired_version, next_status, Outcome, RequestVersions, Strategy};

/// A request's pinning: the Promise it runs with, and the version it is bound to.
#[derive(Debug, Clone)]
pub(crate) struct Pinned {
    /// The Promise as stored, its `spec` replaced by the bound revision's.
    pub(crate) promise: Object,
    pub(crate) bound: Option<Bound>,
}

impl Pinned {
    /// The version the request's workflows run at: the bound revision's; for a request going
    /// away whose revision is gone, the Promise's label; `None` for an unversioned Promise.
    pub(crate) fn version(&self) -> Option<&str> {
        match &self.bound {
            Some(bound) => Some(bound.version.as_str()),
            None => label(&self.promise, labels::PROMISE_VERSION),
        }
    }
}

/// The version a request of a versioned Promise is bound to.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    /// The binding's `spec.version` (`latest` or a version).
    pub(crate) desired: String,
    /// The revision's version.
    pub(crate) version: String,
    pub(crate) binding: Option<Object>,
}

/// The Promise a request runs with: as stored when it has no version label; otherwise the
/// revision its binding names (for a request being deleted, the version it was last configured
/// with). `Err` says why no revision answers.
pub(crate) async fn pinned(
    rt: &Runtime,
    promise: &Object,
    request: &Object,
) -> Result<Result<Pinned, ResolveError>, Error> {
    if label(promise, labels::PROMISE_VERSION).is_none() {
        return Ok(Ok(Pinned {
            promise: promise.clone(),
            bound: None,
        }));
    }
    let promise_name = promise.metadata.name.clone().unwrap_or_default();
    let stored = revision::revisions_of(rt, &promise_name).await?;
    let infos = stored
        .iter()
        .map(revision::info)
        .collect::<Result<Vec<_>, _>>()?;
    let binding = find(rt, &promise_name, request).await?;
    let binding_version = binding
        .as_ref()
        .and_then(|b| b.data.pointer("/spec/version"))
        .and_then(Value::as_str);
    let recorded = |field: &str| {
        request
            .data
            .pointer(&format!("/status/{field}"))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let latest = infos.iter().find(|r| r.latest).map(|r| r.version.as_str());
    let Some(desired) = desired_version(
        binding_version,
        recorded("resourceBindingVersion"),
        rt.settings.binding_strategy,
        latest,
    ) else {
        return Ok(Err(ResolveError::NoLatest {
            promise: promise_name,
        }));
    };
    // Delete workflows run with the version the request was last configured with.
    let deleting = request.metadata.deletion_timestamp.is_some();
    let wanted = match recorded("promiseVersion") {
        Some(applied) if deleting => applied.to_string(),
        _ => desired.clone(),
    };
    let revision = match revision::resolve(&promise_name, &wanted, &infos) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let index = infos.iter().position(|r| r == revision).unwrap_or_default();
    let spec = stored[index]
        .data
        .pointer("/spec/promiseSpec")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut pinned = promise.clone();
    if let Some(map) = pinned.data.as_object_mut() {
        map.insert("spec".into(), spec);
    }
    Ok(Ok(Pinned {
        promise: pinned,
        bound: Some(Bound {
            desired,
            version: revision.version.clone(),
            binding,
        }),
    }))
}

/// The labels that find a request's binding (Kratix's `resourceBindingLabelsFor`).
fn binding_labels(promise: &str, request: &str) -> [(String, String); 2] {
    let resource = if request.len() <= names::LABEL_VALUE_MAX {
        request.to_string()
    } else {
        names::deterministic_name(request, &[])
    };
    [
        (labels::PROMISE_NAME.to_string(), promise.to_string()),
        (labels::RESOURCE_NAME.to_string(), resource),
    ]
}

/// The request's binding, if it has one.
async fn find(rt: &Runtime, promise: &str, request: &Object) -> Result<Option<Object>, Error> {
    let request_name = request.metadata.name.clone().unwrap_or_default();
    let wanted = binding_labels(promise, &request_name);
    let selector = Selector::from_labels(wanted.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut found = rt
        .cp
        .list(
            &builtin(Builtin::ResourceBinding),
            request.metadata.namespace.as_deref(),
            &selector,
        )
        .await?;
    Ok(found.pop())
}

/// Records on the request's binding (made on first use) how the workflow for its version
/// stands, and the request's health. The request's own `promiseVersion` and
/// `resourceBindingVersion` are the caller's to write, from [`request_versions`].
pub(crate) async fn record(
    rt: &Runtime,
    request: &Object,
    pinned: &Pinned,
    outcome: Outcome<'_>,
    health: Option<&Value>,
) -> Result<(), Error> {
    let Some(bound) = &pinned.bound else {
        return Ok(());
    };
    let promise = pinned.promise.metadata.name.clone().unwrap_or_default();
    let binding = match &bound.binding {
        Some(b) => relabel(rt, &promise, request, b).await?,
        None => create(rt, &promise, request, &bound.desired).await?,
    };
    let now = now_rfc3339();
    status::update_typed_status(
        rt.cp.as_ref(),
        &builtin(Builtin::ResourceBinding),
        &ObjectKey::of(&binding),
        "ResourceBinding",
        |s: &mut ResourceBindingStatus| {
            *s = next_status(s, &bound.version, outcome, &now);
            if let Some(h) = health.and_then(crate::controllers::request::health::binding_health) {
                s.health_status = Some(h);
            }
        },
    )
    .await?;
    Ok(())
}

/// Brings a binding's labels in line with its request's (see [`labels_for`]).
async fn relabel(
    rt: &Runtime,
    promise: &str,
    request: &Object,
    binding: &Object,
) -> Result<Object, Error> {
    let request_name = request.metadata.name.clone().unwrap_or_default();
    let finding = binding_labels(promise, &request_name);
    let wanted = labels_for(
        &crate::api::object::labels(request),
        &finding,
        &crate::api::object::labels(binding),
    );
    if crate::api::object::labels(binding) == wanted {
        return Ok(binding.clone());
    }
    let stored = status::update_object(
        rt.cp.as_ref(),
        &builtin(Builtin::ResourceBinding),
        &ObjectKey::of(binding),
        |b| {
            let current = crate::api::object::labels(b);
            b.metadata.labels = Some(labels_for(
                &crate::api::object::labels(request),
                &finding,
                &current,
            ));
        },
    )
    .await?;
    Ok(stored.unwrap_or_else(|| binding.clone()))
}

/// What a bound request records of its binding in its own status: `promiseVersion` (the
/// version it last completed at, once it has) and `resourceBindingVersion` (what its binding
/// asks for). `None` for a request of an unversioned Promise.
pub(crate) fn request_versions(pinned: &Pinned, outcome: Outcome<'_>) -> Option<RequestVersions> {
    let bound = pinned.bound.as_ref()?;
    Some(RequestVersions {
        completed: (outcome == Outcome::Succeeded).then(|| bound.version.clone()),
        binding: bound.desired.clone(),
    })
}

/// Creates a request's binding at `version`.
async fn create(
    rt: &Runtime,
    promise: &str,
    request: &Object,
    version: &str,
) -> Result<Object, Error> {
    let request_name = request.metadata.name.clone().unwrap_or_default();
    let namespace = request.metadata.namespace.clone().unwrap_or_default();
    let name = names::deterministic_name(&format!("{request_name}-{promise}"), &[]);
    let labels = labels_for(
        &crate::api::object::labels(request),
        &binding_labels(promise, &request_name),
        &Default::default(),
    );
    let obj: Object = serde_json::from_value(json!({
        "apiVersion": crate::api::API_VERSION,
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "version": version,
            "promiseRef": {"name": promise},
            "resourceRef": {"name": request_name, "namespace": namespace},
        },
    }))
    .map_err(|source| Error::malformed(request, "request", source))?;
    tracing::info!(binding = %name, %version, "resource binding created");
    Ok(rt
        .cp
        .create(&builtin(Builtin::ResourceBinding), &obj)
        .await?)
}

/// Deletes the binding of a request that is going away.
pub(crate) async fn delete_of(rt: &Runtime, promise: &str, request: &Object) -> Result<(), Error> {
    if let Some(binding) = find(rt, promise, request).await? {
        status::delete_if_present(rt.cp.as_ref(), &builtin(Builtin::ResourceBinding), &binding)
            .await?;
    }
    Ok(())
}

/// The request a binding tracks, to wake when the binding changes.
pub(crate) fn request_of(rt_kind: Option<&KindInfo>, binding: &Object) -> Option<ObjectKey> {
    let kind = rt_kind?;
    let typed: crate::api::ResourceBinding = to_typed(binding).ok()?;
    let namespace = Some(typed.spec.resource_ref.namespace.as_str()).filter(|n| !n.is_empty());
    Some(ObjectKey::new(
        &kind.group,
        &kind.kind,
        namespace.or(binding.metadata.namespace.as_deref()),
        &typed.spec.resource_ref.name,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_are_found_by_kratix_s_labels() {
        let long = "r".repeat(70);
        let cases = [
            ("db", "a", "a".to_string()),
            ("db", long.as_str(), names::deterministic_name(&long, &[])),
        ];
        for (promise, request, resource) in cases {
            let got = binding_labels(promise, request);
            assert_eq!(
                got[0],
                (labels::PROMISE_NAME.to_string(), promise.to_string())
            );
            assert_eq!(got[1], (labels::RESOURCE_NAME.to_string(), resource));
        }
    }
}
