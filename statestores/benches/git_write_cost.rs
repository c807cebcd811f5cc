//! What a Git write costs, as ratios measured in one run (no absolute thresholds: machines are
//! noisy). Run with `cargo bench -p statestores --bench git_write_cost`.
//!
//! - size ratio: a one-file write into a repository of 20,000 files against the same write into a
//!   repository of 200 files. The writer edits trees from the previous commit, so this should stay
//!   near 1: a write costs what the diff costs, not what the repository weighs.
//! - baseline ratio: our one-file write against what Kratix does for the same change (a clone with
//!   a work tree, `git add`, `git commit`, `git push`), on the 20,000-file repository.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{info, key, median};
use statestores::{Change, Git, GitOptions, StateStore};

const SMALL: usize = 200;
const LARGE: usize = 20_000;
const ROUNDS: usize = 15;

fn git(args: &[&str], dir: &Path) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .expect("git runs");
    assert!(
        status.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// A bare repository holding `files` files spread over folders, written by our own backend.
async fn seeded(root: &Path, name: &str, files: usize) -> Git {
    let path = root.join(name);
    let store = Git::open(GitOptions::new(path.display().to_string(), "main")).expect("open");
    let changes: Vec<Change> = (0..files)
        .map(|i| {
            Change::Put(
                key(&format!(
                    "dest/resources/ns/p/r{}/pipe/5058f/file-{i}.yaml",
                    i % 500
                )),
                Bytes::from(format!("kind: ConfigMap\nmetadata:\n  name: f{i}\n")),
            )
        })
        .collect();
    store.write(&changes, &info("bench")).await.expect("seed");
    store
}

async fn one_file_writes(store: &Git) -> Duration {
    let mut samples = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let change = Change::Put(
            key("dest/resources/ns/p/r1/pipe/5058f/changing.yaml"),
            Bytes::from(format!("round: {round}\n")),
        );
        let start = Instant::now();
        let outcome = store.write(&[change], &info("bench")).await.expect("write");
        samples.push(start.elapsed());
        assert!(outcome.version.is_some(), "every round changes the file");
    }
    median(samples)
}

/// Kratix's way: a work-tree clone, then add, commit and push of one file, each round.
fn kratix_like_writes(bare: &Path, scratch: &Path) -> Duration {
    let mut samples = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let clone = scratch.join(format!("clone-{round}"));
        let start = Instant::now();
        git(
            &[
                "clone",
                "-q",
                "--depth",
                "1",
                "-b",
                "main",
                &format!("file://{}", bare.display()),
                clone.to_str().expect("utf-8"),
            ],
            scratch,
        );
        let file = clone.join("dest/resources/ns/p/r1/pipe/5058f/changing.yaml");
        std::fs::write(&file, format!("baseline: {round}\n")).expect("write");
        git(&["add", "-A"], &clone);
        git(&["commit", "-q", "-m", "Update from: baseline"], &clone);
        git(&["push", "-q", "origin", "main"], &clone);
        samples.push(start.elapsed());
        std::fs::remove_dir_all(&clone).expect("clean up");
    }
    median(samples)
}

#[tokio::main]
async fn main() {
    let root = tempfile::tempdir().expect("tempdir");
    let small = seeded(root.path(), "small.git", SMALL).await;
    let large = seeded(root.path(), "large.git", LARGE).await;
    let small_t = one_file_writes(&small).await;
    let large_t = one_file_writes(&large).await;
    let baseline_t = kratix_like_writes(&root.path().join("large.git"), root.path());
    println!("## Local Git writer (repository on this machine)\n");
    println!(
        "One-file write, median of {ROUNDS}; the baseline is Kratix's way for the same change on \
         the large repository (a fresh shallow work-tree clone, add, commit, push).\n"
    );
    println!("| figure | measured | baseline | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| write into {LARGE} files vs into {SMALL} | {large_t:?} | {small_t:?} | **{:.2}** (flat is 1) |",
        large_t.as_secs_f64() / small_t.as_secs_f64()
    );
    println!(
        "| ours vs clone + add + commit + push, {LARGE} files | {large_t:?} | {baseline_t:?} | \
         **{:.0}×** faster |",
        baseline_t.as_secs_f64() / large_t.as_secs_f64()
    );
    println!();
}
