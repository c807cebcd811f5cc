//! `ssh://` on loopback: a real OpenSSH server, started in the foreground with a generated
//! configuration, host key and client key, that lets exactly one key log in as the current user
//! and run `git-upload-pack` / `git-receive-pack`.

use crate::process::ProcessGroup;
use crate::{closed_port, git_cli, missing_program, require_program, scratch_dir};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";
/// sshd refuses to start without its privilege-separation folder.
const PRIVSEP_DIR: &str = "/run/sshd";
/// Another process may take the port between our probe and sshd's bind: try a few ports.
const BIND_ATTEMPTS: usize = 5;
/// Generous: the machine is small and busy.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// An ed25519 key pair in OpenSSH text form.
#[derive(Clone)]
pub struct SshKeyPair {
    pub private_key: String,
    /// `ssh-ed25519 AAAA… comment`
    pub public_key: String,
}

impl std::fmt::Debug for SshKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshKeyPair")
            .field("private_key", &"<redacted>")
            .field("public_key", &self.public_key)
            .finish()
    }
}

impl SshKeyPair {
    /// A fresh key pair with no passphrase.
    pub fn generate() -> std::io::Result<Self> {
        let dir = scratch_dir("ssh-key-")?;
        let path = dir.path().join("id_ed25519");
        generate_key(&path, "kratix-test-client")?;
        Ok(Self {
            private_key: std::fs::read_to_string(&path)?,
            public_key: std::fs::read_to_string(path.with_extension("pub"))?
                .trim()
                .to_owned(),
        })
    }
}

fn generate_key(path: &Path, comment: &str) -> std::io::Result<()> {
    let keygen = require_program("ssh-keygen")?;
    let output = Command::new(keygen)
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "ssh-keygen failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )))
    }
}

/// A running sshd that accepts [`Sshd::client_private_key`] for [`Sshd::username`].
pub struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    username: String,
    client_key: SshKeyPair,
    host_public_key: String,
    process: Option<ProcessGroup>,
}

impl Sshd {
    pub fn start() -> std::io::Result<Self> {
        if !Path::new(SSHD).is_file() {
            return Err(missing_program(SSHD));
        }
        require_program("ssh")?;
        let git = require_program("git")?;
        std::fs::create_dir_all(PRIVSEP_DIR)?;
        let dir = scratch_dir("sshd-")?;
        let host_key = dir.path().join("host_key");
        generate_key(&host_key, "kratix-test-host")?;
        let host_public_key =
            key_type_and_blob(&std::fs::read_to_string(host_key.with_extension("pub"))?);
        let client_key = SshKeyPair::generate()?;
        let client_key_file = dir.path().join("client_key");
        write_private(&client_key_file, &client_key.private_key)?;
        std::fs::write(
            dir.path().join("authorized_keys"),
            format!("{}\n", client_key.public_key),
        )?;
        std::fs::create_dir(dir.path().join("repos"))?;
        let username = current_username()?;
        let git_dir = git.parent().unwrap_or(Path::new("/usr/bin")).to_path_buf();

        let mut last_failure = String::new();
        for _ in 0..BIND_ATTEMPTS {
            let port = closed_port()?;
            let config = dir.path().join("sshd_config");
            std::fs::write(&config, sshd_config(dir.path(), port, &username, &git_dir))?;
            let log = dir.path().join(format!("sshd-{port}.log"));
            let mut process = ProcessGroup::spawn(
                Command::new(SSHD)
                    .args(["-D", "-e", "-f"])
                    .arg(&config)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    // A file, not a pipe: the per-connection children sshd forks log there too
                    // and must never block on a reader.
                    .stderr(std::fs::File::create(&log)?),
                // The listener never exits by itself.
                Duration::ZERO,
            )?;
            match wait_until_listening(&mut process, &log) {
                Startup::Listening => {
                    let sshd = Self {
                        dir,
                        port,
                        username,
                        client_key,
                        host_public_key,
                        process: Some(process),
                    };
                    std::fs::write(
                        sshd.dir.path().join("known_hosts"),
                        format!("{}\n", sshd.known_hosts()),
                    )?;
                    return Ok(sshd);
                }
                Startup::PortTaken(output) => last_failure = output,
                Startup::Failed(output) => {
                    return Err(std::io::Error::other(format!(
                        "sshd did not start:\n{output}"
                    )));
                }
            }
        }
        Err(std::io::Error::other(format!(
            "sshd found no free port in {BIND_ATTEMPTS} attempts:\n{last_failure}"
        )))
    }

    /// `ssh://<user>@127.0.0.1:<port>/<absolute path of repo>`.
    pub fn url(&self, repo: &str) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.username,
            self.port,
            self.repo_path(repo).display()
        )
    }

    /// Creates an empty bare repository `repo` (unborn branch `main`) and returns its path on disk.
    pub fn bare_repo(&self, repo: &str) -> std::io::Result<PathBuf> {
        let path = self.repo_path(repo);
        git_cli::init_bare(&path)?;
        Ok(path)
    }

    fn repo_path(&self, repo: &str) -> PathBuf {
        self.dir.path().join("repos").join(repo)
    }

    /// The user the client key logs in as.
    pub fn username(&self) -> &str {
        &self.username
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The one private key this server accepts, in OpenSSH text form.
    pub fn client_private_key(&self) -> &str {
        &self.client_key.private_key
    }

    /// The server's host key as a known_hosts line: `[127.0.0.1]:<port> ssh-ed25519 AAAA…`.
    pub fn known_hosts(&self) -> String {
        format!("[127.0.0.1]:{} {}", self.port, self.host_public_key)
    }

    /// A `GIT_SSH_COMMAND` for the git CLI: the client key, this server's host key only, no
    /// user configuration and no prompts.
    pub fn git_ssh_command(&self) -> String {
        let dir = self.dir.path();
        format!(
            "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile={}",
            dir.join("client_key").display(),
            dir.join("known_hosts").display()
        )
    }

    /// What sshd has logged so far (it logs why a login was refused).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("sshd-{}.log", self.port)))
            .unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // Kills and reaps the listener. Connections still open are served by children in their
        // own sessions; they end when their client hangs up.
        self.process.take();
    }
}

enum Startup {
    Listening,
    PortTaken(String),
    Failed(String),
}

fn wait_until_listening(process: &mut ProcessGroup, log: &Path) -> Startup {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let output = std::fs::read_to_string(log).unwrap_or_default();
        if output.contains("Server listening on") {
            return Startup::Listening;
        }
        if output.contains("Address already in use") || output.contains("Cannot bind any address") {
            return Startup::PortTaken(output);
        }
        if process.has_exited() {
            return Startup::Failed(std::fs::read_to_string(log).unwrap_or(output));
        }
        if Instant::now() > deadline {
            return Startup::Failed(format!("not listening after {START_TIMEOUT:?}:\n{output}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sshd_config(dir: &Path, port: u16, username: &str, git_dir: &Path) -> String {
    let hermetic_setenv = git_cli::hermetic_env()
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut config = String::new();
    let lines = [
        format!("Port {port}"),
        "ListenAddress 127.0.0.1".to_owned(),
        "AddressFamily inet".to_owned(),
        format!("HostKey {}", dir.join("host_key").display()),
        "PidFile none".to_owned(),
        format!(
            "AuthorizedKeysFile {}",
            dir.join("authorized_keys").display()
        ),
        format!("AllowUsers {username}"),
        // Tests run as root in containers.
        "PermitRootLogin yes".to_owned(),
        // The scratch folders are not owned the way sshd expects of a home directory.
        "StrictModes no".to_owned(),
        "UsePAM no".to_owned(),
        "PubkeyAuthentication yes".to_owned(),
        "PasswordAuthentication no".to_owned(),
        "KbdInteractiveAuthentication no".to_owned(),
        "AuthenticationMethods publickey".to_owned(),
        // The session must find the same git (and its git-upload-pack) as the test, configured
        // the same way.
        format!(
            "SetEnv PATH={}:/usr/local/bin:/usr/bin:/bin {}",
            git_dir.display(),
            hermetic_setenv
        ),
        // Lets clients ask for git protocol v2.
        "AcceptEnv GIT_PROTOCOL".to_owned(),
        "LogLevel VERBOSE".to_owned(),
    ];
    for line in lines {
        let _ = writeln!(config, "{line}");
    }
    config
}

/// `ssh-ed25519 AAAA… comment` → `ssh-ed25519 AAAA…`.
fn key_type_and_blob(public_key: &str) -> String {
    public_key
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_bytes())
}

fn current_username() -> std::io::Result<String> {
    let output = Command::new("id").arg("-un").output()?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(std::io::Error::other(
            "`id -un` failed: cannot tell which user sshd should let in",
        ))
    }
}
