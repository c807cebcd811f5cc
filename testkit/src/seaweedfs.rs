//! A real SeaweedFS S3 server on loopback (`weed server`: master, volume server, filer and S3
//! gateway in one process), the S3 server of the bucket tests and the one Kratix's own quick start
//! uses. Real S3 with signed requests: an access key that may do anything, one that may do
//! nothing, and buckets made with S3's CreateBucket.
//!
//! Every port is its own and on 127.0.0.1; telemetry is off and buckets are never made on upload,
//! so a missing bucket is refused as on any S3. The binary is `$WEED_BIN`, else the one
//! scripts/seaweedfs.sh installs (`$KRATIX_TESTWORLD_HOME/seaweedfs/weed`, by default under
//! `~/.cache/kratix-testworld`), else `weed` on the PATH; when there is none the harness panics
//! saying how to install it: a skipped test would look green.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ports::free_ports;
use crate::s3::{random_hex, signed_request, AccessKey};
use crate::watchdog::Watchdog;

/// How long the server may take to answer its first signed request.
const STARTUP: Duration = Duration::from_secs(90);

/// A running SeaweedFS; stopped (and its folder removed) on drop or when the test binary ends.
pub struct SeaweedFs {
    dir: PathBuf,
    /// `127.0.0.1:<port>` of the S3 API, without scheme, as Kratix configures endpoints.
    pub s3_endpoint: String,
    /// May do anything: make buckets, read, write, list.
    pub key: AccessKey,
    /// Known to the server, allowed nothing.
    pub key_without_permissions: AccessKey,
    watchdog: Watchdog,
}

impl SeaweedFs {
    /// Starts a fresh server in a scratch folder and waits until it answers. A server that loses
    /// one of its ports to another process while it starts is started again on fresh ports.
    pub fn start() -> SeaweedFs {
        const ATTEMPTS: usize = 3;
        let binary = find_weed();
        for attempt in 1..=ATTEMPTS {
            let server = Self::launch(&binary);
            match server.wait_until_ready() {
                Ok(()) => return server,
                Err(Startup::PortTaken(log)) if attempt < ATTEMPTS => {
                    eprintln!("seaweedfs lost a port while starting; again on fresh ports:\n{log}");
                }
                Err(Startup::PortTaken(log) | Startup::Failed(log)) => panic!("{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Spawns `weed server` in a fresh scratch folder on fresh ports, without waiting.
    fn launch(binary: &Path) -> SeaweedFs {
        let dir = crate::scratch_dir("seaweedfs-")
            .expect("create a folder for seaweedfs")
            .keep(); // NB: removed by the watchdog once the server has stopped.
        let key = new_key();
        let key_without_permissions = new_key();
        std::fs::write(
            dir.join("s3.json"),
            identities(&key, &key_without_permissions),
        )
        .expect("write s3.json");
        // Read from the working folder: one volume per bucket instead of seven, so that a test
        // binary's hundred buckets stay well inside the volume server's limit.
        std::fs::write(
            dir.join("master.toml"),
            "[master.volume_growth]\ncopy_1 = 1\n",
        )
        .expect("write master.toml");
        std::fs::create_dir_all(dir.join("data")).expect("create the data folder");
        let ports = free_ports::<8>();
        let args = server_args(&dir, ports);
        let watchdog = Watchdog::spawn(binary, &args, &dir, &dir.join("weed.log"), &[])
            .expect("spawn sh to run weed");
        SeaweedFs {
            s3_endpoint: format!("127.0.0.1:{}", ports[6]),
            dir,
            key,
            key_without_permissions,
            watchdog,
        }
    }

    /// Makes an empty bucket with S3's CreateBucket, signed with [`SeaweedFs::key`].
    pub fn create_bucket(&self, name: &str) {
        let (status, body) =
            signed_request(&self.s3_endpoint, &self.key, "PUT", &format!("/{name}"))
                .unwrap_or_else(|e| panic!("CreateBucket {name}: {e}"));
        assert_eq!(status, 200, "CreateBucket {name}: {body}");
    }

    /// Stops the server (its data stays) and waits until its S3 port refuses connections.
    pub fn stop_server(&self) {
        self.watchdog.stop(&self.s3_endpoint);
    }

    /// Starts the server stopped by [`SeaweedFs::stop_server`] again, on the same ports and data,
    /// and waits until it answers.
    pub fn start_server(&self) {
        self.watchdog.start();
        if let Err(Startup::PortTaken(log) | Startup::Failed(log)) = self.wait_until_ready() {
            panic!("{log}");
        }
    }

    /// Until a signed ListBuckets is answered: the gateway, the filer behind it and the
    /// identities are all up.
    fn wait_until_ready(&self) -> Result<(), Startup> {
        let deadline = Instant::now() + STARTUP;
        loop {
            let answer = signed_request(&self.s3_endpoint, &self.key, "GET", "/");
            if matches!(answer, Ok((200, _))) {
                return Ok(());
            }
            if self.watchdog.server_ended() {
                return Err(Startup::ended(&self.log()));
            }
            if Instant::now() > deadline {
                return Err(Startup::Failed(format!(
                    "seaweedfs did not answer ListBuckets within {STARTUP:?} ({answer:?}); log:\n{}",
                    self.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("weed.log")).unwrap_or_default();
        // The end says why it stopped; the start is mostly the same banner every time.
        let start = text.len().saturating_sub(8000);
        let start = (start..=text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text[start..].to_string()
    }
}

/// Why a server did not come up, with what it logged.
enum Startup {
    /// Another process bound one of its ports first: worth starting again on fresh ports.
    PortTaken(String),
    Failed(String),
}

impl Startup {
    /// A server that exited while starting, from what it logged.
    fn ended(log: &str) -> Startup {
        let port_taken = log.contains("address already in use");
        let why = format!("weed exited during startup; its log:\n{log}");
        if port_taken {
            Startup::PortTaken(why)
        } else {
            Startup::Failed(why)
        }
    }
}

fn new_key() -> AccessKey {
    AccessKey {
        id: format!("KRATIXTEST{}", random_hex(5).to_uppercase()),
        secret: random_hex(20),
    }
}

/// The S3 gateway's identities: `key` may do anything, `denied` nothing.
fn identities(key: &AccessKey, denied: &AccessKey) -> String {
    format!(
        r#"{{"identities": [
  {{"name": "tests", "credentials": [{{"accessKey": "{}", "secretKey": "{}"}}],
    "actions": ["Admin", "Read", "Write", "List", "Tagging"]}},
  {{"name": "no-permissions", "credentials": [{{"accessKey": "{}", "secretKey": "{}"}}],
    "actions": []}}
]}}
"#,
        key.id, key.secret, denied.id, denied.secret
    )
}

/// `weed server` with master, volume server, filer and S3 gateway, each on its own loopback
/// ports (HTTP and gRPC): `ports` are master, master gRPC, volume, volume gRPC, filer, filer
/// gRPC, S3 and S3 gRPC.
fn server_args(dir: &Path, ports: [u16; 8]) -> Vec<OsString> {
    let [master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc] = ports;
    let path = |name: &str| dir.join(name).display().to_string();
    [
        "server".to_string(),
        format!("-dir={}", path("data")),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        // SeaweedFS reports anonymous statistics to its makers unless told not to.
        "-master.telemetry=false".into(),
        format!("-master.port={master}"),
        format!("-master.port.grpc={master_grpc}"),
        "-master.volumeSizeLimitMB=64".into(),
        format!("-volume.port={volume}"),
        format!("-volume.port.grpc={volume_grpc}"),
        "-volume.max=0".into(),
        // Stopping waits this long for other servers to notice by default (10 s).
        "-volume.preStopSeconds=0".into(),
        "-filer".into(),
        format!("-filer.port={filer}"),
        format!("-filer.port.grpc={filer_grpc}"),
        format!("-filer.localSocket={}", path("filer.sock")),
        "-s3".into(),
        format!("-s3.port={s3}"),
        format!("-s3.port.grpc={s3_grpc}"),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        format!("-s3.localSocket={}", path("s3.sock")),
        format!("-s3.config={}", path("s3.json")),
        "-s3.autoCreateBucket=false".into(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

fn find_weed() -> PathBuf {
    if let Some(bin) = std::env::var_os("WEED_BIN") {
        return PathBuf::from(bin);
    }
    let cache = std::env::var_os("KRATIX_TESTWORLD_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/kratix-testworld"))
        })
        .map(|home| home.join("seaweedfs").join("weed"))
        .filter(|candidate| candidate.is_file());
    let on_path = || {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
            .map(|dir| dir.join("weed"))
            .find(|candidate| candidate.is_file())
    };
    cache.or_else(on_path).unwrap_or_else(|| {
        panic!(
            "the bucket tests need SeaweedFS (a real S3 server) and found no `weed` binary in \
             $WEED_BIN, in ~/.cache/kratix-testworld/seaweedfs or on the PATH: run \
             scripts/seaweedfs.sh to install it"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lost_port_is_worth_starting_again() {
        let cases = [
            (
                "F1206 s3.go:434 S3 API Server listener on 127.0.0.1:38513 error: listen tcp \
                 127.0.0.1:38513: bind: address already in use",
                true,
            ),
            ("F1206 master.go:270 raft: no leader", false),
            ("", false),
        ];
        for (log, port_taken) in cases {
            let startup = Startup::ended(log);
            assert_eq!(
                matches!(startup, Startup::PortTaken(_)),
                port_taken,
                "{log}"
            );
            let (Startup::PortTaken(why) | Startup::Failed(why)) = startup;
            assert!(why.contains(log), "{why}");
        }
    }
}
