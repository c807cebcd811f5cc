//! The PromiseRelease controller: installs the Promise its `sourceRef` points at, at
//! `spec.version`, keeps it there (a Promise removed or at another version is installed again),
//! and deletes it when the release is deleted. As Kratix's release controller does:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promiserelease_controller.go>.

pub(crate) mod download;

use std::time::Duration;

use serde_json::{json, Value};

use crate::api::object::{label, to_typed};
use crate::api::promise_release::{
    PromiseReleaseStatus, AUTHORIZATION_HEADER_KEY, RELEASE_NAME_LABEL, TYPE_HTTP,
};
use crate::api::{
    crds, defaults, labels, secret, Builtin, Condition, ConditionStatus, Object, ObjectKey,
    PromiseRelease,
};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::{now_rfc3339, status, Error, Next, Runtime};

/// The finalizer that deletes a release's Promise before the release goes.
pub(crate) const FINALIZER: &str = "kratix.io/promise-cleanup";
/// How soon a release that failed to install tries again.
const RETRY: Duration = Duration::from_secs(15);

/// What a reconcile of a release found: installed, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) status: &'static str,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Outcome {
    fn installed() -> Self {
        Outcome {
            status: "Installed",
            reason: "InstalledSuccessfully",
            message: "Installed successfully".into(),
        }
    }

    fn failed(reason: &'static str, message: String) -> Self {
        Outcome {
            status: "Error installing",
            reason,
            message,
        }
    }

    /// The `Installed` condition.
    pub(crate) fn condition(&self) -> Condition {
        let ok = self.reason == "InstalledSuccessfully";
        let status = if ok {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        Condition::new(
            crate::api::words::types::INSTALLED,
            status,
            self.reason,
            &self.message,
        )
    }
}

pub(crate) async fn reconcile(rt: &Runtime, obj: Object) -> Result<Next, Error> {
    let kind = builtin(Builtin::PromiseRelease);
    let release: PromiseRelease =
        to_typed(&obj).map_err(|source| Error::malformed(&obj, "PromiseRelease", source))?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    if obj.metadata.deletion_timestamp.is_some() {
        return teardown(rt, &obj, &name).await;
    }
    let Some(obj) = status::add_finalizer(rt.cp.as_ref(), &kind, &obj, FINALIZER).await? else {
        return Ok(Next::Done);
    };
    let installed = installed_promises(rt, &name).await?;
    let at_version = installed.len() == 1
        && !release.spec.version.is_empty()
        && label(&installed[0], labels::PROMISE_VERSION) == Some(release.spec.version.as_str());
    if at_version {
        set_outcome(rt, &obj, &Outcome::installed()).await?;
        return Ok(Next::Done);
    }
    match fetch(rt, &release).await? {
        Err(outcome) => {
            tracing::warn!(release = %name, reason = outcome.reason, message = %outcome.message, "installing the release's Promise failed");
            set_outcome(rt, &obj, &outcome).await?;
            Ok(Next::After(RETRY))
        }
        Ok((promise, version)) => {
            if release.spec.version.is_empty() {
                // The release takes the fetched version, then installs it (its change wakes it).
                status::update_object(rt.cp.as_ref(), &kind, &ObjectKey::of(&obj), |o| {
                    if let Some(spec) = o.data.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.insert("version".into(), json!(version));
                    }
                })
                .await?;
                return Ok(Next::Done);
            }
            install(rt, &obj, &name, promise).await?;
            set_outcome(rt, &obj, &Outcome::installed()).await?;
            Ok(Next::Done)
        }
    }
}

/// The Promise the release points at, checked; `Err` is the outcome to report.
async fn fetch(
    rt: &Runtime,
    release: &PromiseRelease,
) -> Result<Result<(Value, String), Outcome>, Error> {
    let source = &release.spec.source_ref;
    if source.type_ != TYPE_HTTP {
        return Ok(Err(Outcome::failed(
            "UnknownSourceType",
            format!(
                "sourceRef.type {:?} is not supported (only http)",
                source.type_
            ),
        )));
    }
    let authorization = match &source.secret_ref {
        None => None,
        Some(secret_ref) => {
            let (ns, secret_name) = (secret_ref.namespace(), secret_ref.name.as_str());
            let found = rt
                .cp
                .get(&builtin(Builtin::Secret), Some(ns), secret_name)
                .await?;
            let values = found
                .as_ref()
                .and_then(|o| to_typed::<secret::Secret>(o).ok())
                .map(|s| secret::values(&s))
                .unwrap_or_default();
            match values
                .get(AUTHORIZATION_HEADER_KEY)
                .map(|v| String::from_utf8(v.clone()))
            {
                Some(Ok(header)) => Some(header),
                _ => {
                    return Ok(Err(Outcome::failed(
                        "FailedToFetchPromise",
                        format!(
                            "failed to fetch data from secretRef: Secret {ns}/{secret_name} \
                             not found or without a text {AUTHORIZATION_HEADER_KEY}"
                        ),
                    )))
                }
            }
        }
    };
    let fetched = match download::get(&source.url, authorization.as_deref()).await {
        Ok(body) => download::promise_from(&source.url, &body),
        Err(e) => Err(e),
    };
    let checked = fetched.and_then(|(promise, version)| {
        download::check_version(&release.spec.version, &version).map(|()| (promise, version))
    });
    Ok(checked.map_err(|e| {
        let message = match e.reason() {
            "FailedToFetchPromise" => {
                format!(
                    "Failed to fetch Promise from URL: {}",
                    crate::controllers::ErrorChain(&e)
                )
            }
            _ => e.to_string(),
        };
        Outcome::failed(e.reason(), message)
    }))
}

/// Creates or updates the Promise: its spec, labels and annotations as fetched, labelled with
/// the release and owned by it.
async fn install(
    rt: &Runtime,
    release: &Object,
    name: &str,
    mut fetched: Value,
) -> Result<(), Error> {
    let kind = builtin(Builtin::Promise);
    // As the API server would store it: with the defaults of the Promise CRD.
    if let Some(schema) = crds::schema_of("Promise") {
        defaults::apply(schema, &mut fetched);
    }
    let mut promise: Object = serde_json::from_value(fetched)
        .map_err(|source| Error::malformed(release, "PromiseRelease", source))?;
    promise
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(RELEASE_NAME_LABEL.into(), name.into());
    // The release owns its Promise (on Kubernetes, as Kratix sets it).
    promise.metadata.owner_references = Some(vec![crate::api::object::controller_reference(
        release,
        "PromiseRelease",
        Some(true),
    )]);
    let promise_name = promise.metadata.name.clone().unwrap_or_default();
    match rt.cp.get(&kind, None, &promise_name).await? {
        None => {
            rt.cp.create(&kind, &promise).await?;
        }
        Some(current) => {
            status::update_object(rt.cp.as_ref(), &kind, &ObjectKey::of(&current), |o| {
                if let Some(map) = o.data.as_object_mut() {
                    map.insert(
                        "spec".into(),
                        promise
                            .data
                            .get("spec")
                            .cloned()
                            .unwrap_or_else(|| json!({})),
                    );
                }
                let l = o.metadata.labels.get_or_insert_with(Default::default);
                l.extend(promise.metadata.labels.clone().unwrap_or_default());
                let a = o.metadata.annotations.get_or_insert_with(Default::default);
                a.extend(promise.metadata.annotations.clone().unwrap_or_default());
                o.metadata.owner_references = promise.metadata.owner_references.clone();
            })
            .await?;
        }
    }
    tracing::info!(release = %name, promise = %promise_name, "promise installed from its release");
    Ok(())
}

/// Deletes the release's Promises, then lets the release go.
async fn teardown(rt: &Runtime, obj: &Object, name: &str) -> Result<Next, Error> {
    let kind = builtin(Builtin::Promise);
    let installed = installed_promises(rt, name).await?;
    if installed.is_empty() {
        status::remove_finalizer(
            rt.cp.as_ref(),
            &builtin(Builtin::PromiseRelease),
            obj,
            FINALIZER,
        )
        .await?;
        return Ok(Next::Done);
    }
    for promise in &installed {
        if promise.metadata.deletion_timestamp.is_none() {
            status::delete_if_present(rt.cp.as_ref(), &kind, promise).await?;
        }
    }
    // Each Promise's deletion wakes this release again.
    Ok(Next::Done)
}

async fn installed_promises(rt: &Runtime, release: &str) -> Result<Vec<Object>, Error> {
    let selector = Selector::from_labels([(RELEASE_NAME_LABEL, release)]);
    Ok(rt
        .cp
        .list(&builtin(Builtin::Promise), None, &selector)
        .await?)
}

async fn set_outcome(rt: &Runtime, obj: &Object, outcome: &Outcome) -> Result<(), Error> {
    let now = now_rfc3339();
    status::update_typed_status(
        rt.cp.as_ref(),
        &builtin(Builtin::PromiseRelease),
        &ObjectKey::of(obj),
        "PromiseRelease",
        |s: &mut PromiseReleaseStatus| {
            s.status = outcome.status.to_string();
            s.observed_generation = obj.metadata.generation;
            crate::api::condition::set_condition(&mut s.conditions, outcome.condition(), &now);
        },
    )
    .await?;
    Ok(())
}

/// Releases whose `sourceRef.secretRef` names this Secret.
pub(crate) async fn using_secret(
    rt: &Runtime,
    secret: &ObjectKey,
) -> Result<Vec<ObjectKey>, Error> {
    let releases = rt
        .cp
        .list(
            &builtin(Builtin::PromiseRelease),
            None,
            &Selector::everything(),
        )
        .await?;
    Ok(releases
        .iter()
        .filter(|o| {
            to_typed::<PromiseRelease>(o).is_ok_and(|r| {
                r.spec.source_ref.secret_ref.is_some_and(|s| {
                    s.name == secret.name && Some(s.namespace()) == secret.namespace.as_deref()
                })
            })
        })
        .map(ObjectKey::of)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_condition_is_kratix_s() {
        let ok = Outcome::installed().condition();
        assert_eq!(
            (ok.status, ok.reason.as_str(), ok.message.as_str()),
            (
                ConditionStatus::True,
                "InstalledSuccessfully",
                "Installed successfully"
            )
        );
        let failed = Outcome::failed("VersionNotMatching", "Version labels do not match".into());
        assert_eq!(failed.status, "Error installing");
        let c = failed.condition();
        assert_eq!(
            (c.type_.as_str(), c.status),
            ("Installed", ConditionStatus::False)
        );
    }
}
