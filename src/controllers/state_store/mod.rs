//! GitStateStore and BucketStateStore: opens each store's backend (with credentials from its
//! Secret), checks it can be written, reports `Ready`, and hands the backend to the writers.

mod bucket;
pub(crate) mod commit_template;
pub(crate) mod readiness;
pub(crate) mod tls;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use statestores::{Git, GitCredentials, GitOptions, StateStore};
use tokio::sync::Mutex;

use crate::api::secret;
use crate::api::state_store::{SecretRef, StateStoreStatus};
use crate::api::{ConditionStatus, KindInfo, Object, ObjectKey};
use crate::events::Reason;
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::state_store::commit_template::Template;
use crate::controllers::state_store::readiness::store_ready;
use crate::controllers::state_store::readiness::store_status_word;
use crate::controllers::state_store::readiness::StoreProbe;
use crate::controllers::{status, Error, ErrorChain, Next, Runtime};

/// How soon a store that is not ready is checked again.
const RETRY_NOT_READY: Duration = Duration::from_secs(5);

/// An opened state store and what writers need to know about it.
#[derive(Debug, Clone)]
pub(crate) struct StoreHandle {
    pub(crate) store: Arc<dyn StateStore>,
    /// The store's `spec.path`, prefixed to every key.
    pub(crate) path: Option<String>,
    pub(crate) author_name: String,
    pub(crate) author_email: String,
    /// The text above the trailers of each commit, from the store's
    /// `kratix.io/commit-message-template` annotation.
    pub(crate) message_template: Option<Arc<Template>>,
    /// How its server's TLS certificate is trusted (Git over HTTPS).
    pub(crate) tls: statestores::TlsTrust,
    /// Changes whenever the store's spec or Secret changes.
    fingerprint: String,
}

/// Turns the backend opened for store `(kind, name)` into the one the controllers use.
pub(crate) type Wrap =
    Arc<dyn Fn(&str, &str, Arc<dyn StateStore>) -> Arc<dyn StateStore> + Send + Sync>;

/// Opened stores by `(kind, name)`, reopened when their spec or Secret changes.
pub(crate) struct Cache {
    cache_dir: PathBuf,
    home: PathBuf,
    entries: Mutex<HashMap<(String, String), StoreHandle>>,
    wrap: Option<Wrap>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("cache_dir", &self.cache_dir)
            .field("home", &self.home)
            .field("wrapped", &self.wrap.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a store cannot be opened; becomes the `Ready` condition's reason.
#[derive(Debug)]
pub(crate) struct NotReady {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

/// What a store's opened backend depends on: the object itself (its uid: a store deleted and
/// made again under its name starts again at generation 1, maybe with another URL), its spec
/// (generation), its commit-message template (an annotation, which does not change the
/// generation) and its Secret.
fn fingerprint(obj: &Object, secret: Option<&secret::Secret>) -> String {
    format!(
        "{}/{}/{:?}/{}",
        obj.metadata.uid.as_deref().unwrap_or_default(),
        obj.metadata.generation.unwrap_or(0),
        template_text(obj),
        secret
            .and_then(|s| s.metadata.resource_version.clone())
            .unwrap_or_default()
    )
}

impl Cache {
    pub(crate) fn new(cache_dir: PathBuf, home: PathBuf) -> Self {
        Self {
            cache_dir,
            home,
            entries: Mutex::new(HashMap::new()),
            wrap: None,
        }
    }

    /// Every backend it opens goes through `wrap` before anybody uses it (`diff` keeps writes
    /// in memory this way). `home` resolves relative repository paths, as in [`Cache::new`].
    pub(crate) fn wrapped(cache_dir: PathBuf, home: PathBuf, wrap: Wrap) -> Self {
        Self {
            wrap: Some(wrap),
            ..Self::new(cache_dir, home)
        }
    }

    /// The backend of a store, opened (or reopened after a change) as needed.
    pub(crate) async fn get(
        &self,
        rt: &Runtime,
        kind: &str,
        name: &str,
    ) -> Result<Result<StoreHandle, NotReady>, Error> {
        let Some(store_kind) = crate::api::Builtin::state_store(kind) else {
            return Ok(Err(NotReady {
                reason: crate::api::words::reasons::STATE_STORE_NOT_FOUND,
                message: format!("{kind:?} is not a kind of state store"),
            }));
        };
        let Some(obj) = rt.cp.get(&builtin(store_kind), None, name).await? else {
            return Ok(Err(NotReady {
                reason: crate::api::words::reasons::STATE_STORE_NOT_FOUND,
                message: format!("{kind} {name:?} not found"),
            }));
        };
        let secret = match secret_of(rt, &obj).await? {
            Ok(s) => s,
            Err(not_ready) => return Ok(Err(not_ready)),
        };
        let fingerprint = fingerprint(&obj, secret.as_ref());
        let mut entries = self.entries.lock().await;
        let cache_key = (kind.to_string(), name.to_string());
        if let Some(handle) = entries.get(&cache_key) {
            if handle.fingerprint == fingerprint {
                return Ok(Ok(handle.clone()));
            }
        }
        let values = secret.as_ref().map(secret::values).unwrap_or_default();
        let opened = match kind {
            "GitStateStore" => self.open_git(&obj, &values, rt).await,
            _ => bucket::open_bucket(&obj, &values),
        };
        match opened {
            Ok(mut handle) => {
                handle.fingerprint = fingerprint;
                if let Some(wrap) = &self.wrap {
                    handle.store = wrap(kind, name, handle.store);
                }
                entries.insert(cache_key, handle.clone());
                Ok(Ok(handle))
            }
            Err(not_ready) => {
                entries.remove(&cache_key);
                Ok(Err(not_ready))
            }
        }
    }

    async fn open_git(
        &self,
        obj: &Object,
        secret: &std::collections::BTreeMap<String, Vec<u8>>,
        rt: &Runtime,
    ) -> Result<StoreHandle, NotReady> {
        let spec: crate::api::state_store::GitStateStoreSpec = serde_json::from_value(
            obj.data.get("spec").cloned().unwrap_or_default(),
        )
        .map_err(|e| NotReady {
            reason: "ErrorInitialisingWriter",
            message: e.to_string(),
        })?;
        // Checked before anything is opened: a store with a bad template is used for nothing.
        let message_template = match template_text(obj) {
            None => None,
            Some(text) => Some(Arc::new(Template::parse(text).map_err(|e| NotReady {
                reason: "InvalidCommitMessageTemplate",
                message: format!(
                    "annotation {}: {e}",
                    crate::api::labels::COMMIT_MESSAGE_TEMPLATE
                ),
            })?)),
        };
        let name = obj.metadata.name.clone().unwrap_or_default();
        let text = |k: &str| {
            secret
                .get(k)
                .map(|v| String::from_utf8_lossy(v).to_string())
        };
        let credentials = match spec.auth_method.as_deref().unwrap_or("basicAuth") {
            "ssh" => GitCredentials::Ssh {
                private_key: text("sshPrivateKey").ok_or_else(|| NotReady {
                    reason: "SecretNotFound",
                    message: "the Secret has no sshPrivateKey".into(),
                })?,
                known_hosts: text("knownHosts"),
                username: None,
            },
            "basicAuth" => match (text("username"), text("password")) {
                (Some(username), Some(password)) => GitCredentials::Basic { username, password },
                _ => GitCredentials::None,
            },
            other => {
                return Err(NotReady {
                    reason: "ErrorInitialisingWriter",
                    message: format!(
                        "authMethod {other:?} is not supported (use basicAuth or ssh)"
                    ),
                })
            }
        };
        let local = local_repository_path(&self.home, &spec.url);
        let url = match &local {
            // Opening a local repository creates it when it is missing. Behind a wrap (a
            // preview) nothing may be created there: an empty repository in the cache stands in.
            Some(path) if self.wrap.is_some() && !path.exists() => self
                .cache_dir
                .join("missing-git")
                .join(&name)
                .display()
                .to_string(),
            Some(path) if !spec.url.starts_with("file://") => path.display().to_string(),
            _ => spec.url.clone(),
        };
        let mut options = GitOptions::new(url, spec.branch());
        options.cache_dir = Some(self.cache_dir.join("git").join(&name));
        options.credentials = credentials;
        options.tls = tls::trust(spec.insecure, text(tls::CA_KEY));
        options.timeout = rt.settings.git_timeout;
        let trust = options.tls.clone();
        let events: Arc<dyn statestores::PushEvents> = rt.metrics.clone();
        // Opening clones or fetches the repository: file and network work, off the runtime's
        // workers (the cache's lock is held meanwhile, so a store is opened once).
        let git = tokio::task::spawn_blocking(move || {
            Git::open_with_events(options, Some(events)).map_err(|e| ErrorChain(&e).to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|opened| opened)
        .map_err(|message| NotReady {
            reason: "ErrorInitialisingWriter",
            message,
        })?;
        let author = spec.git_author.clone().unwrap_or_default();
        Ok(StoreHandle {
            store: Arc::new(git),
            path: spec.path.clone(),
            author_name: author
                .name
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "kratix".into()),
            author_email: author.email.unwrap_or_default(),
            message_template,
            tls: trust,
            fingerprint: String::new(),
        })
    }
}

/// The store's commit message template, if it has one.
fn template_text(obj: &Object) -> Option<&str> {
    obj.metadata
        .annotations
        .as_ref()?
        .get(crate::api::labels::COMMIT_MESSAGE_TEMPLATE)
        .map(String::as_str)
}

/// The Secret a store references (namespace defaults to `default`).
async fn secret_of(
    rt: &Runtime,
    obj: &Object,
) -> Result<Result<Option<secret::Secret>, NotReady>, Error> {
    let secret_ref = match SecretRef::of(obj) {
        None => return Ok(Ok(None)),
        Some(Ok(secret_ref)) => secret_ref,
        Some(Err(e)) => {
            return Ok(Err(NotReady {
                reason: "SecretNotFound",
                message: format!("spec.secretRef is invalid: {e}"),
            }))
        }
    };
    let (name, ns) = (secret_ref.name.as_str(), secret_ref.namespace());
    let Some(secret_obj) = rt
        .cp
        .get(&builtin(crate::api::Builtin::Secret), Some(ns), name)
        .await?
    else {
        return Ok(Err(NotReady {
            reason: "SecretNotFound",
            message: format!("Secret {ns}/{name} not found"),
        }));
    };
    match crate::api::object::to_typed::<secret::Secret>(&secret_obj) {
        Ok(s) => Ok(Ok(Some(s))),
        // NB: not the parser's message, which may quote a value.
        Err(_) => Ok(Err(NotReady {
            reason: "SecretNotFound",
            message: match secret::check_values(&secret_obj.data) {
                Err(why) => format!("Secret {ns}/{name} is not valid: {why}"),
                Ok(()) => format!("Secret {ns}/{name} cannot be read as a Secret"),
            },
        })),
    }
}

/// A repository given as a local path: absolute, `file://`, or relative — relative paths are
/// inside the home folder, so a platform's own store travels with its home.
pub(crate) fn local_repository_path(home: &Path, url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    if url.contains("://") {
        return None;
    }
    // scp-style `user@host:path` (a colon before any slash) is remote.
    let colon = url.find(':');
    let slash = url.find('/');
    if let Some(c) = colon {
        if slash.is_none_or(|s| c < s) {
            return None;
        }
    }
    let path = Path::new(url);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        let home = std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf());
        home.join(path)
    })
}

/// Stores whose `secretRef` names this Secret.
pub(crate) async fn stores_using_secret(
    rt: &Runtime,
    secret: &ObjectKey,
) -> Result<Vec<ObjectKey>, Error> {
    let mut out = Vec::new();
    for kind in crate::api::kinds::STATE_STORES {
        for store in rt
            .cp
            .list(&builtin(kind), None, &Selector::everything())
            .await?
        {
            let uses = SecretRef::of(&store).and_then(Result::ok).is_some_and(|r| {
                r.name == secret.name && Some(r.namespace()) == secret.namespace.as_deref()
            });
            if uses {
                out.push(ObjectKey::of(&store));
            }
        }
    }
    Ok(out)
}

pub(crate) async fn reconcile(rt: &Runtime, kind: &KindInfo, obj: Object) -> Result<Next, Error> {
    let key = ObjectKey::of(&obj);
    let generation = obj.metadata.generation;
    let ready = match rt.state_stores.get(rt, &kind.kind, &key.name).await? {
        Err(not_ready) => store_ready(StoreProbe::NotOpened {
            reason: not_ready.reason,
            message: &not_ready.message,
        }),
        Ok(handle) => match handle.store.check_access().await {
            Ok(()) => {
                let unverified = handle.tls == statestores::TlsTrust::Insecure;
                let ready = store_ready(StoreProbe::Writable {
                    unverified: unverified.then_some(tls::NOT_VERIFIED),
                });
                // Once per change of what the store says, not at every check.
                if unverified
                    && stored_ready_message(&obj).as_deref() != Some(ready.message.as_str())
                {
                    let message = format!("{}/{}: {}", kind.kind, key.name, tls::NOT_VERIFIED);
                    crate::events::record(&rt.cp, &obj, Reason::TlsNotVerified, &message).await;
                }
                ready
            }
            Err(e) => {
                let mut error = ErrorChain(&e).to_string();
                if matches!(e, statestores::Error::UntrustedCertificate { .. }) {
                    error = format!("{error}; {}", tls::untrusted_hint(&handle.tls));
                }
                store_ready(StoreProbe::AccessFailed { error: &error })
            }
        },
    };
    let next = if ready.status == ConditionStatus::True {
        Next::After(rt.settings.store_recheck)
    } else {
        Next::After(RETRY_NOT_READY)
    };
    let word = store_status_word(&ready);
    status::update_typed_status(
        rt.cp.as_ref(),
        kind,
        &key,
        "state store",
        |s: &mut StateStoreStatus| {
            status::merge_conditions(&mut s.conditions, [ready.clone()]);
            s.status = Some(word.to_string());
            s.observed_generation = generation;
        },
    )
    .await?;
    Ok(next)
}

/// The message of the store's `Ready` condition as stored.
fn stored_ready_message(obj: &Object) -> Option<String> {
    crate::api::condition::get(obj, crate::api::words::types::READY).map(|c| c.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(uid: &str, generation: i64, template: Option<&str>) -> Object {
        let mut annotations = serde_json::Map::new();
        if let Some(t) = template {
            annotations.insert("kratix.io/commit-message-template".into(), t.into());
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "GitStateStore",
            "metadata": {"name": "default", "uid": uid, "generation": generation,
                         "annotations": annotations},
            "spec": {"url": "git://example/repo.git"},
        }))
        .expect("store")
    }

    #[test]
    fn a_backend_is_reopened_when_its_store_changes_or_is_made_again() {
        let base = fingerprint(&store("u1", 1, None), None);
        let cases = [
            ("unchanged", store("u1", 1, None), true),
            ("spec changed", store("u1", 2, None), false),
            ("template changed", store("u1", 1, Some("x")), false),
            ("deleted and made again", store("u2", 1, None), false),
        ];
        for (case, obj, same) in cases {
            assert_eq!(fingerprint(&obj, None) == base, same, "{case}");
        }
    }
}
