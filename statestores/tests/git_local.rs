//! The Git backend against bare repositories on this machine (`file://` URLs and plain paths),
//! checked with the `git` CLI rather than with the backend itself.

use bytes::Bytes;
use statestores::{Change, Error, Git, GitOptions, Key, StateStore, WriteInfo, WriteOutcome};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers

/// Runs `git args` in `dir` with the kit's hermetic git, file:// transports allowed, and returns
/// its stdout; panics with stderr on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "protocol.file.allow=always"];
    all.extend_from_slice(args);
    testkit::git(&all, dir)
}

fn key(path: &str) -> Key {
    Key::parse(path).expect("valid key")
}

fn put(path: &str, content: &str) -> Change {
    Change::Put(key(path), Bytes::from(content.to_owned()))
}

fn info(message: &str) -> WriteInfo {
    WriteInfo {
        message: message.to_string(),
        author_name: "kratix".to_string(),
        author_email: "kratix@example.com".to_string(),
    }
}

fn scratch() -> TempDir {
    testkit::scratch_dir("git-local-").expect("scratch folder")
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn open(url: &str, branch: &str) -> Git {
    Git::open(GitOptions::new(url, branch)).expect("open the store")
}

async fn write(store: &Git, changes: &[Change], message: &str) -> WriteOutcome {
    store
        .write(changes, &info(message))
        .await
        .expect("write succeeds")
}

/// Commits on `branch`, newest first, as `(sha, subject/body, author name, author email)`.
fn log(repo: &Path, branch: &str) -> Vec<(String, String, String, String)> {
    git(
        repo,
        &["log", "--format=%H%x1f%B%x1f%an%x1f%ae%x1e", branch],
    )
    .split('\x1e')
    .filter(|record| !record.trim().is_empty())
    .map(|record| {
        let fields: Vec<&str> = record.trim_start_matches('\n').split('\x1f').collect();
        (
            fields[0].to_string(),
            fields[1].trim_end().to_string(),
            fields[2].to_string(),
            fields[3].to_string(),
        )
    })
    .collect()
}

fn show(repo: &Path, rev_path: &str) -> String {
    git(repo, &["show", rev_path])
}

fn ls_tree(repo: &Path, rev: &str) -> Vec<String> {
    git(repo, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A bare repository created by the CLI with one commit holding `seed.txt` on `main`.
fn seeded_bare_repo(root: &Path) -> PathBuf {
    let bare = root.join("seeded.git");
    git(root, &["init", "--bare", "seeded.git"]);
    let work = root.join("seed-work");
    git(root, &["clone", &file_url(&bare), "seed-work"]);
    std::fs::write(work.join("seed.txt"), "seed\n").expect("write seed");
    git(&work, &["add", "seed.txt"]);
    git(&work, &["commit", "-m", "seed"]);
    git(&work, &["push", "origin", "HEAD:main"]);
    bare
}

// ---------------------------------------------------------------------------------------------
// The conformance suite, over file:// URLs

/// A store and the folder holding its repository, removed when the last handle goes.
#[derive(Debug)]
struct Scratch {
    store: Git,
    dir: Arc<TempDir>,
}

#[async_trait::async_trait]
impl StateStore for Scratch {
    fn kind(&self) -> &'static str {
        self.store.kind()
    }
    async fn write(
        &self,
        changes: &[Change],
        info: &WriteInfo,
    ) -> statestores::Result<WriteOutcome> {
        self.store.write(changes, info).await
    }
    async fn read(&self, key: &Key) -> statestores::Result<Option<Bytes>> {
        self.store.read(key).await
    }
    async fn list(&self, prefix: &Key) -> statestores::Result<Vec<Key>> {
        self.store.list(prefix).await
    }
    async fn check_access(&self) -> statestores::Result<()> {
        self.store.check_access().await
    }
    async fn snapshot(&self, prefix: &Key) -> statestores::Result<statestores::Snapshot> {
        self.store.snapshot(prefix).await
    }
}

// The conformance suite takes its stores as futures.
#[allow(clippy::unused_async)]
async fn fresh_store() -> Scratch {
    let dir = scratch();
    let url = file_url(&dir.path().join("store.git"));
    Scratch {
        store: open(&url, "main"),
        dir: Arc::new(dir),
    }
}

mod conformance {
    use super::*;

    statestores::conformance_suite!(fresh_store(), |first: &Scratch| {
        // Another handle on the same repository, as another process would have.
        let second = Scratch {
            store: Git::open(first.store.options().clone()).expect("second handle"),
            dir: Arc::clone(&first.dir),
        };
        async move { second }
    });
}

// ---------------------------------------------------------------------------------------------
// What the repository holds, seen with the git CLI

#[tokio::test]
async fn each_write_is_one_commit_with_the_message_and_author() {
    let dir = scratch();
    let repo = dir.path().join("r.git");
    let store = open(&file_url(&repo), "main");
    let message = "Update from: wp-a\n\nKratix-Promise: redis\nKratix-Pipeline: instance";
    let first = write(
        &store,
        &[put("w/a.yaml", "A\n"), put("w/sub/b.yaml", "B\n")],
        message,
    )
    .await;
    let second = write(
        &store,
        &[put("w/a.yaml", "A2\n"), Change::Delete(key("w/sub/b.yaml"))],
        "Delete from: wp-a",
    )
    .await;

    let commits = log(&repo, "main");
    assert_eq!(commits.len(), 2, "{commits:?}");
    let (newest, oldest) = (&commits[0], &commits[1]);
    assert_eq!(oldest.1, message);
    assert_eq!(
        (oldest.2.as_str(), oldest.3.as_str()),
        ("kratix", "kratix@example.com")
    );
    assert_eq!(newest.1, "Delete from: wp-a");
    let committer = git(&repo, &["log", "-1", "--format=%cn <%ce>", "main"]);
    assert_eq!(committer.trim(), "kratix <kratix@example.com>");

    assert_eq!(
        first.version.map(|v| v.0).as_deref(),
        Some(oldest.0.as_str())
    );
    assert_eq!(
        second.version.map(|v| v.0).as_deref(),
        Some(newest.0.as_str())
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), newest.0);
    assert_eq!(ls_tree(&repo, "main"), ["w/a.yaml"]);
    assert_eq!(show(&repo, "main:w/a.yaml"), "A2\n");
    assert_eq!(show(&repo, &format!("{}:w/sub/b.yaml", oldest.0)), "B\n");
}

#[tokio::test]
async fn nothing_changed_means_no_commit() {
    let dir = scratch();
    let repo = dir.path().join("r.git");
    let store = open(repo.to_str().expect("utf-8 path"), "main");
    write(&store, &[put("a", "1"), put("b", "2")], "first").await;
    let before = git(&repo, &["rev-parse", "main"]);

    let again = write(
        &store,
        &[put("a", "1"), put("b", "2"), Change::Delete(key("absent"))],
        "again",
    )
    .await;
    assert_eq!(again, WriteOutcome::default());
    store.check_access().await.expect("check_access");
    assert_eq!(git(&repo, &["rev-parse", "main"]), before);
    assert_eq!(log(&repo, "main").len(), 1);
    let refs = git(&repo, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(refs.trim(), "refs/heads/main", "no stray refs");
    let leftovers: Vec<_> = std::fs::read_dir(repo.join("refs"))
        .expect("refs folder")
        .filter_map(std::result::Result::ok)
        .filter(|e| e.path().is_file())
        .collect();
    assert!(leftovers.is_empty(), "check_access left {leftovers:?}");
}

#[tokio::test]
async fn an_external_commit_between_two_writes_survives() {
    let dir = scratch();
    let repo = seeded_bare_repo(dir.path());
    let url = file_url(&repo);
    let store = open(&url, "main");
    write(&store, &[put("ours/1.yaml", "one")], "ours 1").await;

    // Someone else clones, commits and pushes.
    git(dir.path(), &["clone", &url, "external"]);
    let work = dir.path().join("external");
    std::fs::write(work.join("theirs.txt"), "theirs\n").expect("write theirs");
    git(&work, &["add", "theirs.txt"]);
    git(&work, &["commit", "-m", "external change"]);
    git(&work, &["push", "origin", "HEAD:main"]);
    let external = git(&work, &["rev-parse", "HEAD"]).trim().to_string();

    let outcome = write(&store, &[put("ours/2.yaml", "two")], "ours 2").await;
    let tip = outcome.version.expect("a commit").0;
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), tip);
    assert_eq!(
        ls_tree(&repo, "main"),
        ["ours/1.yaml", "ours/2.yaml", "seed.txt", "theirs.txt"]
    );
    // Linear history that contains the external commit as the parent of ours: nothing forced.
    assert_eq!(git(&repo, &["rev-parse", "main^"]).trim(), external);
    assert!(git(&repo, &["rev-list", "--merges", "main"])
        .trim()
        .is_empty());
    let subjects: Vec<String> = log(&repo, "main").into_iter().map(|c| c.1).collect();
    assert_eq!(subjects, ["ours 2", "external change", "ours 1", "seed"]);
}

#[tokio::test]
async fn the_branch_is_re_applied_when_another_handle_moved_it() {
    // Two handles, many interleaved writes to one repository: every write lands, each as its
    // own commit, on one linear history.
    let dir = scratch();
    let repo = dir.path().join("r.git");
    let url = file_url(&repo);
    let one = open(&url, "main");
    let two = open(&url, "main");
    let writes = |store: Git, name: &'static str| async move {
        for i in 0..6 {
            write(
                &store,
                &[put(&format!("{name}/{i}"), name)],
                &format!("{name} {i}"),
            )
            .await;
        }
    };
    tokio::join!(writes(one, "one"), writes(two, "two"));
    assert_eq!(log(&repo, "main").len(), 12);
    assert_eq!(ls_tree(&repo, "main").len(), 12);
    assert!(git(&repo, &["rev-list", "--merges", "main"])
        .trim()
        .is_empty());
}

#[tokio::test]
async fn an_empty_repository_and_a_missing_branch_work() {
    let dir = scratch();
    // Empty, made by the CLI.
    git(dir.path(), &["init", "--bare", "empty.git"]);
    let empty = dir.path().join("empty.git");
    let store = open(&file_url(&empty), "main");
    assert_eq!(
        store.list(&Key::root()).await.expect("list"),
        Vec::<Key>::new()
    );
    assert_eq!(store.read(&key("a")).await.expect("read"), None);
    store.check_access().await.expect("check_access");
    write(&store, &[put("a", "1")], "first").await;
    assert_eq!(log(&empty, "main").len(), 1);

    // A branch that does not exist yet, next to one that does.
    let seeded = seeded_bare_repo(dir.path());
    let before = git(&seeded, &["rev-parse", "main"]);
    let feature = open(&file_url(&seeded), "feature/x");
    assert_eq!(
        feature.list(&Key::root()).await.expect("list"),
        Vec::<Key>::new()
    );
    write(&feature, &[put("f.yaml", "f")], "on feature").await;
    assert_eq!(ls_tree(&seeded, "feature/x"), ["f.yaml"]);
    assert_eq!(log(&seeded, "feature/x").len(), 1);
    assert_eq!(
        git(&seeded, &["rev-parse", "main"]),
        before,
        "main untouched"
    );
}

#[tokio::test]
async fn a_missing_local_repository_is_created_bare_on_the_branch() {
    let dir = scratch();
    let repo = dir.path().join("nested/new.git");
    let store = open(&file_url(&repo), "trunk");
    assert_eq!(
        git(&repo, &["rev-parse", "--is-bare-repository"]).trim(),
        "true"
    );
    assert_eq!(
        git(&repo, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/trunk"
    );
    write(&store, &[put("x", "y")], "first").await;
    // A clone checks the branch out, as Flux would see it.
    git(dir.path(), &["clone", &file_url(&repo), "clone"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("clone/x")).expect("cloned"),
        "y"
    );
}

#[tokio::test]
async fn three_thousand_files_make_one_commit() {
    let dir = scratch();
    let repo = dir.path().join("r.git");
    let store = open(&file_url(&repo), "main");
    let changes: Vec<Change> = (0..3000)
        .map(|i| {
            put(
                &format!("many/{:02}/{i:04}.yaml", i % 30),
                &format!("i: {i}\n"),
            )
        })
        .collect();
    let outcome = write(&store, &changes, "many").await;
    assert_eq!(outcome.written.len(), 3000);
    assert_eq!(git(&repo, &["rev-list", "--count", "main"]).trim(), "1");
    assert_eq!(ls_tree(&repo, "main").len(), 3000);
    assert_eq!(show(&repo, "main:many/07/0007.yaml"), "i: 7\n");

    // A small change afterwards is a small commit: one blob differs from its parent.
    write(&store, &[put("many/07/0007.yaml", "changed\n")], "one file").await;
    let diff = git(
        &repo,
        &["diff-tree", "-r", "--name-only", "--no-commit-id", "main"],
    );
    assert_eq!(diff.trim(), "many/07/0007.yaml");
}

#[tokio::test]
async fn a_folder_that_is_not_a_repository_is_unreachable() {
    let dir = scratch();
    let not_repo = dir.path().join("plain");
    std::fs::create_dir_all(&not_repo).expect("folder");
    std::fs::write(not_repo.join("file.txt"), "x").expect("file");
    let err = Git::open(GitOptions::new(file_url(&not_repo), "main")).expect_err("not a repo");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
}

#[tokio::test]
async fn a_folder_where_a_file_is_written_is_refused_and_nothing_is_committed() {
    let dir = scratch();
    let repo = dir.path().join("r.git");
    let store = open(&file_url(&repo), "main");
    write(&store, &[put("d/inside", "1")], "seed").await;
    let err = store
        .write(&[put("d", "would replace the folder")], &info("bad"))
        .await
        .expect_err("a file cannot replace a folder");
    assert!(matches!(err, Error::Backend { .. }), "{err:?}");
    assert_eq!(log(&repo, "main").len(), 1);
    assert_eq!(ls_tree(&repo, "main"), ["d/inside"]);
}
