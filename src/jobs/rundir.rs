//! What the executor keeps in a run's folder: the Job it started, and the folders handed back.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::handback::{self, Part};
use super::Error;
use crate::pipeline::output;

/// Where the executor notes which Job a run started, so that leftovers can be found.
const JOB_FILE: &str = "job.json";

/// The Job a run started, noted in its work folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct JobRef {
    pub(super) namespace: String,
    pub(super) name: String,
}

/// Writes a handed-back folder into `dir`, refusing names that could leave it.
pub(super) fn unpack(bundle: &handback::Bundle, part: Part, dir: &Path) -> Result<(), Error> {
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let plain = |name: &str| -> Result<PathBuf, Error> {
        match output::relative_name(Path::new(name)) {
            Ok(n) if n == name => Ok(dir.join(name)),
            _ => Err(Error::BadName { name: name.into() }),
        }
    };
    for d in &bundle.dirs {
        let path = plain(d)?;
        std::fs::create_dir_all(&path).map_err(write_error(&path))?;
    }
    for (name, bytes) in bundle.files(part)? {
        let path = plain(&name)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error(parent))?;
        }
        std::fs::write(&path, bytes).map_err(write_error(&path))?;
    }
    Ok(())
}

pub(super) fn note_job(work_dir: &Path, namespace: &str, name: &str) -> Result<(), Error> {
    let path = work_dir.join(JOB_FILE);
    let text = serde_json::to_vec(&JobRef {
        namespace: namespace.into(),
        name: name.into(),
    })
    .map_err(|e| Error::Write {
        path: path.clone(),
        source: e.into(),
    })?;
    std::fs::create_dir_all(work_dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| Error::Write { path, source })
}

/// The Job noted in `work_dir`, if any.
pub(super) fn noted_job(work_dir: &Path) -> Option<JobRef> {
    let text = std::fs::read(work_dir.join(JOB_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpack_writes_plain_names_and_refuses_the_rest() {
        let cases = [
            ("nested file", "a/b.yaml", true),
            ("parent folder", "../escape", false),
            ("absolute", "/etc/passwd", false),
            ("dot segments", "a/./b", false),
            ("git folder", ".git/config", false),
        ];
        for (case, name, ok) in cases {
            let dir = tempfile::tempdir().expect("temp dir");
            let target = dir.path().join("output");
            let bundle = handback::Bundle::new(&[(name.to_string(), b"x".to_vec())], &[]);
            let got = unpack(&bundle, Part::Output, &target);
            assert_eq!(got.is_ok(), ok, "{case}: {got:?}");
            if ok {
                assert_eq!(std::fs::read(target.join(name)).expect("written"), b"x");
            } else {
                assert!(matches!(got, Err(Error::BadName { .. })), "{case}: {got:?}");
            }
        }
    }

    #[test]
    fn the_noted_job_is_read_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(noted_job(dir.path()), None);
        note_job(&dir.path().join("run"), "ns", "kratix-x-abcde").expect("noted");
        assert_eq!(
            noted_job(&dir.path().join("run")),
            Some(JobRef {
                namespace: "ns".into(),
                name: "kratix-x-abcde".into()
            })
        );
    }
}
