//! Checks what a pipeline left in its output folder before anything is scheduled: only regular
//! files and folders with printable UTF-8 names, nothing that points outside, and no more files
//! or bytes than the limits allow.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// Most files and folders one run may leave (all folders together).
pub(crate) const MAX_FILES_ENV: &str = "KRATIX_OUTPUT_MAX_FILES";
/// Most bytes one run's files may hold together.
pub(crate) const MAX_BYTES_ENV: &str = "KRATIX_OUTPUT_MAX_BYTES";
/// A GitOps repository is read by people and by Flux or Argo CD: ten thousand files from one
/// pipeline is already far more than any of them handles well.
pub(crate) const DEFAULT_MAX_FILES: u64 = 10_000;
/// The whole output is held in memory several times (the files, the Work's gzip+base64 copy,
/// the writer's blobs), so this keeps a run's peak memory in the hundreds of MiB. Kratix itself
/// stops far earlier: a Work must fit in one etcd object (about 1.5 MiB, compressed).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Longest path below the output folder. The store prefixes it with the Destination and the
/// request's folders, and Git, Flux and most file systems stop near 4096 bytes.
pub(crate) const MAX_PATH_BYTES: usize = 1024;
/// How much of an over-long path messages show.
const SHOWN_PATH_CHARS: usize = 64;

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
    /// A newline, escape or other control character in a name would garble every listing,
    /// log line and commit that shows it.
    #[error("output file {path:?} has a control character in its name")]
    ControlCharacter { path: String },
    /// Longer than [`MAX_PATH_BYTES`]; `path` is its beginning.
    #[error("output path {path}... is {len} bytes long, more than the {MAX_PATH_BYTES} allowed")]
    PathTooLong { path: String, len: usize },
    /// Git refuses to check out any path with a `.git` element (in any case), so one such file
    /// in a commit would break every clone of the state store.
    #[error("output path {path} has a .git element, which no Git repository can hold")]
    GitReserved { path: String },
    /// The output folder itself was replaced by a link or something else than a folder.
    #[error("the output folder is a {kind}, not a folder")]
    RootNotFolder { kind: &'static str },
    /// More files and folders than [`Limits::max_files`].
    #[error("output has more than {limit} files and folders ({MAX_FILES_ENV}={limit}); the limit was exceeded at {path}")]
    TooManyFiles { path: String, limit: u64 },
    /// More bytes than [`Limits::max_bytes`].
    #[error("output holds more than {limit} bytes ({MAX_BYTES_ENV}={limit}); the limit was exceeded at {path} ({size} bytes)")]
    TooManyBytes { path: String, size: u64, limit: u64 },
    /// A limit variable that is not a positive whole number.
    #[error("{var}={value:?} is not a positive whole number")]
    BadLimit { var: &'static str, value: String },
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

/// How much one run may leave in its output folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Files and folders together.
    pub max_files: u64,
    /// Bytes of all files together.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_files: DEFAULT_MAX_FILES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// From [`MAX_FILES_ENV`] and [`MAX_BYTES_ENV`]; unset or empty means the default.
    pub fn from_env() -> Result<Self, Error> {
        let var =
            |name: &str| std::env::var_os(name).map(|v| v.to_str().map(str::to_string).ok_or(v));
        let text = |name: &'static str| match var(name) {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(v)) => Err(Error::BadLimit {
                var: name,
                value: v.to_string_lossy().into_owned(),
            }),
        };
        Self::parse(
            text(MAX_FILES_ENV)?.as_deref(),
            text(MAX_BYTES_ENV)?.as_deref(),
        )
    }

    /// The limits from the variables' values.
    pub fn parse(max_files: Option<&str>, max_bytes: Option<&str>) -> Result<Self, Error> {
        let one = |var: &'static str, value: Option<&str>, default: u64| match value
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            None => Ok(default),
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| Error::BadLimit {
                    var,
                    value: v.to_string(),
                }),
        };
        Ok(Self {
            max_files: one(MAX_FILES_ENV, max_files, DEFAULT_MAX_FILES)?,
            max_bytes: one(MAX_BYTES_ENV, max_bytes, DEFAULT_MAX_BYTES)?,
        })
    }
}

/// What the walk has taken in so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub files: u64,
    pub bytes: u64,
}

/// Takes one more entry of `size` bytes (0 for a folder) into `tally`, or refuses it, naming
/// `name`, when it would pass a limit.
pub(crate) fn admit(tally: Tally, name: &str, size: u64, limits: Limits) -> Result<Tally, Error> {
    let files = tally.files.saturating_add(1);
    if files > limits.max_files {
        return Err(Error::TooManyFiles {
            path: name.to_string(),
            limit: limits.max_files,
        });
    }
    let bytes = tally.bytes.saturating_add(size);
    if bytes > limits.max_bytes {
        return Err(Error::TooManyBytes {
            path: name.to_string(),
            size,
            limit: limits.max_bytes,
        });
    }
    Ok(Tally { files, bytes })
}

/// What an entry of the output folder is, from its `lstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
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
    pub(crate) fn of(file_type: std::fs::FileType) -> Self {
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

    /// How messages call it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "regular file",
            EntryKind::Dir => "folder",
            EntryKind::Symlink => "symbolic link",
            EntryKind::Fifo => "fifo",
            EntryKind::Socket => "socket",
            EntryKind::BlockDevice => "block device",
            EntryKind::CharDevice => "character device",
            EntryKind::Unknown => "special file",
        }
    }
}

/// The `/`-separated name of `rel` (a path below the output folder), refusing anything that
/// could leave the folder or cannot be written down as printable UTF-8.
pub(crate) fn relative_name(rel: &Path) -> Result<String, Error> {
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
    let name = parts.join("/");
    if name.chars().any(char::is_control) {
        return Err(Error::ControlCharacter { path: name });
    }
    if name.len() > MAX_PATH_BYTES {
        return Err(Error::PathTooLong {
            path: name.chars().take(SHOWN_PATH_CHARS).collect(),
            len: name.len(),
        });
    }
    if parts.iter().any(|p| p.eq_ignore_ascii_case(".git")) {
        return Err(Error::GitReserved { path: name });
    }
    Ok(name)
}

/// Whether an entry may be in the output: folders are walked, regular files read, the rest refused.
pub(crate) fn check_entry(name: &str, kind: EntryKind) -> Result<(), Error> {
    match kind {
        EntryKind::File | EntryKind::Dir => Ok(()),
        EntryKind::Symlink => Err(Error::Symlink {
            path: name.to_string(),
        }),
        other => Err(Error::NotRegular {
            path: name.to_string(),
            kind: other.describe(),
        }),
    }
}

/// Walks `root` and reads every file, failing on the first entry [`check_entry`] refuses or
/// [`admit`] does not take in: the walk stops there, so a huge output is never listed or read
/// whole.
pub(crate) fn read_output(root: &Path, limits: Limits) -> Result<Output, Error> {
    let root_kind = std::fs::symlink_metadata(root)
        .map(|m| EntryKind::of(m.file_type()))
        .map_err(|source| Error::Read {
            path: ".".into(),
            source,
        })?;
    if root_kind != EntryKind::Dir {
        return Err(Error::RootNotFolder {
            kind: root_kind.describe(),
        });
    }
    let mut output = Output::default();
    let mut tally = Tally::default();
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
                tally = admit(tally, &name, 0, limits)?;
                output.dirs.push(name);
                pending.push(rel);
            } else {
                let (bytes, after) = read_regular_file(&root.join(&rel), &name, tally, limits)?;
                tally = after;
                output.files.push((name, bytes));
            }
        }
    }
    output.files.sort_by(|a, b| a.0.cmp(&b.0));
    output.dirs.sort();
    Ok(output)
}

/// Opens without following links and without blocking, then checks again that it is a regular
/// file (a left-over process could have swapped the entry since it was listed), that its size
/// fits the limits before reading it, and reads no more than the limit allows in case it grows.
fn read_regular_file(
    path: &Path,
    name: &str,
    tally: Tally,
    limits: Limits,
) -> Result<(Vec<u8>, Tally), Error> {
    let read_error = |source| Error::Read {
        path: name.to_string(),
        source,
    };
    let mut file = open_regular(path, name)?;
    let size = file.metadata().map_err(read_error)?.len();
    let after = admit(tally, name, size, limits)?;
    let allowed = limits.max_bytes.saturating_sub(tally.bytes);
    let mut bytes = Vec::new();
    (&mut file)
        .take(allowed.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > allowed {
        return Err(Error::TooManyBytes {
            path: name.to_string(),
            size: read,
            limit: limits.max_bytes,
        });
    }
    Ok((
        bytes,
        Tally {
            bytes: tally.bytes.saturating_add(read),
            ..after
        },
    ))
}

/// Opens `path` for reading if it is a regular file: not through a link, never blocking on a
/// fifo or device.
pub(crate) fn open_regular(path: &Path, name: &str) -> Result<std::fs::File, Error> {
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::ELOOP) {
                Error::Symlink {
                    path: name.to_string(),
                }
            } else {
                Error::Read {
                    path: name.to_string(),
                    source: e,
                }
            }
        })?;
    let kind = file
        .metadata()
        .map_err(|source| Error::Read {
            path: name.to_string(),
            source,
        })?
        .file_type();
    check_entry(name, EntryKind::of(kind))?;
    if !kind.is_file() {
        return Err(Error::NotRegular {
            path: name.to_string(),
            kind: EntryKind::Dir.describe(),
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests;
