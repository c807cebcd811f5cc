//! A plain folder on this machine: what a GitOps tool watching a local path, or a person, reads.

use crate::{Change, Error, Key, Result, StateStore, Version, WriteInfo, WriteOutcome};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// Names of our in-flight temporary files start with this, so listings skip them.
const TEMP_PREFIX: &str = ".kratix-tmp-";

/// Files under a root folder, one file per key. Each file is replaced atomically (temporary
/// file, then rename); a write of several files is not atomic as a whole.
///
/// The version after a write is the sha256 over every `(key, sha256(content))` in key order, so
/// equal contents give equal versions.
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
}

/// What failed inside the folder backend; mapped to [`crate::Error::Backend`].
#[derive(Debug, thiserror::Error)]
enum DirError {
    #[error("could not create folder {path}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not remove {path}")]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("blocking task failed")]
    Join(#[source] tokio::task::JoinError),
}

impl LocalDir {
    /// A store rooted at `root`, which is created when missing.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|source| {
            Self::error_at(
                &root,
                DirError::CreateDir {
                    path: root.clone(),
                    source,
                },
            )
        })?;
        Ok(Self { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn error_at(root: &Path, err: DirError) -> Error {
        Error::Backend {
            store: root.display().to_string(),
            context: "folder store".to_string(),
            source: Box::new(err),
        }
    }

    fn error(&self, err: DirError) -> Error {
        Self::error_at(&self.root, err)
    }

    fn path_of(&self, key: &Key) -> PathBuf {
        key.segments().fold(self.root.clone(), |p, s| p.join(s))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(LocalDir) -> Result<T, DirError> + Send + 'static,
    ) -> Result<T> {
        let this = self.clone();
        match tokio::task::spawn_blocking(move || work(this)).await {
            Ok(result) => result.map_err(|e| self.error(e)),
            Err(join) => Err(self.error(DirError::Join(join))),
        }
    }

    fn read_file(&self, key: &Key) -> Result<Option<Vec<u8>>, DirError> {
        let path = self.path_of(key);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            // A key below a file, or a folder at the key, is simply absent.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory
                ) =>
            {
                Ok(None)
            }
            Err(source) => Err(DirError::Read { path, source }),
        }
    }

    fn put_file(&self, key: &Key, content: &[u8]) -> Result<(), DirError> {
        let path = self.path_of(key);
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        std::fs::create_dir_all(&parent).map_err(|source| DirError::CreateDir {
            path: parent.clone(),
            source,
        })?;
        let write_err = |source| DirError::Write {
            path: path.clone(),
            source,
        };
        let mut temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&parent)
            .map_err(write_err)?;
        temp.write_all(content).map_err(write_err)?;
        temp.as_file().sync_all().map_err(write_err)?;
        temp.persist(&path).map_err(|e| write_err(e.error))?;
        Ok(())
    }

    fn delete_file(&self, key: &Key) -> Result<bool, DirError> {
        let path = self.path_of(key);
        if path.is_dir() {
            return Ok(false);
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {
                self.prune_empty_parents(&path);
                Ok(true)
            }
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(false)
            }
            Err(source) => Err(DirError::Remove { path, source }),
        }
    }

    /// Removes folders left empty by a delete, up to (not including) the root, so that the
    /// folder looks like what was written; a non-empty folder stops the walk.
    fn prune_empty_parents(&self, file: &Path) {
        let mut dir = file.parent();
        while let Some(d) = dir {
            if d == self.root || !d.starts_with(&self.root) || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    fn apply(&self, changes: &[Change]) -> Result<WriteOutcome, DirError> {
        let mut outcome = WriteOutcome::default();
        for change in changes {
            match change {
                Change::Put(key, content) => {
                    if self.read_file(key)?.as_deref() != Some(content.as_ref()) {
                        self.put_file(key, content)?;
                        outcome.written.push(key.clone());
                    }
                }
                Change::Delete(key) => {
                    if self.delete_file(key)? {
                        outcome.deleted.push(key.clone());
                    }
                }
            }
        }
        if outcome.changed() {
            outcome.version = Some(self.version()?);
        }
        Ok(outcome)
    }

    fn list_files(&self, prefix: &Key) -> Result<Vec<Key>, DirError> {
        let mut found = Vec::new();
        let start = self.path_of(prefix);
        if start.is_file() {
            return Ok(vec![prefix.clone()]);
        }
        self.walk(&start, prefix.clone(), &mut found)?;
        found.sort();
        Ok(found)
    }

    fn walk(&self, dir: &Path, at: Key, found: &mut Vec<Key>) -> Result<(), DirError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(())
            }
            Err(source) => {
                return Err(DirError::Read {
                    path: dir.to_path_buf(),
                    source,
                })
            }
        };
        for entry in entries {
            let entry = entry.map_err(|source| DirError::Read {
                path: dir.to_path_buf(),
                source,
            })?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(DirError::NotUtf8 { path });
            };
            if name.starts_with(TEMP_PREFIX) {
                continue;
            }
            let child = at
                .join(&name)
                .map_err(|_| DirError::NotUtf8 { path: path.clone() })?;
            let file_type = entry.file_type().map_err(|source| DirError::Read {
                path: path.clone(),
                source,
            })?;
            if file_type.is_dir() {
                self.walk(&path, child, found)?;
            } else {
                found.push(child);
            }
        }
        Ok(())
    }

    fn version(&self) -> Result<Version, DirError> {
        let mut hasher = Sha256::new();
        for key in self.list_files(&Key::root())? {
            let content = self.read_file(&key)?.unwrap_or_default();
            hasher.update(key.as_str().as_bytes());
            hasher.update([0]);
            hasher.update(Sha256::digest(&content));
        }
        Ok(Version(hex::encode(hasher.finalize())))
    }
}

#[async_trait::async_trait]
impl StateStore for LocalDir {
    fn kind(&self) -> &'static str {
        "dir"
    }

    async fn write(&self, changes: &[Change], _info: &WriteInfo) -> Result<WriteOutcome> {
        let changes = changes.to_vec();
        self.blocking(move |dir| dir.apply(&changes)).await
    }

    async fn read(&self, key: &Key) -> Result<Option<Bytes>> {
        let key = key.clone();
        let content = self.blocking(move |dir| dir.read_file(&key)).await?;
        Ok(content.map(Bytes::from))
    }

    async fn list(&self, prefix: &Key) -> Result<Vec<Key>> {
        let prefix = prefix.clone();
        self.blocking(move |dir| dir.list_files(&prefix)).await
    }

    async fn check_access(&self) -> Result<()> {
        self.blocking(|dir| {
            // Dropping the temporary file removes it.
            tempfile::Builder::new()
                .prefix(TEMP_PREFIX)
                .tempfile_in(&dir.root)
                .map(drop)
                .map_err(|source| DirError::Write {
                    path: dir.root.clone(),
                    source,
                })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{info, key, put};

    #[tokio::test]
    async fn equal_contents_give_equal_versions_and_empty_folders_are_pruned() {
        let one = tempfile::tempdir().expect("tempdir");
        let two = tempfile::tempdir().expect("tempdir");
        let a = LocalDir::new(one.path()).expect("dir");
        let b = LocalDir::new(two.path()).expect("dir");
        let va = a
            .write(&[put("x/y/z", "1")], &info("a"))
            .await
            .expect("write");
        let vb = b
            .write(&[put("x/y/z", "1")], &info("b"))
            .await
            .expect("write");
        assert_eq!(va.version, vb.version);
        a.write(&[Change::Delete(key("x/y/z"))], &info("del"))
            .await
            .expect("delete");
        assert!(!one.path().join("x").exists(), "empty folders are removed");
        assert!(one.path().exists(), "the root stays");
    }

    mod conformance {
        use crate::LocalDir;

        async fn fresh() -> (LocalDir, tempfile::TempDir) {
            let root = tempfile::tempdir().expect("tempdir");
            (LocalDir::new(root.path()).expect("dir"), root)
        }

        /// Keeps the temporary folder alive as long as the store.
        #[derive(Debug)]
        struct Held(
            LocalDir,
            #[allow(dead_code)] std::sync::Arc<tempfile::TempDir>,
        );

        #[async_trait::async_trait]
        impl crate::StateStore for Held {
            fn kind(&self) -> &'static str {
                self.0.kind()
            }
            async fn write(
                &self,
                changes: &[crate::Change],
                info: &crate::WriteInfo,
            ) -> crate::Result<crate::WriteOutcome> {
                self.0.write(changes, info).await
            }
            async fn read(&self, key: &crate::Key) -> crate::Result<Option<bytes::Bytes>> {
                self.0.read(key).await
            }
            async fn list(&self, prefix: &crate::Key) -> crate::Result<Vec<crate::Key>> {
                self.0.list(prefix).await
            }
            async fn check_access(&self) -> crate::Result<()> {
                self.0.check_access().await
            }
        }

        crate::conformance_suite!(
            async {
                let (store, root) = fresh().await;
                Held(store, std::sync::Arc::new(root))
            },
            |held: &Held| {
                let second = Held(
                    LocalDir::new(held.0.root()).expect("second handle"),
                    held.1.clone(),
                );
                async move { second }
            }
        );
    }
}
