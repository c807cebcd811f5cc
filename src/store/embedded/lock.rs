//! The home lock: which process runs the controllers of a home. Others only store and watch.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use crate::store::{Error, Result};

const LOCK_FILE: &str = "controller.lock";

/// An exclusive advisory lock on `<home>/controller.lock`, held until dropped (or the process
/// ends, when the operating system releases it).
#[derive(Debug)]
pub struct HomeLock {
    file: File,
    path: PathBuf,
}

impl HomeLock {
    /// Takes the lock, or returns `None` when another holder (any process, or another
    /// `HomeLock` of this one) has it. Creates the home folder if needed.
    pub fn try_acquire(home: &Path) -> Result<Option<HomeLock>> {
        fs::create_dir_all(home)
            .map_err(io_error(format!("create home folder {}", home.display())))?;
        let path = home.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_error(format!("open lock file {}", path.display())))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(HomeLock { file, path })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(err)) => Err(io_error(format!("lock {}", path.display()))(err)),
        }
    }

    /// Whether some holder has the lock right now. Only a hint: it may change at once after.
    pub fn is_held(home: &Path) -> bool {
        let Ok(file) = File::open(home.join(LOCK_FILE)) else {
            return false;
        };
        match file.try_lock_shared() {
            Ok(()) => {
                // Released explicitly so a caller that tries to acquire next never races our
                // own shared lock; closing the file would release it as well.
                let _ = file.unlock();
                false
            }
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Error(_)) => false,
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for HomeLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes the release immediate
        // even if a duplicate of the descriptor lives on in a child process.
        let _ = self.file.unlock();
    }
}

fn io_error(context: String) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Backend {
        context,
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time() {
        let home = tempfile::tempdir().expect("tempdir");
        let home = home.path().join("home");
        assert!(!HomeLock::is_held(&home), "nothing holds a new home");

        let first = HomeLock::try_acquire(&home).expect("lock").expect("free");
        assert!(HomeLock::is_held(&home));
        assert!(
            HomeLock::try_acquire(&home).expect("lock").is_none(),
            "second holder refused"
        );
        assert_eq!(first.path(), home.join(LOCK_FILE));

        drop(first);
        assert!(!HomeLock::is_held(&home));
        let again = HomeLock::try_acquire(&home).expect("lock");
        assert!(again.is_some(), "free again once dropped");
    }
}
