//! A real Garage S3 server on loopback for the bucket tests.
//!
//! One server per test binary ([`Garage::shared`]), one bucket per test ([`Garage::new_bucket`]).
//! The server runs under a tiny `sh` watchdog that holds the read end of a pipe whose write end
//! this process keeps: when the test binary exits, however it exits, the pipe closes and the
//! watchdog stops Garage and removes its folder. Through the same pipe a test can stop the
//! server and start it again ([`Garage::stop_server`], [`Garage::start_server`]). (A `static` is never dropped, so `Drop` alone
//! would leave the server running.)
//!
//! The binary is `$GARAGE_BIN`, else `garage` on the PATH, else `~/.cargo/bin/garage`; when there
//! is none the harness panics saying how to install it (`scripts/garage.sh`): a skipped test
//! would look green.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The region Garage is configured with; requests must be signed for it.
pub const REGION: &str = "garage";

/// How long the server may take to answer its first `status`.
const STARTUP: Duration = Duration::from_secs(60);

/// A Garage key pair.
#[derive(Clone)]
pub struct AccessKey {
    pub id: String,
    pub secret: String,
}

impl std::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A running single-node Garage with one access key. Stops the server on drop.
pub struct Garage {
    binary: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    /// `127.0.0.1:<port>` of the S3 API, without scheme, as Kratix configures endpoints.
    pub s3_endpoint: String,
    /// The key every bucket of [`Garage::new_bucket`] grants read, write and owner to.
    pub key: AccessKey,
    watchdog: Mutex<Option<(Child, ChildStdin)>>,
    buckets: AtomicUsize,
}

impl Garage {
    /// The server of this test binary, started on first use.
    pub fn shared() -> &'static Garage {
        static SHARED: OnceLock<Garage> = OnceLock::new();
        SHARED.get_or_init(Garage::start)
    }

    /// Starts a fresh server: config in a temporary folder, single-node layout, one key.
    pub fn start() -> Garage {
        let binary = find_garage();
        let dir = crate::scratch_dir("garage-")
            .expect("create a folder for garage")
            .keep(); // NB: removed by the watchdog once Garage has stopped (see module docs).
        let [rpc_port, s3_port, admin_port] = free_ports();
        let config = dir.join("garage.toml");
        std::fs::write(
            &config,
            garage_toml(
                &dir,
                rpc_port,
                s3_port,
                admin_port,
                &random_hex(32),
                &random_hex(32),
            ),
        )
        .expect("write garage.toml");

        let (child, stdin) = spawn_watchdog(&binary, &config, &dir);
        let mut garage = Garage {
            binary,
            dir,
            config,
            s3_endpoint: format!("127.0.0.1:{s3_port}"),
            key: AccessKey {
                id: String::new(),
                secret: String::new(),
            },
            watchdog: Mutex::new(Some((child, stdin))),
            buckets: AtomicUsize::new(0),
        };
        garage.wait_until_ready();
        garage.assign_layout();
        garage.key = garage.create_key("statestores-tests");
        garage
    }

    /// Creates an empty bucket that [`Garage::key`] may read, write and administer; returns its
    /// name.
    pub fn new_bucket(&self) -> String {
        let n = self.buckets.fetch_add(1, Ordering::Relaxed);
        let name = format!("test-{}-{n}", std::process::id());
        self.cli(&["bucket", "create", &name]);
        self.cli(&[
            "bucket",
            "allow",
            "--read",
            "--write",
            "--owner",
            &name,
            "--key",
            &self.key.id,
        ]);
        name
    }

    /// Creates another key (not allowed on any bucket).
    pub fn create_key(&self, name: &str) -> AccessKey {
        let out = self.cli(&["key", "create", name]);
        parse_key(&out).unwrap_or_else(|| {
            panic!("could not find `Key ID:` and `Secret key:` in `garage key create` output")
        })
    }

    /// How many multipart uploads of `bucket` are unfinished, from `garage bucket info`.
    pub fn unfinished_uploads(&self, bucket: &str) -> usize {
        let out = self.cli(&["bucket", "info", bucket]);
        parse_unfinished_uploads(&out)
    }

    /// Runs `garage -c <config> <args>`, panicking with its stderr when it fails.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.try_cli(args);
        if !out.status.success() {
            panic!(
                "garage {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn try_cli(&self, args: &[&str]) -> Output {
        garage_command(&self.binary, &self.config)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", self.binary.display()))
    }

    fn wait_until_ready(&self) {
        let deadline = Instant::now() + STARTUP;
        loop {
            let out = self.try_cli(&["status"]);
            if out.status.success() {
                return;
            }
            if let Some(exited) = self.server_exit() {
                panic!(
                    "garage server exited ({exited}) during startup; its log:\n{}",
                    self.log()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "garage did not answer `status` within {STARTUP:?}: {}\nlog:\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A one-node layout: zone dc1, 1 GB.
    fn assign_layout(&self) {
        let id_line = self.cli(&["node", "id", "-q"]);
        let node_id = id_line
            .trim()
            .split('@')
            .next()
            .filter(|id| id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .unwrap_or_else(|| panic!("unexpected `garage node id` output: {id_line:?}"))
            .to_string();
        self.cli(&["layout", "assign", "-z", "dc1", "-c", "1G", &node_id]);
        self.cli(&["layout", "apply", "--version", "1"]);
    }

    /// Stops the server (its data stays) and waits until its S3 port refuses connections.
    pub fn stop_server(&self) {
        self.tell_watchdog("stop");
        let deadline = Instant::now() + STARTUP;
        while std::net::TcpStream::connect(&self.s3_endpoint).is_ok() {
            assert!(Instant::now() < deadline, "garage did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the server stopped by [`Garage::stop_server`] again, on the same ports and data,
    /// and waits until it answers.
    pub fn start_server(&self) {
        self.tell_watchdog("start");
        self.wait_until_ready();
        let deadline = Instant::now() + STARTUP;
        while std::net::TcpStream::connect(&self.s3_endpoint).is_err() {
            assert!(
                Instant::now() < deadline,
                "garage's S3 API did not come back"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn tell_watchdog(&self, command: &str) {
        use std::io::Write;
        let mut guard = self.watchdog.lock().expect("watchdog lock");
        let (_, stdin) = guard.as_mut().expect("the watchdog runs");
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .expect("the watchdog reads commands");
    }

    /// Whether the watchdog (and so the server) is gone, with how it ended.
    fn server_exit(&self) -> Option<String> {
        let mut guard = self.watchdog.lock().ok()?;
        let (child, _) = guard.as_mut()?;
        child
            .try_wait()
            .ok()
            .flatten()
            .map(|status| status.to_string())
    }

    fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.join("garage.log")) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        let Ok(mut guard) = self.watchdog.lock() else {
            return;
        };
        if let Some((mut child, stdin)) = guard.take() {
            drop(stdin); // EOF: the watchdog stops Garage and removes the folder.
            let _ = child.wait();
        }
    }
}

/// `sh` runs Garage in the background and reads lines from its stdin: `stop` stops the server,
/// `start` starts it again (same config, ports and data); at EOF it stops Garage and removes
/// `dir`.
fn spawn_watchdog(binary: &Path, config: &Path, dir: &Path) -> (Child, ChildStdin) {
    const SCRIPT: &str = r#"
"$0" -c "$1" server >>"$2/garage.log" 2>&1 &
server=$!
while read -r command; do
  case "$command" in
    stop) kill -TERM "$server" 2>/dev/null; wait "$server"; server= ;;
    start) [ -n "$server" ] || { "$0" -c "$1" server >>"$2/garage.log" 2>&1 & server=$!; } ;;
  esac
done
[ -z "$server" ] || { kill -TERM "$server" 2>/dev/null; wait "$server"; }
rm -rf "$2"
"#;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(SCRIPT)
        .arg(binary)
        .arg(config)
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    clear_garage_env(&mut command);
    let mut child = command.spawn().expect("spawn sh to run garage");
    let stdin = child.stdin.take().expect("stdin was piped");
    (child, stdin)
}

fn garage_command(binary: &Path, config: &Path) -> Command {
    let mut command = Command::new(binary);
    command.arg("-c").arg(config);
    clear_garage_env(&mut command);
    command
}

/// Variables that would make the CLI talk to another cluster or override our config.
fn clear_garage_env(command: &mut Command) {
    for var in [
        "GARAGE_CONFIG_FILE",
        "GARAGE_RPC_HOST",
        "GARAGE_RPC_SECRET",
        "GARAGE_RPC_SECRET_FILE",
        "GARAGE_ADMIN_TOKEN",
        "GARAGE_ADMIN_TOKEN_FILE",
        "GARAGE_METRICS_TOKEN",
        "GARAGE_METRICS_TOKEN_FILE",
    ] {
        command.env_remove(var);
    }
}

fn find_garage() -> PathBuf {
    if let Some(bin) = std::env::var_os("GARAGE_BIN") {
        return PathBuf::from(bin);
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("garage"))
        .find(|candidate| candidate.is_file());
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    let in_cargo_bin = cargo_home
        .map(|home| home.join("bin").join("garage"))
        .filter(|candidate| candidate.is_file());
    on_path.or(in_cargo_bin).unwrap_or_else(|| {
        panic!(
            "the bucket tests need Garage (a real S3 server) and found no `garage` binary in \
             $GARAGE_BIN, on the PATH or in ~/.cargo/bin: run scripts/garage.sh to install it"
        )
    })
}

fn garage_toml(
    dir: &Path,
    rpc_port: u16,
    s3_port: u16,
    admin_port: u16,
    rpc_secret: &str,
    admin_token: &str,
) -> String {
    let dir = dir.display();
    format!(
        r#"metadata_dir = "{dir}/meta"
data_dir = "{dir}/data"
db_engine = "sqlite"
replication_factor = 1

rpc_bind_addr = "127.0.0.1:{rpc_port}"
rpc_public_addr = "127.0.0.1:{rpc_port}"
rpc_secret = "{rpc_secret}"

[s3_api]
s3_region = "{REGION}"
api_bind_addr = "127.0.0.1:{s3_port}"

[admin]
api_bind_addr = "127.0.0.1:{admin_port}"
admin_token = "{admin_token}"
"#
    )
}

/// Three distinct ports free at the time of the call. NB: Garage binds them itself, so another
/// process could take one in between; all listeners are held until all three are known so at
/// least they differ from each other.
fn free_ports() -> [u16; 3] {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port"))
        .collect();
    let port = |i: usize| {
        listeners[i]
            .local_addr()
            .expect("a bound listener has an address")
            .port()
    };
    [port(0), port(1), port(2)]
}

/// `bytes` random bytes as hex, from the kernel.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key of `garage key create`'s table: `Key ID:  GK…` and `Secret key:  …`.
fn parse_key(output: &str) -> Option<AccessKey> {
    let field = |name: &str| {
        output
            .lines()
            .find_map(|line| line.trim().strip_prefix(name))
            .map(|rest| rest.trim().to_string())
            .filter(|value| !value.is_empty())
    };
    Some(AccessKey {
        id: field("Key ID:")?,
        secret: field("Secret key:")?,
    })
}

/// `Unfinished uploads:  <n> multipart uploads` of `garage bucket info`; absent means none.
fn parse_unfinished_uploads(output: &str) -> usize {
    output
        .lines()
        .find_map(|line| line.trim().strip_prefix("Unfinished uploads:"))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected `Unfinished uploads` line: {rest:?}"))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garage_cli_output_is_parsed() {
        let key =
        "==== ACCESS KEY INFORMATION ====\nKey ID:              GKb9c4\nKey name:            t\n\
               Secret key:          688ff3\nCreated:             2026\n";
        let parsed = parse_key(key).expect("parsed");
        assert_eq!(
            (parsed.id.as_str(), parsed.secret.as_str()),
            ("GKb9c4", "688ff3")
        );
        assert!(
            parse_key("Key ID: GK1\nSecret key:   \n").is_none(),
            "redacted secret"
        );
        assert_eq!(parse_unfinished_uploads("Objects:  0\n"), 0);
        assert_eq!(
            parse_unfinished_uploads("Unfinished uploads:\t2 multipart uploads\n"),
            2
        );
    }
}
