//! Finds a program named without a slash on the `PATH` the process is given, as `execvp` in the
//! child would. Spawning the absolute path lets the standard library start the process with
//! `posix_spawn` (a vfork) instead of forking the controllers' whole address space first, a
//! cost that grows with the memory the controllers hold; it falls back to forking whenever a
//! program must be looked up on a `PATH` other than its own.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The absolute path `execvp` would run for `program` with `path` as `PATH`, or `None` to leave
/// the look-up to the child: the program names a path already, or an entry that comes first is
/// relative (it would be looked up from the child's own working folder), or nothing matches.
pub(super) fn resolve(
    program: &OsStr,
    path: Option<&OsStr>,
    is_executable: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if program.is_empty() || program.as_bytes().contains(&b'/') {
        return None;
    }
    for dir in std::env::split_paths(path?) {
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(program);
        if is_executable(&candidate) {
            return Some(candidate);
        }
    }
    None
}

/// A regular file someone may execute.
pub(super) fn executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The value of `PATH` among `env`.
pub(super) fn path_of(env: &[(OsString, OsString)]) -> Option<&OsStr> {
    env.iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_as_execvp_would_or_leaves_it_to_the_child() {
        let present = ["/usr/bin/sh", "/bin/sh", "/opt/tools/only-here"];
        let exists = |p: &Path| present.iter().any(|q| Path::new(q) == p);
        let cases: [(&str, Option<&str>, Option<&str>); 9] = [
            ("sh", Some("/usr/bin:/bin"), Some("/usr/bin/sh")),
            ("sh", Some("/bin:/usr/bin"), Some("/bin/sh")),
            (
                "only-here",
                Some("/usr/bin:/opt/tools"),
                Some("/opt/tools/only-here"),
            ),
            ("missing", Some("/usr/bin:/bin"), None),
            ("/bin/sh", Some("/usr/bin"), None),
            ("./tool", Some("/usr/bin"), None),
            ("sh", Some("relative:/usr/bin"), None),
            ("sh", None, None),
            ("", Some("/usr/bin"), None),
        ];
        for (program, path, want) in cases {
            let got = resolve(OsStr::new(program), path.map(OsStr::new), exists);
            assert_eq!(got.as_deref(), want.map(Path::new), "{program} on {path:?}");
        }
    }

    #[test]
    fn the_last_path_given_counts() {
        let env = [
            (OsString::from("PATH"), OsString::from("/a")),
            (OsString::from("HOME"), OsString::from("/h")),
            (OsString::from("PATH"), OsString::from("/b")),
        ];
        assert_eq!(path_of(&env), Some(OsStr::new("/b")));
        assert_eq!(path_of(&env[1..2]), None);
    }
}
