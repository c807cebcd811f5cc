//! The git CLI, run hermetically: no system or user configuration, a fixed identity and date, so
//! the results depend only on the test.

use std::path::Path;
use std::process::Command;

/// The environment that makes git ignore the machine's configuration, and keeps it from
/// starting background maintenance that would outlive the test. Servers pass it on to the git
/// processes they start.
pub fn hermetic_env() -> [(&'static str, &'static str); 11] {
    [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_COUNT", "4"),
        ("GIT_CONFIG_KEY_0", "init.defaultBranch"),
        ("GIT_CONFIG_VALUE_0", "main"),
        ("GIT_CONFIG_KEY_1", "maintenance.auto"),
        ("GIT_CONFIG_VALUE_1", "false"),
        ("GIT_CONFIG_KEY_2", "gc.auto"),
        ("GIT_CONFIG_VALUE_2", "0"),
        ("GIT_CONFIG_KEY_3", "receive.autogc"),
        ("GIT_CONFIG_VALUE_3", "false"),
    ]
}

/// A `git` command in `dir` that ignores the machine's configuration and never prompts, with a
/// fixed identity and date so commit ids are reproducible.
pub fn hermetic_git_command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .envs(hermetic_env())
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2001-02-03T04:05:06Z")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "2001-02-03T04:05:06Z")
        // A failed login must fail, not wait for a password on a terminal.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/false")
        .env("SSH_ASKPASS", "/bin/false")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    command
}

/// Runs `git args` in `dir` and returns its stdout; panics with git's stderr when it fails.
pub fn git(args: &[&str], dir: &Path) -> String {
    git_with_env(args, dir, &[])
}

/// Like [`git`], with extra environment variables (e.g. `GIT_SSH_COMMAND`).
pub fn git_with_env(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> String {
    let mut command = hermetic_git_command(dir);
    command.args(args).envs(env.iter().copied());
    let output = command.output().unwrap_or_else(|err| {
        panic!("cannot run git {args:?} (install it with scripts/test-deps.sh): {err}")
    });
    assert!(
        output.status.success(),
        "git {args:?} in {} failed with {}:\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("git printed non-UTF-8 output")
}

/// Runs `git args` in `dir`, expecting it to fail, and returns its stderr; panics when it succeeds.
pub fn git_failure(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> String {
    let mut command = hermetic_git_command(dir);
    command.args(args).envs(env.iter().copied());
    let output = command.output().unwrap_or_else(|err| {
        panic!("cannot run git {args:?} (install it with scripts/test-deps.sh): {err}")
    });
    assert!(
        !output.status.success(),
        "git {args:?} in {} succeeded but should have failed; it printed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Creates a bare repository at `path` whose unborn branch is `main`.
pub fn init_bare(path: &Path) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(path);
    std::fs::create_dir_all(parent)?;
    let output = hermetic_git_command(parent)
        .args(["init", "--quiet", "--bare", "-b", "main"])
        .arg(path)
        .output()
        .map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                crate::missing_program("git")
            } else {
                err
            }
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "git init --bare {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        )))
    }
}

/// The content of each of `paths` in the tree of `rev` in `repo` (`None` where it is absent or
/// not a file), read with one `git cat-file --batch` however many paths there are.
pub fn files_at(repo: &Path, rev: &str, paths: &[&str]) -> Vec<Option<Vec<u8>>> {
    use std::io::Write as _;
    let mut child = hermetic_git_command(repo)
        .args(["cat-file", "--batch"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| {
            panic!("cannot run git cat-file (install it with scripts/test-deps.sh): {err}")
        });
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let requests: String = paths.iter().map(|path| format!("{rev}:{path}\n")).collect();
    // Fed from a thread so that neither side blocks on a full pipe.
    let feeder = std::thread::spawn(move || stdin.write_all(requests.as_bytes()));
    let output = child.wait_with_output().expect("git cat-file runs");
    feeder
        .join()
        .expect("feeder thread")
        .expect("git cat-file reads its input");
    assert!(
        output.status.success(),
        "git cat-file --batch in {} failed: {}",
        repo.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    parse_cat_file_batch(&output.stdout, paths.len())
}

fn parse_cat_file_batch(mut output: &[u8], count: usize) -> Vec<Option<Vec<u8>>> {
    let mut files = Vec::with_capacity(count);
    for _ in 0..count {
        let end = output
            .iter()
            .position(|&b| b == b'\n')
            .expect("a header line per request");
        let header = std::str::from_utf8(&output[..end]).expect("ascii header");
        output = &output[end + 1..];
        let fields: Vec<&str> = header.split(' ').collect();
        // `<rev>:<path> missing`, where the path may hold spaces; else `<oid> <type> <size>`.
        if !header.ends_with(" missing") && fields.len() == 3 {
            let size: usize = fields[2].parse().expect("object size");
            let content = output[..size].to_vec();
            output = &output[size + 1..];
            files.push((fields[1] == "blob").then_some(content));
        } else {
            files.push(None);
        }
    }
    files
}
