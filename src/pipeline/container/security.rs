//! A container's `securityContext` as engine settings. Fields the engine has no equivalent for
//! are refused by name rather than ignored: a pipeline must not run with less isolation than it
//! asked for.

use serde_json::Value;

/// The engine's side of a security context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EngineSecurity {
    /// `runAsUser` and `runAsGroup`; see [`EngineSecurity::user`].
    pub uid: Option<i64>,
    pub gid: Option<i64>,
    pub read_only_root: bool,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    pub privileged: bool,
    pub security_opt: Vec<String>,
    /// `runAsNonRoot`: checked against the user the container ends up with.
    pub run_as_non_root: bool,
}

/// A field that cannot be honoured, named as in the Pipeline (`securityContext.seLinuxOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported {
    pub field: String,
    pub why: String,
}

fn unsupported(field: &str, why: &str) -> Unsupported {
    Unsupported {
        field: format!("securityContext.{field}"),
        why: why.to_string(),
    }
}

/// Translates `securityContext` (absent or null: nothing to do).
pub(crate) fn translate(context: Option<&Value>) -> Result<EngineSecurity, Unsupported> {
    let mut out = EngineSecurity::default();
    let Some(fields) = context.and_then(Value::as_object) else {
        return match context {
            None | Some(Value::Null) => Ok(out),
            Some(_) => Err(unsupported("", "must be a mapping")),
        };
    };
    let int = |name: &str, v: &Value| {
        v.as_i64()
            .filter(|n| *n >= 0)
            .ok_or_else(|| unsupported(name, "must be a non-negative integer"))
    };
    let boolean = |name: &str, v: &Value| {
        v.as_bool()
            .ok_or_else(|| unsupported(name, "must be true or false"))
    };
    for (name, value) in fields {
        match name.as_str() {
            _ if value.is_null() => {}
            "runAsUser" => out.uid = Some(int(name, value)?),
            "runAsGroup" => out.gid = Some(int(name, value)?),
            "runAsNonRoot" => out.run_as_non_root = boolean(name, value)?,
            "readOnlyRootFilesystem" => out.read_only_root = boolean(name, value)?,
            "privileged" => out.privileged = boolean(name, value)?,
            "allowPrivilegeEscalation" => {
                if !boolean(name, value)? {
                    out.security_opt.push("no-new-privileges".into());
                }
            }
            "capabilities" => capabilities(value, &mut out)?,
            "seccompProfile" => match value.get("type").and_then(Value::as_str) {
                Some("RuntimeDefault") => {}
                Some("Unconfined") => out.security_opt.push("seccomp=unconfined".into()),
                _ => {
                    return Err(unsupported(
                        "seccompProfile.type",
                        "only RuntimeDefault and Unconfined can be given to the engine",
                    ))
                }
            },
            "appArmorProfile" => match value.get("type").and_then(Value::as_str) {
                Some("RuntimeDefault") => {}
                Some("Unconfined") => out.security_opt.push("apparmor=unconfined".into()),
                _ => {
                    return Err(unsupported(
                        "appArmorProfile.type",
                        "only RuntimeDefault and Unconfined can be given to the engine",
                    ))
                }
            },
            "procMount" if value.as_str() == Some("Default") => {}
            _ => {
                return Err(unsupported(
                    name,
                    "is not supported by the container executor of the embedded runtime",
                ))
            }
        }
    }
    Ok(out)
}

impl EngineSecurity {
    /// The engine's `User`: `runAsUser[:runAsGroup]`; `runAsGroup` alone keeps the image's user
    /// (root when it names none) with that group, as in Kubernetes. `None` keeps the image's.
    pub(crate) fn user(&self, image_user: &str) -> Option<String> {
        let image_uid = image_user.split(':').next().unwrap_or_default();
        match (self.uid, self.gid) {
            (None, None) => None,
            (Some(uid), None) => Some(uid.to_string()),
            (Some(uid), Some(gid)) => Some(format!("{uid}:{gid}")),
            (None, Some(gid)) if image_uid.is_empty() => Some(format!("0:{gid}")),
            (None, Some(gid)) => Some(format!("{image_uid}:{gid}")),
        }
    }
}

fn capabilities(value: &Value, out: &mut EngineSecurity) -> Result<(), Unsupported> {
    let Some(fields) = value.as_object() else {
        return Err(unsupported("capabilities", "must be a mapping"));
    };
    for (name, list) in fields {
        let names: Vec<String> = match list {
            Value::Null => continue,
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    unsupported(&format!("capabilities.{name}"), "must be a list of names")
                })?,
            _ => {
                return Err(unsupported(
                    &format!("capabilities.{name}"),
                    "must be a list of names",
                ))
            }
        };
        match name.as_str() {
            "add" => out.cap_add.extend(names),
            "drop" => out.cap_drop.extend(names),
            _ => {
                return Err(unsupported(
                    &format!("capabilities.{name}"),
                    "is not a field of capabilities",
                ))
            }
        }
    }
    Ok(())
}

/// `runAsNonRoot` against the user the container gets (`user`, else the image's): as the kubelet
/// does, a user that is not a number cannot be checked and is refused.
pub(crate) fn non_root_violation(security: &EngineSecurity, image_user: &str) -> Option<String> {
    if !security.run_as_non_root {
        return None;
    }
    let user = security
        .user(image_user)
        .unwrap_or_else(|| image_user.to_string());
    let uid = user.split(':').next().unwrap_or_default();
    match uid.parse::<u64>() {
        Ok(0) => Some("runAsNonRoot is set but the container would run as root (uid 0)".into()),
        Ok(_) => None,
        Err(_) if uid.is_empty() => {
            Some("runAsNonRoot is set but the image runs as root; set runAsUser".into())
        }
        Err(_) => Some(format!(
            "runAsNonRoot is set but the image's user {uid:?} is not numeric; set runAsUser"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn translates_supported_fields() {
        let cases = [
            (json!(null), EngineSecurity::default()),
            (
                json!({"runAsUser": 1000}),
                EngineSecurity {
                    uid: Some(1000),
                    ..EngineSecurity::default()
                },
            ),
            (
                json!({"runAsUser": 1000, "runAsGroup": 3000, "readOnlyRootFilesystem": true}),
                EngineSecurity {
                    uid: Some(1000),
                    gid: Some(3000),
                    read_only_root: true,
                    ..EngineSecurity::default()
                },
            ),
            (
                json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                       "seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": true, "privileged": false}),
                EngineSecurity {
                    cap_drop: vec!["ALL".into()],
                    cap_add: vec!["NET_BIND_SERVICE".into()],
                    security_opt: vec!["no-new-privileges".into()],
                    run_as_non_root: true,
                    ..EngineSecurity::default()
                },
            ),
        ];
        for (context, want) in cases {
            assert_eq!(translate(Some(&context)), Ok(want), "{context}");
        }
        assert_eq!(translate(None), Ok(EngineSecurity::default()));
    }

    #[test]
    fn refuses_what_the_engine_cannot_do() {
        let cases = [
            (
                json!({"seLinuxOptions": {"level": "s0"}}),
                "securityContext.seLinuxOptions",
            ),
            (
                json!({"windowsOptions": {}}),
                "securityContext.windowsOptions",
            ),
            (
                json!({"procMount": "Unmasked"}),
                "securityContext.procMount",
            ),
            (
                json!({"seccompProfile": {"type": "Localhost"}}),
                "securityContext.seccompProfile.type",
            ),
            (json!({"runAsUser": -1}), "securityContext.runAsUser"),
            (
                json!({"capabilities": {"drop": "ALL"}}),
                "securityContext.capabilities.drop",
            ),
            (json!("yes"), "securityContext."),
        ];
        for (context, field) in cases {
            let err = translate(Some(&context)).expect_err("refused");
            assert_eq!(err.field, field, "{context}");
        }
    }

    #[test]
    fn user_follows_kubernetes() {
        let s = |uid, gid| EngineSecurity {
            uid,
            gid,
            ..EngineSecurity::default()
        };
        let cases = [
            (s(None, None), "app", None),
            (s(Some(5), None), "app", Some("5")),
            (s(Some(5), Some(6)), "", Some("5:6")),
            (s(None, Some(6)), "", Some("0:6")),
            (s(None, Some(6)), "1000:1000", Some("1000:6")),
        ];
        for (security, image_user, want) in cases {
            assert_eq!(security.user(image_user).as_deref(), want, "{security:?}");
        }
    }

    #[test]
    fn run_as_non_root_checks_the_final_user() {
        let non_root = |uid: Option<i64>| EngineSecurity {
            run_as_non_root: true,
            uid,
            ..EngineSecurity::default()
        };
        let cases = [
            (non_root(None), "1000", false),
            (non_root(None), "", true),
            (non_root(None), "app", true),
            (non_root(Some(0)), "1000", true),
            (non_root(Some(1000)), "", false),
            (EngineSecurity::default(), "", false),
        ];
        for (security, image_user, refused) in cases {
            assert_eq!(
                non_root_violation(&security, image_user).is_some(),
                refused,
                "{security:?} {image_user:?}"
            );
        }
    }
}
