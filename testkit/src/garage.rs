//! A real Garage S3 server on loopback: the bucket tests' second S3 implementation, used when
//! `KRATIX_TEST_S3=garage` (see [`crate::s3`]). Started and stopped through a
//! [`Watchdog`], so it cannot outlive the test binary.
//!
//! The binary is `$GARAGE_BIN`, else `garage` on the PATH, else `~/.cargo/bin/garage`; when there
//! is none the harness panics saying how to install it (`scripts/garage.sh`): a skipped test
//! would look green.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_ports;
use crate::s3::{random_hex, AccessKey, REGION};
use crate::watchdog::Watchdog;

/// How long the server may take to answer its first `status`.
const STARTUP: Duration = Duration::from_secs(60);

/// A running single-node Garage with one access key. Stops the server on drop.
pub struct Garage {
    binary: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    /// `127.0.0.1:<port>` of the S3 API, without scheme, as Kratix configures endpoints.
    pub s3_endpoint: String,
    /// The key made at start.
    pub key: AccessKey,
    watchdog: Watchdog,
}

impl Garage {
    /// Starts a fresh server: config in a temporary folder, single-node layout, one key.
    pub fn start() -> Garage {
        let binary = find_garage();
        let dir = crate::scratch_dir("garage-")
            .expect("create a folder for garage")
            .keep(); // NB: removed by the watchdog once Garage has stopped (see module docs).
        let [rpc_port, s3_port, admin_port] = free_ports::<3>();
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

        let args: Vec<OsString> = vec!["-c".into(), config.clone().into(), "server".into()];
        let watchdog = Watchdog::spawn(&binary, &args, &dir, &dir.join("garage.log"), GARAGE_ENV)
            .expect("spawn sh to run garage");
        let mut garage = Garage {
            binary,
            dir,
            config,
            s3_endpoint: format!("127.0.0.1:{s3_port}"),
            key: AccessKey {
                id: String::new(),
                secret: String::new(),
            },
            watchdog,
        };
        garage.wait_until_ready();
        garage.assign_layout();
        garage.key = garage.create_key("statestores-tests");
        garage
    }

    /// Creates an empty bucket `name` that `key` may read, write and administer.
    pub fn create_bucket(&self, name: &str, key: &AccessKey) {
        self.cli(&["bucket", "create", name]);
        self.cli(&[
            "bucket", "allow", "--read", "--write", "--owner", name, "--key", &key.id,
        ]);
    }

    /// Creates another key (not allowed on any bucket).
    pub fn create_key(&self, name: &str) -> AccessKey {
        let out = self.cli(&["key", "create", name]);
        parse_key(&out).unwrap_or_else(|| {
            panic!("could not find `Key ID:` and `Secret key:` in `garage key create` output")
        })
    }

    /// Runs `garage -c <config> <args>`, panicking with its stderr when it fails.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.try_cli(args);
        assert!(
            out.status.success(),
            "garage {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
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
            assert!(
                !self.watchdog.server_ended(),
                "garage server exited during startup; its log:\n{}",
                self.log()
            );
            assert!(
                Instant::now() <= deadline,
                "garage did not answer `status` within {STARTUP:?}: {}\nlog:\n{}",
                String::from_utf8_lossy(&out.stderr),
                self.log()
            );
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
        self.watchdog.stop(&self.s3_endpoint);
    }

    /// Starts the server stopped by [`Garage::stop_server`] again, on the same ports and data,
    /// and waits until it answers.
    pub fn start_server(&self) {
        self.watchdog.start();
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

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("garage.log")).unwrap_or_default()
    }
}

fn garage_command(binary: &Path, config: &Path) -> Command {
    let mut command = Command::new(binary);
    command.arg("-c").arg(config);
    for var in GARAGE_ENV {
        command.env_remove(var);
    }
    command
}

/// Variables that would make the CLI talk to another cluster or override our config.
const GARAGE_ENV: &[&str] = &[
    "GARAGE_CONFIG_FILE",
    "GARAGE_RPC_HOST",
    "GARAGE_RPC_SECRET",
    "GARAGE_RPC_SECRET_FILE",
    "GARAGE_ADMIN_TOKEN",
    "GARAGE_ADMIN_TOKEN_FILE",
    "GARAGE_METRICS_TOKEN",
    "GARAGE_METRICS_TOKEN_FILE",
];

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
    }
}
