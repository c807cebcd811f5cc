//! A server process that cannot outlive the test binary, and that a test can stop and start
//! again: a tiny `sh` runs it in the background and reads commands from a pipe whose write end
//! this process keeps. `stop` stops the server (SIGTERM, then waits for it), `start` starts it
//! again with the same arguments; when the pipe closes, however the test binary ends (a `static`
//! is never dropped), the watchdog stops the server and removes its folder.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct Watchdog {
    shell: Mutex<Option<(Child, ChildStdin)>>,
    dir: PathBuf,
}

/// `$1` is the server's log, `$2` its folder, the rest its command line. The running server's
/// process id is kept in `$2/server.pid`.
const SCRIPT: &str = r#"
log=$1 dir=$2
shift 2
"$@" >>"$log" 2>&1 &
server=$!
echo "$server" >"$dir/server.pid"
while read -r command; do
  case "$command" in
    stop) [ -z "$server" ] || { kill -TERM "$server" 2>/dev/null; wait "$server"; server=; rm -f "$dir/server.pid"; } ;;
    start) [ -n "$server" ] || { "$@" >>"$log" 2>&1 & server=$!; echo "$server" >"$dir/server.pid"; } ;;
  esac
done
[ -z "$server" ] || { kill -TERM "$server" 2>/dev/null; wait "$server"; }
rm -rf "$dir"
"#;

impl Watchdog {
    /// Starts `program args` in `dir` (its working folder, removed at the end), its output
    /// appended to `log`, without the variables of `env_remove`.
    pub(crate) fn spawn(
        program: &Path,
        args: &[OsString],
        dir: &Path,
        log: &Path,
        env_remove: &[&str],
    ) -> std::io::Result<Self> {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(SCRIPT)
            .arg("watchdog")
            .arg(log)
            .arg(dir)
            .arg(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for var in env_remove {
            command.env_remove(var);
        }
        let mut child = command.spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the watchdog's stdin was not piped"))?;
        Ok(Self {
            shell: Mutex::new(Some((child, stdin))),
            dir: dir.to_path_buf(),
        })
    }

    /// Stops the server (its folder stays) and waits until `address` refuses connections.
    pub(crate) fn stop(&self, address: &str) {
        self.tell("stop");
        let deadline = Instant::now() + Duration::from_secs(90);
        while std::net::TcpStream::connect(address).is_ok() {
            assert!(
                Instant::now() < deadline,
                "the server on {address} did not stop"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the server again after [`Watchdog::stop`].
    pub(crate) fn start(&self) {
        self.tell("start");
    }

    fn tell(&self, command: &str) {
        let mut guard = self.shell.lock().expect("watchdog lock");
        let (_, stdin) = guard.as_mut().expect("the watchdog runs");
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .expect("the watchdog reads commands");
    }

    /// Whether the server started last has ended (or the watchdog with it): a server that
    /// dies at startup is reported at once instead of after a timeout.
    pub(crate) fn server_ended(&self) -> bool {
        let watchdog_ended = self
            .shell
            .lock()
            .ok()
            .and_then(|mut guard| guard.as_mut().map(|(child, _)| child.try_wait()))
            .is_none_or(|status| !matches!(status, Ok(None)));
        let Ok(pid) = std::fs::read_to_string(self.dir.join("server.pid")) else {
            return watchdog_ended; // stopped, and not started again yet
        };
        // A server that has exited but that the shell has not reaped yet is a zombie (`Z`).
        let state = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next())
            });
        watchdog_ended || matches!(state, None | Some('Z' | 'X'))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let Ok(mut guard) = self.shell.lock() else {
            return;
        };
        if let Some((mut child, stdin)) = guard.take() {
            drop(stdin); // EOF: the watchdog stops the server and removes its folder.
            let _ = child.wait();
        }
    }
}
