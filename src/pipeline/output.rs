//! Checks what a pipeline left in its output folder before anything is scheduled: only regular
//! files and folders with UTF-8 names, nothing that points outside.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A symbolic link, which could point anywhere on the host.
    #[error("output file {path} is a symbolic link")]
    Symlink { path: String },
    /// A fifo, socket or device.
    #[error("output file {path} is a {kind}, not a regular file")]
    NotRegular { path: String, kind: &'static str },
    /// A path that is absolute or climbs out of the output folder.
    #[error("output path {path} leaves the output folder")]
    Escapes { path: String },
    /// A name that is not UTF-8 cannot be a Work's file path.
    #[error("output file {path} has a name that is not UTF-8")]
    NonUtf8Name { path: String },
    /// Listing a folder or reading a file failed.
    #[error("cannot read output file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The validated output of a pipeline run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Every regular file: path relative to the output folder (`/`-separated), and its bytes.
    /// Sorted by path.
    pub files: Vec<(String, Vec<u8>)>,
    /// Every folder below the output folder, relative and sorted, so that an empty folder a
    /// destination selector names still exists.
    pub dirs: Vec<String>,
}

impl Output {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// What an entry of the output folder is, from its `lstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    BlockDevice,
    CharDevice,
    Unknown,
}

impl EntryKind {
    fn of(file_type: std::fs::FileType) -> Self {
        if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_file() {
            EntryKind::File
        } else if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_fifo() {
            EntryKind::Fifo
        } else if file_type.is_socket() {
            EntryKind::Socket
        } else if file_type.is_block_device() {
            EntryKind::BlockDevice
        } else if file_type.is_char_device() {
            EntryKind::CharDevice
        } else {
            EntryKind::Unknown
        }
    }
}

/// The `/`-separated name of `rel` (a path below the output folder), refusing anything that
/// could leave the folder or cannot be written down as UTF-8.
pub fn relative_name(rel: &Path) -> Result<String, Error> {
    let lossy = || rel.to_string_lossy().into_owned();
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(part) => match part.to_str() {
                Some(s) => parts.push(s),
                None => return Err(Error::NonUtf8Name { path: lossy() }),
            },
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Error::Escapes { path: lossy() })
            }
        }
    }
    if parts.is_empty() {
        return Err(Error::Escapes { path: lossy() });
    }
    Ok(parts.join("/"))
}

/// Whether an entry may be in the output: folders are walked, regular files read, the rest refused.
pub fn check_entry(name: &str, kind: EntryKind) -> Result<(), Error> {
    let refuse = |kind: &'static str| {
        Err(Error::NotRegular {
            path: name.to_string(),
            kind,
        })
    };
    match kind {
        EntryKind::File | EntryKind::Dir => Ok(()),
        EntryKind::Symlink => Err(Error::Symlink {
            path: name.to_string(),
        }),
        EntryKind::Fifo => refuse("fifo"),
        EntryKind::Socket => refuse("socket"),
        EntryKind::BlockDevice => refuse("block device"),
        EntryKind::CharDevice => refuse("character device"),
        EntryKind::Unknown => refuse("special file"),
    }
}

/// Walks `root` and reads every file, failing on the first entry [`check_entry`] refuses.
pub fn read_output(root: &Path) -> Result<Output, Error> {
    let mut output = Output::default();
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(rel_dir) = pending.pop() {
        let dir_name = || rel_dir.to_string_lossy().into_owned();
        let entries = std::fs::read_dir(root.join(&rel_dir)).map_err(|source| Error::Read {
            path: dir_name(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Read {
                path: dir_name(),
                source,
            })?;
            let rel = rel_dir.join(entry.file_name());
            let name = relative_name(&rel)?;
            // NB: DirEntry::file_type does not follow symlinks, which is what lets us see them.
            let kind = entry
                .file_type()
                .map(EntryKind::of)
                .map_err(|source| Error::Read {
                    path: name.clone(),
                    source,
                })?;
            check_entry(&name, kind)?;
            if kind == EntryKind::Dir {
                output.dirs.push(name);
                pending.push(rel);
            } else {
                let bytes = read_regular_file(&root.join(&rel), &name)?;
                output.files.push((name, bytes));
            }
        }
    }
    output.files.sort_by(|a, b| a.0.cmp(&b.0));
    output.dirs.sort();
    Ok(output)
}

/// Opens without following links and without blocking, then checks again that it is a regular
/// file: a left-over process could have swapped the entry since it was listed.
fn read_regular_file(path: &Path, name: &str) -> Result<Vec<u8>, Error> {
    let read_error = |source| Error::Read {
        path: name.to_string(),
        source,
    };
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::ELOOP) {
                Error::Symlink {
                    path: name.to_string(),
                }
            } else {
                read_error(e)
            }
        })?;
    let kind = file.metadata().map_err(read_error)?.file_type();
    check_entry(name, EntryKind::of(kind))?;
    if !kind.is_file() {
        return Err(Error::NotRegular {
            path: name.to_string(),
            kind: "folder",
        });
    }
    read_all(&mut file).map_err(read_error)
}

fn read_all(file: &mut File) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn relative_names() {
        let bad_utf8 = Path::new(OsStr::from_bytes(b"dir/caf\xe9.yaml"));
        let cases: Vec<(&Path, Result<&str, &str>)> = vec![
            (Path::new("a.yaml"), Ok("a.yaml")),
            (Path::new("dir/sub/a.yaml"), Ok("dir/sub/a.yaml")),
            (Path::new("./dir/.hidden"), Ok("dir/.hidden")),
            (Path::new("../etc/passwd"), Err("leaves the output folder")),
            (Path::new("dir/../../x"), Err("leaves the output folder")),
            (Path::new("/etc/passwd"), Err("leaves the output folder")),
            (Path::new("."), Err("leaves the output folder")),
            (
                bad_utf8,
                Err("dir/caf\u{fffd}.yaml has a name that is not UTF-8"),
            ),
        ];
        for (path, want) in cases {
            match (relative_name(path), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{path:?}"),
                (Err(got), Err(want)) => {
                    assert!(got.to_string().contains(want), "{path:?}: {got}")
                }
                (got, want) => panic!("{path:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn entry_kinds() {
        let cases = [
            (EntryKind::File, None),
            (EntryKind::Dir, None),
            (EntryKind::Symlink, Some("x/f is a symbolic link")),
            (EntryKind::Fifo, Some("x/f is a fifo, not a regular file")),
            (EntryKind::Socket, Some("x/f is a socket")),
            (EntryKind::BlockDevice, Some("x/f is a block device")),
            (EntryKind::CharDevice, Some("x/f is a character device")),
            (EntryKind::Unknown, Some("x/f is a special file")),
        ];
        for (kind, want) in cases {
            let got = check_entry("x/f", kind).err().map(|e| e.to_string());
            match want {
                None => assert_eq!(got, None, "{kind:?}"),
                Some(want) => {
                    let got = got.unwrap_or_default();
                    assert!(got.contains(want), "{kind:?}: {got}")
                }
            }
        }
    }

    #[test]
    fn reads_files_and_folders_sorted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/deep")).expect("mkdir");
        std::fs::create_dir_all(root.join("empty")).expect("mkdir");
        std::fs::write(root.join("z.yaml"), "z").expect("write");
        std::fs::write(root.join("b/deep/x.yaml"), "x").expect("write");
        std::fs::write(root.join(".hidden"), "h").expect("write");
        let out = read_output(root).expect("valid output");
        let files: Vec<(&str, &[u8])> = out
            .files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect();
        assert_eq!(
            files,
            vec![
                (".hidden", &b"h"[..]),
                ("b/deep/x.yaml", &b"x"[..]),
                ("z.yaml", &b"z"[..])
            ]
        );
        assert_eq!(out.dirs, vec!["b", "b/deep", "empty"]);
    }

    #[test]
    fn refuses_links_fifos_and_bad_names() {
        type Setup = fn(&Path);
        let cases: [(&str, Setup, &str); 4] = [
            (
                "symlink to a host file",
                |root| {
                    std::os::unix::fs::symlink("/etc/passwd", root.join("d/passwd"))
                        .expect("symlink")
                },
                "output file d/passwd is a symbolic link",
            ),
            (
                "symlinked folder",
                |root| std::os::unix::fs::symlink("/etc", root.join("d/etc")).expect("symlink"),
                "output file d/etc is a symbolic link",
            ),
            (
                "fifo",
                |root| {
                    nix::unistd::mkfifo(&root.join("d/pipe"), nix::sys::stat::Mode::S_IRWXU)
                        .expect("mkfifo")
                },
                "output file d/pipe is a fifo",
            ),
            (
                "non-UTF-8 name",
                |root| {
                    std::fs::write(root.join(OsStr::from_bytes(b"d/caf\xe9")), "x").expect("write")
                },
                "output file d/caf\u{fffd} has a name that is not UTF-8",
            ),
        ];
        for (case, setup, want) in cases {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir(dir.path().join("d")).expect("mkdir");
            std::fs::write(dir.path().join("d/ok.yaml"), "ok").expect("write");
            setup(dir.path());
            let err = read_output(dir.path()).expect_err(case);
            assert!(err.to_string().contains(want), "{case}: {err}");
        }
    }
}
