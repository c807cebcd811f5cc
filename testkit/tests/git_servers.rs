//! The loopback git servers of the kit work with the reference client, the git CLI: clone,
//! commit and push through each, then check the bare repository on disk. These prove the harness
//! the Git store's transport tests rely on.

use std::io::Read as _;
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;
use testkit::{
    files_at, git, git_failure, git_with_env, init_bare, scratch_dir, GitDaemon, GitHttp,
    RestartableGitDaemon, SilentServer, SshKeyPair, Sshd,
};

const USERNAME: &str = "kratix";
const PASSWORD: &str = "correct horse battery staple";

/// Clones `url`, pushes one commit to `main`, and checks the server's repository at `bare` holds
/// it and that a fresh clone reads it back.
fn push_then_clone_round_trip(url: &str, bare: &Path, env: &[(&str, &str)]) {
    let work = scratch_dir("client-").expect("scratch folder");
    git_with_env(&["clone", "--quiet", url, "first"], work.path(), env);
    let first = work.path().join("first");
    std::fs::write(first.join("hello.txt"), "hello over the wire\n").expect("write file");
    git(&["add", "hello.txt"], &first);
    git(&["commit", "--quiet", "-m", "say hello"], &first);
    git_with_env(&["push", "--quiet", "origin", "HEAD:main"], &first, env);

    let pushed = git(&["rev-parse", "HEAD"], &first);
    assert_eq!(git(&["rev-parse", "main"], bare), pushed);
    assert_eq!(
        git(&["show", "main:hello.txt"], bare),
        "hello over the wire\n"
    );
    assert_eq!(
        files_at(bare, "main", &["hello.txt", "absent.txt"]),
        [Some(b"hello over the wire\n".to_vec()), None]
    );

    git_with_env(&["clone", "--quiet", url, "second"], work.path(), env);
    let second = work.path().join("second");
    assert_eq!(git(&["rev-parse", "HEAD"], &second), pushed);
    assert_eq!(
        std::fs::read_to_string(second.join("hello.txt")).expect("cloned file"),
        "hello over the wire\n"
    );
}

/// `url` of the HTTP server with the test's credentials in it.
fn authenticated(url: &str) -> String {
    url.replace(
        "http://",
        &format!("http://{USERNAME}:{}@", PASSWORD.replace(' ', "%20")),
    )
}

fn has_no_branches(bare: &Path) -> bool {
    git(&["for-each-ref", "refs/heads"], bare).is_empty()
}

fn refuses_connections(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_err()
}

/// `url` (of a repository no other test names) answers `git ls-remote` while its server runs
/// and not once it is dropped. Unlike a refused connection, this holds when another test's server
/// binds the freed port at once.
fn serves_until_dropped<S>(server: S, url: &str) {
    let work = scratch_dir("client-").expect("scratch folder");
    git(&["ls-remote", url], work.path());
    drop(server);
    git_failure(&["ls-remote", url], work.path(), &[]);
}

#[test]
fn git_daemon_serves_clone_and_push() {
    let daemon = GitDaemon::start().expect("start git daemon");
    let bare = daemon.bare_repo("platform.git").expect("bare repo");
    push_then_clone_round_trip(&daemon.url("platform.git"), &bare, &[]);
}

#[test]
fn git_daemon_stops_on_drop() {
    let daemon = GitDaemon::start().expect("start git daemon");
    daemon.bare_repo("stops-on-drop.git").expect("bare repo");
    let url = daemon.url("stops-on-drop.git");
    serves_until_dropped(daemon, &url);
}

#[test]
fn restartable_daemon_refuses_while_stopped_and_serves_again_on_its_port() {
    let root = scratch_dir("restartable-").expect("scratch folder");
    let bare = root.path().join("platform.git");
    init_bare(&bare).expect("bare repo");
    let mut daemon = RestartableGitDaemon::start_on_free_port(root.path());
    let url = daemon.url("platform.git");
    push_then_clone_round_trip(&url, &bare, &[]);
    daemon.stop();
    assert!(refuses_connections(daemon.port()));
    daemon.start();
    let work = scratch_dir("client-").expect("scratch folder");
    let heads = git(&["ls-remote", "--heads", &url], work.path());
    assert!(heads.contains("refs/heads/main"), "{heads}");
}

#[test]
fn silent_server_accepts_and_never_answers_until_it_hangs_up() {
    let server = SilentServer::start();
    let mut client = TcpStream::connect(("127.0.0.1", server.port)).expect("accepted");
    client
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("read timeout");
    let mut byte = [0u8; 1];
    let silence = client.read(&mut byte).expect_err("no byte ever comes");
    assert!(
        matches!(
            silence.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        "{silence}"
    );
    server.hang_up();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    assert_eq!(client.read(&mut byte).expect("end of stream"), 0);
}

#[test]
fn http_serves_clone_and_push_with_basic_auth() {
    let server = GitHttp::start(USERNAME, PASSWORD).expect("start git http server");
    let bare = server.bare_repo("platform.git").expect("bare repo");
    let url = authenticated(&server.url("platform.git"));
    push_then_clone_round_trip(&url, &bare, &[]);
}

#[test]
fn http_refuses_a_wrong_password_and_no_password() {
    let server = GitHttp::start(USERNAME, PASSWORD).expect("start git http server");
    let bare = server.bare_repo("platform.git").expect("bare repo");
    let work = scratch_dir("client-").expect("scratch folder");
    let wrong = server
        .url("platform.git")
        .replace("http://", &format!("http://{USERNAME}:wrong@"));
    let stderr = git_failure(&["ls-remote", &wrong], work.path(), &[]);
    assert!(stderr.contains("Authentication failed"), "{stderr}");
    let anonymous = server.url("platform.git");
    let stderr = git_failure(&["ls-remote", &anonymous], work.path(), &[]);
    assert!(stderr.contains("could not read Username"), "{stderr}");

    git(&["init", "--quiet", "local"], work.path());
    let local = work.path().join("local");
    git(
        &["commit", "--quiet", "--allow-empty", "-m", "rejected"],
        &local,
    );
    git_failure(&["push", &wrong, "HEAD:main"], &local, &[]);
    assert!(has_no_branches(&bare));
}

#[test]
fn http_stops_on_drop() {
    let server = GitHttp::start(USERNAME, PASSWORD).expect("start git http server");
    server.bare_repo("stops-on-drop.git").expect("bare repo");
    let url = authenticated(&server.url("stops-on-drop.git"));
    serves_until_dropped(server, &url);
}

#[test]
fn sshd_serves_clone_and_push_with_the_client_key() {
    let sshd = Sshd::start().expect("start sshd");
    let bare = sshd.bare_repo("platform.git").expect("bare repo");
    let ssh = sshd.git_ssh_command();
    push_then_clone_round_trip(
        &sshd.url("platform.git"),
        &bare,
        &[("GIT_SSH_COMMAND", &ssh)],
    );
}

#[test]
fn sshd_refuses_a_key_it_does_not_know() {
    let sshd = Sshd::start().expect("start sshd");
    let bare = sshd.bare_repo("platform.git").expect("bare repo");
    let work = scratch_dir("client-").expect("scratch folder");
    let stranger = SshKeyPair::generate().expect("generate key");
    let stranger_key = work.path().join("stranger");
    std::fs::write(&stranger_key, &stranger.private_key).expect("write key");
    let ssh = sshd.git_ssh_command().replace(
        &sshd_client_key_path(&sshd),
        &stranger_key.display().to_string(),
    );
    assert!(ssh.contains(&stranger_key.display().to_string()), "{ssh}");
    std::fs::set_permissions(
        &stranger_key,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("restrict key");

    git(&["init", "--quiet", "local"], work.path());
    let local = work.path().join("local");
    git(
        &["commit", "--quiet", "--allow-empty", "-m", "rejected"],
        &local,
    );
    let stderr = git_failure(
        &["push", &sshd.url("platform.git"), "HEAD:main"],
        &local,
        &[("GIT_SSH_COMMAND", &ssh)],
    );
    assert!(
        stderr.contains("Permission denied"),
        "{stderr}\nsshd log:\n{}",
        sshd.log()
    );
    assert!(has_no_branches(&bare));
}

/// The `-i` argument of the server's own GIT_SSH_COMMAND.
fn sshd_client_key_path(sshd: &Sshd) -> String {
    let command = sshd.git_ssh_command();
    let mut words = command.split_whitespace();
    words.by_ref().find(|word| *word == "-i");
    words.next().expect("git_ssh_command passes -i").to_owned()
}

#[test]
fn sshd_stops_on_drop() {
    let sshd = Sshd::start().expect("start sshd");
    let port = sshd.port();
    drop(sshd);
    assert!(refuses_connections(port));
}
