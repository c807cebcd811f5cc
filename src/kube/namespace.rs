//! The system namespace (promise workflows, system Works, the Lease): looked at with `get`, and
//! created only when it is missing. An install from `deploy/` creates it, and the controller's
//! ClusterRole reads Namespaces but does not create them, so a missing or unreadable namespace
//! is reported for what it is rather than retried as a create that can never be allowed.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::Client;

/// Why the system namespace is not usable.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading Namespace {namespace} (the controller needs `get` on namespaces)")]
    Read {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "Namespace {namespace} does not exist and could not be created: create it (deploy/namespace.yaml does) or let the controller create namespaces"
    )]
    Create {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("Namespace {namespace} is being deleted")]
    Terminating { namespace: String },
}

/// What `get` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Active,
    Terminating,
    Missing,
}

fn found(ns: Option<&Namespace>) -> Found {
    match ns {
        None => Found::Missing,
        Some(ns) if ns.metadata.deletion_timestamp.is_some() => Found::Terminating,
        Some(ns) => match ns.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some("Terminating") => Found::Terminating,
            _ => Found::Active,
        },
    }
}

/// Whether a failed create still leaves the namespace there (another writer made it first).
fn created_anyway(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

/// Makes sure Namespace `name` exists and is not being deleted, creating it only when missing.
pub(crate) async fn ensure(client: Client, name: &str) -> Result<(), Error> {
    let api: Api<Namespace> = Api::all(client);
    let current = api.get_opt(name).await.map_err(|source| Error::Read {
        namespace: name.to_string(),
        source,
    })?;
    match found(current.as_ref()) {
        Found::Active => Ok(()),
        Found::Terminating => Err(Error::Terminating {
            namespace: name.to_string(),
        }),
        Found::Missing => {
            let ns = Namespace {
                metadata: kube::core::ObjectMeta {
                    name: Some(name.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match api.create(&PostParams::default(), &ns).await {
                Ok(_) => Ok(()),
                Err(err) if created_anyway(&err) => Ok(()),
                Err(source) => Err(Error::Create {
                    namespace: name.to_string(),
                    source,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(deleting: bool, phase: Option<&str>) -> Namespace {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "kratix-platform-system",
                "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z"),
            },
            "status": {"phase": phase},
        }))
        .expect("namespace")
    }

    #[test]
    fn only_a_missing_namespace_is_created() {
        let cases = [
            (None, Found::Missing),
            (Some(ns(false, Some("Active"))), Found::Active),
            (Some(ns(false, None)), Found::Active),
            (Some(ns(true, Some("Active"))), Found::Terminating),
            (Some(ns(false, Some("Terminating"))), Found::Terminating),
        ];
        for (current, want) in cases {
            assert_eq!(found(current.as_ref()), want, "{current:?}");
        }
    }

    #[test]
    fn a_create_that_lost_the_race_is_a_success() {
        let status = |code, reason: &str| {
            kube::Error::Api(
                kube::core::Status::failure("x", reason)
                    .with_code(code)
                    .boxed(),
            )
        };
        let cases = [
            (status(409, "AlreadyExists"), true),
            (status(403, "Forbidden"), false),
            (status(409, "Conflict"), false),
        ];
        for (err, want) in cases {
            assert_eq!(created_anyway(&err), want, "{err}");
        }
    }
}
