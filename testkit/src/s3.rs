//! The real S3 server of the bucket tests: SeaweedFS by default, or Garage when
//! `KRATIX_TEST_S3=garage` (a second implementation to check against; it is built from source,
//! see scripts/garage.sh). One server per test binary ([`S3Server::shared`]) or per test
//! ([`S3Server::start`]), one bucket per test ([`S3Server::new_bucket`]), on loopback.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::garage::Garage;
use crate::seaweedfs::SeaweedFs;

/// The region requests are signed for (Garage checks it against its own; SeaweedFS takes any).
pub const REGION: &str = "kratix-test";

/// An S3 key pair.
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

enum Backend {
    SeaweedFs(SeaweedFs),
    Garage {
        garage: Garage,
        denied: OnceLock<AccessKey>,
    },
}

/// A running S3 server with a key that may do anything in the buckets it makes.
pub struct S3Server {
    /// `127.0.0.1:<port>` of the S3 API, without scheme, as Kratix configures endpoints.
    pub s3_endpoint: String,
    /// Read, write and own every bucket of [`S3Server::new_bucket`].
    pub key: AccessKey,
    backend: Backend,
    buckets: AtomicUsize,
}

impl S3Server {
    /// The server of this test binary, started on first use.
    pub fn shared() -> &'static S3Server {
        static SHARED: OnceLock<S3Server> = OnceLock::new();
        SHARED.get_or_init(S3Server::start)
    }

    /// Starts a fresh server of the kind `KRATIX_TEST_S3` names (`seaweedfs`, the default, or
    /// `garage`).
    pub fn start() -> S3Server {
        let kind = std::env::var("KRATIX_TEST_S3").unwrap_or_default();
        let backend = match kind.as_str() {
            "" | "seaweedfs" => Backend::SeaweedFs(SeaweedFs::start()),
            "garage" => Backend::Garage {
                garage: Garage::start(),
                denied: OnceLock::new(),
            },
            other => panic!("KRATIX_TEST_S3={other}: the S3 servers are seaweedfs and garage"),
        };
        let (s3_endpoint, key) = match &backend {
            Backend::SeaweedFs(s) => (s.s3_endpoint.clone(), s.key.clone()),
            Backend::Garage { garage, .. } => (garage.s3_endpoint.clone(), garage.key.clone()),
        };
        S3Server {
            s3_endpoint,
            key,
            backend,
            buckets: AtomicUsize::new(0),
        }
    }

    /// Creates an empty bucket that [`S3Server::key`] may read, write and administer; returns
    /// its name.
    pub fn new_bucket(&self) -> String {
        let n = self.buckets.fetch_add(1, Ordering::Relaxed);
        let name = format!("test-{}-{n}", std::process::id());
        match &self.backend {
            Backend::SeaweedFs(s) => s.create_bucket(&name),
            Backend::Garage { garage, .. } => garage.create_bucket(&name, &self.key),
        }
        name
    }

    /// A key the server knows that is allowed on no bucket.
    pub fn key_without_permissions(&self) -> AccessKey {
        match &self.backend {
            Backend::SeaweedFs(s) => s.key_without_permissions.clone(),
            Backend::Garage { garage, denied } => denied
                .get_or_init(|| garage.create_key("no-permissions"))
                .clone(),
        }
    }

    /// How many multipart uploads of `bucket` are unfinished (S3's ListMultipartUploads).
    pub fn unfinished_uploads(&self, bucket: &str) -> usize {
        let (status, body) = signed_request(
            &self.s3_endpoint,
            &self.key,
            "GET",
            &format!("/{bucket}?uploads="),
        )
        .unwrap_or_else(|e| panic!("ListMultipartUploads {bucket}: {e}"));
        assert_eq!(status, 200, "ListMultipartUploads {bucket}: {body}");
        body.matches("<Upload>").count()
    }

    /// Stops the server (its data stays) and waits until its S3 port refuses connections.
    pub fn stop_server(&self) {
        match &self.backend {
            Backend::SeaweedFs(s) => s.stop_server(),
            Backend::Garage { garage, .. } => garage.stop_server(),
        }
    }

    /// Starts the server stopped by [`S3Server::stop_server`] again, on the same port and data,
    /// and waits until it answers.
    pub fn start_server(&self) {
        match &self.backend {
            Backend::SeaweedFs(s) => s.start_server(),
            Backend::Garage { garage, .. } => garage.start_server(),
        }
    }
}

/// One S3 request signed (SigV4, [`REGION`]) with `key` by curl: the status and the body.
/// `path` is the bucket and key with any query (an empty-valued parameter written `name=`).
pub(crate) fn signed_request(
    endpoint: &str,
    key: &AccessKey,
    method: &str,
    path: &str,
) -> Result<(u16, String), String> {
    let mut child = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--max-time",
            "30",
            "--config",
            "-",
        ])
        .args(["--aws-sigv4", &format!("aws:amz:{REGION}:s3")])
        .args(["--request", method, "--write-out", "\n%{http_code}"])
        .arg(format!("http://{endpoint}{path}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run curl (apt-get install curl): {e}"))?;
    // The credentials go through stdin, never on a command line others can read.
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().ok_or("curl's stdin was not piped")?;
        writeln!(stdin, "user = \"{}:{}\"", key.id, key.secret).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let (body, status) = text.rsplit_once('\n').ok_or("curl printed no status")?;
    let status = status
        .trim()
        .parse()
        .map_err(|_| format!("curl printed no status: {text}"))?;
    Ok((status, body.to_string()))
}

/// `bytes` random bytes as hex, from the kernel.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
