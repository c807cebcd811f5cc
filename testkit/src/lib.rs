//! The test kit of the workspace: real servers on loopback (git daemon, one that can go down and
//! come back, git http-backend with Basic auth, sshd, an S3 server — SeaweedFS, or Garage — a
//! server that never answers) and a hermetic git CLI to check what they hold, and a counter of
//! the requests an S3 client sends.
//!
//! Every git server binds `127.0.0.1` (`git daemon` also another address given, e.g. a test
//! node's bridge) on a port the OS picks, exposes URLs for bare repositories
//! it serves, and stops on `Drop`. A missing program makes the constructor fail with a message
//! that says what to install: a skipped test would look green.
//!
//! The kit depends on no crate of the workspace, so that every crate's tests can use it.

pub mod garage;
mod git_cli;
mod git_daemon;
mod git_http;
pub mod ports;
mod process;
mod restartable_daemon;
pub mod s3;
pub mod s3_requests;
pub mod seaweedfs;
mod silent_server;
mod sshd;
mod tls;
mod watchdog;

pub use git_cli::{
    files_at, git, git_failure, git_with_env, hermetic_env, hermetic_git_command, init_bare,
};
pub use git_daemon::GitDaemon;
pub use git_http::GitHttp;
pub use restartable_daemon::RestartableGitDaemon;
pub use silent_server::SilentServer;
pub use sshd::{SshKeyPair, Sshd};

use std::path::{Path, PathBuf};

/// A scratch folder under cargo's per-target temporary folder, removed on drop.
pub fn scratch_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let root = scratch_root();
    std::fs::create_dir_all(&root)?;
    tempfile::Builder::new().prefix(prefix).tempdir_in(root)
}

/// Cargo's per-target temporary folder (`target/tmp`, what `CARGO_TARGET_TMPDIR` names to
/// integration tests, which a library cannot read), found from the running test binary in
/// `target/<profile>/deps`; the system's temporary folder for a binary elsewhere.
fn scratch_root() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| target_tmpdir(&exe))
        .unwrap_or_else(std::env::temp_dir)
}

/// `<target>/tmp` for a test binary at `<target>/<profile>/deps/<name>`.
fn target_tmpdir(exe: &Path) -> Option<PathBuf> {
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    Some(deps.parent()?.parent()?.join("tmp"))
}

/// A loopback port nothing listens on (it was free a moment ago): connecting to it is refused.
pub fn closed_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    listener.local_addr().map(|addr| addr.port())
}

/// The absolute path of `program` on `PATH`, or an error that says how to install it.
pub fn require_program(program: &str) -> std::io::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| missing_program(program))
}

fn missing_program(program: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("`{program}` is needed by this test but was not found; install the test dependencies with scripts/test-deps.sh"),
    )
}

#[cfg(test)]
mod tests {
    use super::target_tmpdir;
    use std::path::{Path, PathBuf};

    #[test]
    fn scratch_folders_go_to_the_target_tmpdir_of_test_binaries() {
        let cases: [(&str, Option<&str>); 4] = [
            (
                "/w/target/debug/deps/git_servers-1a2b",
                Some("/w/target/tmp"),
            ),
            ("/w/t/release/deps/bucket-9f", Some("/w/t/tmp")),
            ("/usr/local/bin/tool", None),
            ("/deps", None),
        ];
        for (exe, expected) in cases {
            assert_eq!(
                target_tmpdir(Path::new(exe)),
                expected.map(PathBuf::from),
                "{exe}"
            );
        }
    }
}
