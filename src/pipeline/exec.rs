//! Runs one process to completion or deadline, capturing stdout and stderr interleaved as the
//! process wrote them, and leaving nothing of it running afterwards.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::program_path;
use tokio::time::Instant;

/// Most of a container's output kept in the logs; the rest is read and dropped so that a chatty
/// container cannot exhaust memory.
const LOG_LIMIT: usize = 4 * 1024 * 1024;

/// How long output is still collected after the process exits, for a straggler that left the
/// process group but still holds the pipe.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pipe for the process's output could not be set up.
    #[error("cannot create the output pipe")]
    Pipe(#[source] std::io::Error),
    /// Waiting for the process failed.
    #[error("cannot wait for the process")]
    Wait(#[source] std::io::Error),
    /// The process group could not be recorded, so a crash could leave it running unseen: the
    /// process is killed instead.
    #[error("cannot record the process group")]
    Record(#[source] super::groups::Error),
}

/// One process to run.
#[derive(Debug, Clone)]
pub(super) struct Invocation {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// The whole environment: nothing is inherited.
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
}

#[derive(Debug)]
pub(super) enum Exit {
    Code(i32),
    Signal(i32),
    /// The program could not be started (not found, not executable).
    NotStarted(std::io::Error),
    TimedOut,
}

/// Runs `invocation` in its own process group, appending its output to `log`. On exit or at the
/// deadline the whole group is killed, so background children die with it. `started` hears of
/// the group as soon as it exists, before the process can do anything that outlives us.
pub(super) async fn run(
    invocation: Invocation,
    deadline: Instant,
    log: &mut Vec<u8>,
    started: impl FnOnce(i32) -> Result<(), super::groups::Error>,
) -> Result<Exit, Error> {
    // NB: close-on-exec, so that containers started concurrently by other runs do not inherit
    // our write end and hold the pipe open (std::io::pipe would do this but needs Rust 1.87).
    let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|errno| Error::Pipe(errno.into()))?;
    let writer_for_stderr = writer.try_clone().map_err(Error::Pipe)?;
    let resolved = program_path::resolve(
        &invocation.program,
        program_path::path_of(&invocation.env),
        program_path::executable_file,
    );
    let mut command = match resolved {
        // Started as named: the program sees the name it was given, not the path found.
        Some(path) => {
            let mut command = tokio::process::Command::new(path);
            command.arg0(&invocation.program);
            command
        }
        None => tokio::process::Command::new(&invocation.program),
    };
    command
        .args(&invocation.args)
        .env_clear()
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&invocation.cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_for_stderr)
        .process_group(0)
        .kill_on_drop(true);
    let spawned = command.spawn();
    // NB: the Command keeps its copies of the pipe's write end until dropped; without this the
    // reader would never see end-of-file.
    drop(command);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return Ok(Exit::NotStarted(e)),
    };
    let mut group = GroupKiller(child.id().and_then(|id| i32::try_from(id).ok()));
    if let Some(id) = group.0 {
        // On failure `group` is dropped, which kills the process.
        started(id).map_err(Error::Record)?;
    }

    let captured = Arc::new(Mutex::new(Vec::new()));
    let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(reader).map_err(Error::Pipe)?;
    let mut collector = tokio::spawn(collect(receiver, Arc::clone(&captured)));

    let waited = tokio::time::timeout_at(deadline, child.wait()).await;
    group.kill();
    let exit = match waited {
        Ok(Ok(status)) => match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            (None, None) => Exit::Code(-1),
        },
        Ok(Err(e)) => return Err(Error::Wait(e)),
        Err(_elapsed) => {
            // The group kill has already hit the child; reap it so it leaves no zombie.
            let _ = child.start_kill();
            let _ = child.wait().await;
            Exit::TimedOut
        }
    };
    if tokio::time::timeout(DRAIN_GRACE, &mut collector)
        .await
        .is_err()
    {
        collector.abort();
    }
    let captured = std::mem::take(
        &mut *captured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    log.extend_from_slice(&captured);
    Ok(exit)
}

async fn collect(mut receiver: tokio::net::unix::pipe::Receiver, into: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = vec![0u8; 16 * 1024];
    let mut truncated = false;
    loop {
        match receiver.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut buf = into
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let room = LOG_LIMIT.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
                if n > room && !truncated {
                    truncated = true;
                    buf.extend_from_slice(b"\n[output truncated]\n");
                }
            }
        }
    }
}

/// Kills a process group once: when asked, or when the run is dropped half-way (a cancelled
/// reconcile must not leave a container running).
struct GroupKiller(Option<i32>);

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(group) = self.0.take() {
            // ESRCH (nothing left in the group) is the normal case after a clean exit.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(group),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}
