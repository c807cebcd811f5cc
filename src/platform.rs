//! One platform: a home folder, its control plane, and the kinds it knows (Kratix's own plus the
//! request kinds its Promises define). Shared by the commands and the controllers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::printer_columns::{self, PrinterColumn};
use crate::api::promise_api;
use crate::api::{KindInfo, Object};
use crate::store::embedded::EmbeddedStore;
use crate::store::{self, ControlPlane, Selector};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The home's control plane could not be opened or read.
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The home folder's path cannot be made absolute.
    #[error("home folder {home}")]
    Home {
        home: String,
        #[source]
        source: std::io::Error,
    },
    /// A name given on the command line names no kind.
    #[error("unknown kind {name:?}: not a Kratix kind, a core kind, or a kind defined by an applied Promise")]
    UnknownKind { name: String },
}

#[derive(Debug, Clone)]
pub struct Platform {
    /// Folder of everything that is not an object: pipeline runs, state-store caches. For the
    /// embedded runtime it also holds the control plane; on Kubernetes it is the work folder.
    pub home: PathBuf,
    pub store: Arc<dyn ControlPlane>,
}

impl Platform {
    pub fn open(home: &Path) -> Result<Self, Error> {
        // Pipelines see their folders through bind mounts and other processes' working
        // directories, so every path derived from the home must be absolute.
        let home = std::path::absolute(home).map_err(|source| Error::Home {
            home: home.display().to_string(),
            source,
        })?;
        let store = EmbeddedStore::open(&home)?;
        Ok(Self {
            home,
            store: Arc::new(store),
        })
    }

    /// A platform whose objects live in `store` (a Kubernetes API server), with its pipeline
    /// runs and caches under `work_dir`.
    pub(crate) fn with_control_plane(
        work_dir: &Path,
        store: Arc<dyn ControlPlane>,
    ) -> Result<Self, Error> {
        let home = std::path::absolute(work_dir).map_err(|source| Error::Home {
            home: work_dir.display().to_string(),
            source,
        })?;
        Ok(Self { home, store })
    }

    pub fn control_plane(&self) -> Arc<dyn ControlPlane> {
        self.store.clone()
    }

    /// Kind of the Promise objects themselves.
    pub(crate) fn promise_kind() -> KindInfo {
        builtin(crate::api::Builtin::Promise)
    }

    /// Every kind: built-in ones first, then those of stored Promises.
    pub async fn kinds(&self) -> Result<Vec<KindInfo>, Error> {
        Ok(promise_api::all_kinds(&self.promises().await?))
    }

    pub async fn promises(&self) -> Result<Vec<Object>, Error> {
        Ok(self
            .store
            .list(&Self::promise_kind(), None, &Selector::everything())
            .await?)
    }

    /// Resolves a kind as `kubectl` does: kind, plural, singular or short name, any case.
    pub async fn resolve_kind(&self, name: &str) -> Result<KindInfo, Error> {
        let kinds = self.kinds().await?;
        promise_api::resolve_kind(name, &kinds).ok_or_else(|| Error::UnknownKind {
            name: name.to_string(),
        })
    }

    /// The kind of a stored object, given its group and kind name.
    pub async fn kind_of(&self, group: &str, kind: &str) -> Result<Option<KindInfo>, Error> {
        Ok(self
            .kinds()
            .await?
            .into_iter()
            .find(|k| k.group == group && k.kind == kind))
    }

    /// Folder where pipeline runs keep their files and logs.
    pub(crate) fn runs_dir(&self) -> PathBuf {
        self.home.join("runs")
    }

    /// Folder of one pipeline run: its input, output, metadata and logs.
    pub(crate) fn run_dir(&self, run: &Object) -> PathBuf {
        self.runs_dir()
            .join(run.metadata.namespace.clone().unwrap_or_default())
            .join(run.metadata.name.clone().unwrap_or_default())
    }

    /// The logs of one pipeline run.
    pub(crate) fn logs_path(&self, run: &Object) -> PathBuf {
        self.run_dir(run).join("logs.txt")
    }

    /// Folder where state-store backends keep caches (Git's bare repositories).
    pub(crate) fn cache_dir(&self) -> PathBuf {
        self.home.join("cache")
    }
}

/// A built-in Kratix kind by its kind name.
pub(crate) fn builtin(kind: crate::api::Builtin) -> KindInfo {
    kind.info()
}

/// The printer columns the Promise that defines `kind` declares for it: none for Kratix's own
/// and the core kinds, or when it declares none.
pub(crate) async fn declared_columns(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
) -> Result<Vec<PrinterColumn>, store::Error> {
    if crate::api::kinds::builtin_kinds().contains(kind) {
        return Ok(Vec::new());
    }
    let promises = cp
        .list(&Platform::promise_kind(), None, &Selector::everything())
        .await?;
    Ok(promise_defining(&promises, kind)
        .and_then(|promise| promise.data.pointer("/spec/api"))
        .map(|api| printer_columns::declared(api, &kind.version))
        .unwrap_or_default())
}

/// The Promise (among `promises`) whose API is `kind`.
pub(crate) fn promise_defining<'a>(promises: &'a [Object], kind: &KindInfo) -> Option<&'a Object> {
    promises
        .iter()
        .find(|p| promise_api::kinds_from_promises(std::slice::from_ref(*p)).contains(kind))
}
