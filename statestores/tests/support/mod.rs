//! Real git servers on loopback for integration tests, and a hermetic git CLI to check what
//! they hold.
//!
//! Every server binds `127.0.0.1` on a port the OS picks, exposes URLs for bare repositories it
//! serves, and stops on `Drop`. A missing program makes the constructor fail with a message that
//! says what to install: a skipped test would look green.

// Each test binary includes this module and uses a different subset of it.
#![allow(dead_code, unused_imports)]

mod git_cli;
mod git_daemon;
mod git_http;
mod process;
mod sshd;

pub use git_cli::{
    files_at, git, git_failure, git_with_env, hermetic_env, hermetic_git_command, init_bare,
};
pub use git_daemon::GitDaemon;
pub use git_http::GitHttp;
pub use sshd::{SshKeyPair, Sshd};

use std::path::PathBuf;

/// A scratch folder under cargo's per-target temporary folder, removed on drop.
pub fn scratch_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
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
