//! How containers are isolated: a bubblewrap sandbox, or plain processes where bubblewrap cannot
//! run. The bubblewrap command line is built by a pure function.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Environment variable choosing the isolation: `sandbox`, `process` or `auto`.
pub(crate) const ISOLATION_ENV: &str = "KRATIX_ISOLATION";

/// The bubblewrap program.
pub(crate) const BWRAP: &str = "bwrap";

/// Where containers see their folders inside the sandbox.
pub(crate) const SANDBOX_INPUT: &str = "/kratix/input";
pub(crate) const SANDBOX_OUTPUT: &str = "/kratix/output";
pub(crate) const SANDBOX_METADATA: &str = "/kratix/metadata";
/// The run's platform API credentials (its kubeconfig), when it has them.
pub(crate) const SANDBOX_API: &str = "/kratix/api";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `KRATIX_ISOLATION` holds something else than sandbox, process or auto.
    #[error("{ISOLATION_ENV}={value:?} is not one of sandbox, process, auto")]
    Unknown { value: String },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// bubblewrap, or fail.
    Sandbox,
    /// Plain processes: no isolation beyond separate folders.
    Process,
    /// bubblewrap where it works, else plain processes (with one warning).
    #[default]
    Auto,
}

impl FromStr for Isolation {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sandbox" | "bwrap" | "bubblewrap" => Ok(Isolation::Sandbox),
            "process" => Ok(Isolation::Process),
            "auto" | "" => Ok(Isolation::Auto),
            _ => Err(Error::Unknown {
                value: s.to_string(),
            }),
        }
    }
}

impl Isolation {
    /// Reads `KRATIX_ISOLATION`; unset means [`Isolation::Auto`].
    pub fn from_env() -> Result<Self, Error> {
        match std::env::var(ISOLATION_ENV) {
            Ok(value) => value.parse(),
            Err(std::env::VarError::NotPresent) => Ok(Isolation::Auto),
            Err(std::env::VarError::NotUnicode(value)) => Err(Error::Unknown {
                value: value.to_string_lossy().into_owned(),
            }),
        }
    }
}

/// An entry of the host's `/`, as the sandbox re-creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RootEntry {
    pub name: OsString,
    /// Where it points, for symbolic links such as `/bin -> usr/bin`.
    pub symlink_target: Option<OsString>,
}

/// Lists the host's `/` (skipping what cannot be read: it just won't be in the sandbox).
pub(crate) fn host_root_entries() -> std::io::Result<Vec<RootEntry>> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir("/")? {
        let Ok(entry) = entry else { continue };
        let symlink_target = std::fs::read_link(entry.path())
            .ok()
            .map(PathBuf::into_os_string);
        entries.push(RootEntry {
            name: entry.file_name(),
            symlink_target,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// Host folders a sandboxed container gets, and host folders it must not see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxMounts<'a> {
    pub input: &'a Path,
    pub output: &'a Path,
    pub metadata: &'a Path,
    /// Absolute host folders replaced by an empty tmpfs: the platform's home, whose database
    /// holds the state stores' Secrets. (`/` itself is never hidden.)
    pub hidden: &'a [PathBuf],
    /// The run's folder of platform API credentials, bound read-only at `/kratix/api`.
    pub api: Option<&'a Path>,
}

/// The bubblewrap arguments that run `command` with the host read-only and only the output and
/// metadata folders writable. Environment is not passed here: the caller clears bwrap's own
/// environment and sets the container's, which bwrap hands on (values stay off the command line).
///
/// NB: `--ro-bind / /` would be simpler, but then bwrap must create `/kratix` on the read-only
/// host root and fails. Instead the root is bwrap's own tmpfs, each host entry is bound into it
/// read-only, and the root itself is remounted read-only once `/kratix/*` exist.
pub(crate) fn sandbox_args(
    root: &[RootEntry],
    mounts: &SandboxMounts<'_>,
    command: &[String],
) -> Vec<OsString> {
    const OWN_MOUNTS: [&str; 4] = ["proc", "dev", "tmp", "kratix"];
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |parts: &[&OsStr]| args.extend(parts.iter().map(|p| p.to_os_string()));
    for entry in root {
        if OWN_MOUNTS.iter().any(|own| entry.name == *own) {
            continue;
        }
        let mut at = OsString::from("/");
        at.push(&entry.name);
        match &entry.symlink_target {
            Some(target) => push(&["--symlink".as_ref(), target, &at]),
            None => push(&["--ro-bind-try".as_ref(), &at, &at]),
        }
    }
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    push(&["--tmpfs".as_ref(), "/tmp".as_ref()]);
    // NB: bwrap reads bind sources from the host's root, so the run's own folders, which live
    // inside the hidden home, are still bound below.
    for hidden in mounts.hidden {
        if hidden.is_absolute() && hidden.parent().is_some() {
            push(&["--tmpfs".as_ref(), hidden.as_os_str()]);
        }
    }
    push(&[
        "--ro-bind".as_ref(),
        mounts.input.as_os_str(),
        SANDBOX_INPUT.as_ref(),
    ]);
    push(&[
        "--bind".as_ref(),
        mounts.output.as_os_str(),
        SANDBOX_OUTPUT.as_ref(),
    ]);
    push(&[
        "--bind".as_ref(),
        mounts.metadata.as_os_str(),
        SANDBOX_METADATA.as_ref(),
    ]);
    if let Some(api) = mounts.api {
        push(&["--ro-bind".as_ref(), api.as_os_str(), SANDBOX_API.as_ref()]);
    }
    push(&["--remount-ro".as_ref(), "/".as_ref()]);
    push(&["--chdir".as_ref(), "/tmp".as_ref()]);
    // When the executor runs as root, bwrap keeps capabilities unless told otherwise, and a
    // container with CAP_SYS_ADMIN could remount the host read-write.
    push(&["--cap-drop".as_ref(), "ALL".as_ref()]);
    push(&[
        "--unshare-pid".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--".as_ref(),
    ]);
    args.extend(command.iter().map(OsString::from));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_isolation_names() {
        let cases = [
            ("sandbox", Some(Isolation::Sandbox)),
            ("Bubblewrap", Some(Isolation::Sandbox)),
            ("process", Some(Isolation::Process)),
            (" auto ", Some(Isolation::Auto)),
            ("", Some(Isolation::Auto)),
            ("docker", None),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<Isolation>().ok(), want, "{text:?}");
        }
        let err = "docker".parse::<Isolation>().expect_err("unknown");
        assert!(
            err.to_string().contains("KRATIX_ISOLATION=\"docker\""),
            "{err}"
        );
    }

    #[test]
    fn sandbox_args_bind_host_read_only_and_kratix_folders() {
        let root = vec![
            RootEntry {
                name: "bin".into(),
                symlink_target: Some("usr/bin".into()),
            },
            RootEntry {
                name: "dev".into(),
                symlink_target: None,
            },
            RootEntry {
                name: "etc".into(),
                symlink_target: None,
            },
            RootEntry {
                name: "kratix".into(),
                symlink_target: None,
            },
            RootEntry {
                name: "tmp".into(),
                symlink_target: None,
            },
        ];
        let hidden = [
            PathBuf::from("/w"),
            PathBuf::from("/"),
            PathBuf::from("relative"),
        ];
        let mounts = SandboxMounts {
            input: Path::new("/w/input"),
            output: Path::new("/w/output"),
            metadata: Path::new("/w/metadata"),
            hidden: &hidden,
            api: None,
        };
        let args = sandbox_args(&root, &mounts, &["sh".into(), "-c".into(), "echo".into()]);
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap_or("?")).collect();
        assert_eq!(
            args.join(" "),
            "--symlink usr/bin /bin --ro-bind-try /etc /etc \
             --dev /dev --proc /proc --tmpfs /tmp --tmpfs /w \
             --ro-bind /w/input /kratix/input --bind /w/output /kratix/output \
             --bind /w/metadata /kratix/metadata --remount-ro / --chdir /tmp --cap-drop ALL \
             --unshare-pid --die-with-parent --new-session -- sh -c echo"
        );
    }
}
