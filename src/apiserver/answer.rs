//! The API's refusals as Kubernetes `Status` bodies, worded as the API server words them, so
//! that kubectl and client libraries show and classify them as they do a cluster's. They name
//! kinds, names, verbs and users; never a token or an object's content.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusDetails};

/// A refusal: the HTTP status and the body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) code: u16,
    pub(crate) status: Status,
}

/// The resource a refusal is about: its plural and group.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resource<'a> {
    pub(crate) group: &'a str,
    pub(crate) plural: &'a str,
}

impl Resource<'_> {
    /// `plural.group`, or `plural` for the core group, as the API server names resources.
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    fn details(&self, name: Option<&str>) -> StatusDetails {
        StatusDetails {
            name: name.map(str::to_string),
            group: Some(self.group.to_string()).filter(|g| !g.is_empty()),
            kind: Some(self.plural.to_string()),
            ..StatusDetails::default()
        }
    }
}

fn refusal(code: u16, reason: &str, message: String, details: Option<StatusDetails>) -> Refusal {
    Refusal {
        code,
        status: Status {
            code: Some(i32::from(code)),
            details,
            message: Some(message),
            reason: Some(reason.to_string()),
            status: Some("Failure".to_string()),
            ..Status::default()
        },
    }
}

pub(crate) fn not_found(resource: Resource<'_>, name: &str) -> Refusal {
    refusal(
        404,
        "NotFound",
        format!("{} {name:?} not found", resource.qualified()),
        Some(resource.details(Some(name))),
    )
}

/// A path that names no resource this API serves.
pub(crate) fn no_such_resource() -> Refusal {
    refusal(
        404,
        "NotFound",
        "the server could not find the requested resource".to_string(),
        None,
    )
}

/// What `user` may not do, as Kubernetes' authorizer says it.
pub(crate) fn forbidden(
    user: &str,
    verb: &str,
    resource: Resource<'_>,
    subresource: Option<&str>,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Refusal {
    let what = match name {
        Some(name) => format!("{} {name:?}", resource.qualified()),
        None => resource.qualified(),
    };
    let plural = match subresource {
        Some(sub) => format!("{}/{sub}", resource.plural),
        None => resource.plural.to_string(),
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace {ns:?}"),
        None => "at the cluster scope".to_string(),
    };
    refusal(
        403,
        "Forbidden",
        format!(
            "{what} is forbidden: User {user:?} cannot {verb} resource {plural:?} in API group {:?} {scope}",
            resource.group
        ),
        Some(resource.details(name)),
    )
}

pub(crate) fn unauthorized() -> Refusal {
    refusal(401, "Unauthorized", "Unauthorized".to_string(), None)
}

/// Any write: the API only reads.
pub(crate) fn read_only(method: &str) -> Refusal {
    refusal(
        405,
        "MethodNotAllowed",
        format!("the server does not allow this method on the requested resource: {method} refused, this API is read-only; change objects with `kratix-rs apply`, `delete`, `label` or `annotate`"),
        None,
    )
}

pub(crate) fn bad_request(message: String) -> Refusal {
    refusal(400, "BadRequest", message, None)
}

/// A watch from a position the change feed no longer holds.
pub(crate) fn expired(resource_version: &str) -> Refusal {
    refusal(
        410,
        "Expired",
        format!("too old resource version: {resource_version}"),
        None,
    )
}

/// The control plane failed; the message names the failure, never an object's content.
pub(crate) fn internal(message: String) -> Refusal {
    refusal(500, "InternalError", message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_the_api_server_words_them() {
        let secrets = Resource {
            group: "",
            plural: "secrets",
        };
        let pg = Resource {
            group: "marketplace.kratix.io",
            plural: "postgresqls",
        };
        let user = "system:serviceaccount:default:app-resource-configure-wait";
        let cases = [
            (
                not_found(secrets, "db"),
                404,
                "NotFound",
                r#"secrets "db" not found"#.to_string(),
            ),
            (
                not_found(pg, "db"),
                404,
                "NotFound",
                r#"postgresqls.marketplace.kratix.io "db" not found"#.to_string(),
            ),
            (
                forbidden(user, "get", secrets, None, Some("default"), Some("db")),
                403,
                "Forbidden",
                format!(
                    r#"secrets "db" is forbidden: User "{user}" cannot get resource "secrets" in API group "" in the namespace "default""#
                ),
            ),
            (
                forbidden(user, "list", pg, None, None, None),
                403,
                "Forbidden",
                format!(
                    r#"postgresqls.marketplace.kratix.io is forbidden: User "{user}" cannot list resource "postgresqls" in API group "marketplace.kratix.io" at the cluster scope"#
                ),
            ),
            (
                forbidden(user, "get", pg, Some("status"), Some("a"), Some("db")),
                403,
                "Forbidden",
                format!(
                    r#"postgresqls.marketplace.kratix.io "db" is forbidden: User "{user}" cannot get resource "postgresqls/status" in API group "marketplace.kratix.io" in the namespace "a""#
                ),
            ),
            (
                unauthorized(),
                401,
                "Unauthorized",
                "Unauthorized".to_string(),
            ),
            (
                expired("3"),
                410,
                "Expired",
                "too old resource version: 3".to_string(),
            ),
        ];
        for (got, code, reason, message) in cases {
            assert_eq!(got.code, code);
            assert_eq!(got.status.code, Some(i32::from(code)));
            assert_eq!(got.status.reason.as_deref(), Some(reason));
            assert_eq!(got.status.message.as_deref(), Some(message.as_str()));
            let body = serde_json::to_value(&got.status).expect("json");
            assert_eq!(body["kind"], "Status");
            assert_eq!(body["apiVersion"], "v1");
            assert_eq!(body["status"], "Failure");
        }
        let body = serde_json::to_value(not_found(pg, "db").status).expect("json");
        assert_eq!(body["details"]["group"], "marketplace.kratix.io");
        assert_eq!(body["details"]["kind"], "postgresqls");
        assert!(read_only("POST")
            .status
            .message
            .unwrap_or_default()
            .contains("kratix-rs apply"));
    }
}
