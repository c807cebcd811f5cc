//! What a write into a remote Git repository costs, served by `git daemon` on loopback, as
//! ratios against baselines measured in the same run. Run with
//! `cargo bench -p statestores --bench remote_git_write [-- --quick]`; prints a Markdown section.
//!
//! - Size: one write of 10 changed files into repositories of 1,000 / 10,000 / 100,000 files
//!   (`--quick`: 1,000 / 10,000), through a warm cache. Ours should stay flat: the write costs what
//!   the change costs.
//! - Baseline: Kratix's strategy for the same write (a cached work-tree clone: fetch,
//!   `reset --hard`, `clean -ffdx`, write the files, `add -A`, commit, push) with the git CLI.
//! - Shared pushes: many writers finishing at once, each its own commit; pushes are counted by the
//!   server's reflog and commits by `rev-list`, not by the writer.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{info, key, median};
use statestores::{Change, Git, GitOptions, StateStore};
use testkit::{git, GitDaemon};

const CHANGED: usize = 10;
const ROUNDS: usize = 9;
const CONCURRENT_WRITERS: usize = 32;

/// Where file `i` of a seeded repository lives: 100 files per folder, like a Destination with
/// many resources of a few files each.
fn seeded_path(i: usize) -> String {
    format!("dest/resources/ns/p/r{}/pipe/5058f/file-{i}.yaml", i / 100)
}

/// A bare repository served by `daemon` holding `files` files, written in place by our backend.
async fn seeded(daemon: &GitDaemon, name: &str, files: usize) {
    let path = daemon.bare_repo(name).expect("bare repository");
    // The server's reflog counts pushes (a bare repository keeps none by default).
    git(&["config", "core.logAllRefUpdates", "always"], &path);
    let store = Git::open(GitOptions::new(path.display().to_string(), "main")).expect("open");
    let changes: Vec<Change> = (0..files)
        .map(|i| {
            Change::Put(
                key(&seeded_path(i)),
                Bytes::from(format!("kind: ConfigMap\nmetadata:\n  name: f{i}\n")),
            )
        })
        .collect();
    store.write(&changes, &info("seed")).await.expect("seed");
}

/// The `CHANGED` files a round rewrites, spread over folders as a pipeline's output would be.
fn round_files(round: usize, files: usize) -> Vec<(String, String)> {
    (0..CHANGED)
        .map(|i| {
            let at = (i * files / CHANGED + round) % files;
            (seeded_path(at), format!("round: {round}\nfile: {i}\n"))
        })
        .collect()
}

/// Our writer through a warm cache (the first write fills it and is not counted).
async fn ours(url: &str, cache: &Path, files: usize) -> Duration {
    let mut options = GitOptions::new(url, "main");
    options.cache_dir = Some(cache.to_path_buf());
    let store = Git::open(options).expect("open");
    let mut samples = Vec::with_capacity(ROUNDS);
    for round in 0..=ROUNDS {
        let changes: Vec<Change> = round_files(round, files)
            .into_iter()
            .map(|(path, content)| Change::Put(key(&path), Bytes::from(content)))
            .collect();
        let start = Instant::now();
        let outcome = store.write(&changes, &info("ours")).await.expect("write");
        if round > 0 {
            samples.push(start.elapsed());
        }
        assert_eq!(
            outcome.written.len(),
            CHANGED,
            "every round changes every file"
        );
    }
    median(samples)
}

/// Kratix's strategy with the git CLI: one work-tree clone kept between writes (not counted),
/// then per write fetch, reset, clean, write, add, commit and push. Returns the whole write and
/// its push alone: the push is what the server costs, which no writer can avoid.
fn kratix(url: &str, scratch: &Path, files: usize) -> (Duration, Duration) {
    let clone = scratch.join("kratix-clone");
    git(
        &[
            "clone",
            "-q",
            "-b",
            "main",
            url,
            clone.to_str().expect("utf-8"),
        ],
        scratch,
    );
    let mut samples = Vec::with_capacity(ROUNDS);
    let mut pushes = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let start = Instant::now();
        git(&["fetch", "-q", "origin", "main"], &clone);
        git(&["reset", "-q", "--hard", "origin/main"], &clone);
        git(&["clean", "-q", "-ffdx"], &clone);
        for (path, content) in round_files(round + 1_000, files) {
            std::fs::write(clone.join(path), content).expect("write a file");
        }
        git(&["add", "-A"], &clone);
        git(&["commit", "-q", "-m", "Update from: kratix"], &clone);
        let push = Instant::now();
        git(&["push", "-q", "origin", "HEAD:main"], &clone);
        pushes.push(push.elapsed());
        samples.push(start.elapsed());
    }
    (median(samples), median(pushes))
}

/// Pushes the server's branch took, from its reflog, and commits on it.
fn server_counts(repo: &Path) -> (usize, usize) {
    let pushes = git(&["reflog", "show", "--format=%H", "refs/heads/main"], repo)
        .lines()
        .count();
    let commits: usize = git(&["rev-list", "--count", "main"], repo)
        .trim()
        .parse()
        .expect("a count");
    (pushes, commits)
}

/// `CONCURRENT_WRITERS` writes of different files started at once on one handle.
async fn shared_pushes(daemon: &GitDaemon, cache: &Path) -> (usize, usize, Duration) {
    seeded(daemon, "shared.git", 1_000).await;
    let repo = daemon.root().join("shared.git");
    let mut options = GitOptions::new(daemon.url("shared.git"), "main");
    options.cache_dir = Some(cache.to_path_buf());
    let store = Arc::new(Git::open(options).expect("open"));
    // Warm the cache, outside the counts.
    store
        .write(
            &[Change::Put(key("warm.yaml"), Bytes::from_static(b"w"))],
            &info("warm"),
        )
        .await
        .expect("warm");
    let (pushes_before, commits_before) = server_counts(&repo);
    let start = Instant::now();
    let writers: Vec<_> = (0..CONCURRENT_WRITERS)
        .map(|w| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let changes = vec![Change::Put(
                    key(&format!("dest/resources/ns/p/w{w}/pipe/out.yaml")),
                    Bytes::from(format!("writer: {w}\n")),
                )];
                store.write(&changes, &info(&format!("writer {w}"))).await
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("joined").expect("write");
    }
    let elapsed = start.elapsed();
    let (pushes, commits) = server_counts(&repo);
    (pushes - pushes_before, commits - commits_before, elapsed)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    let daemon = GitDaemon::start().expect("git daemon");
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut rows = Vec::new();
    for &files in sizes {
        let name = format!("r{files}.git");
        seeded(&daemon, &name, files).await;
        let url = daemon.url(&name);
        let cache = scratch.path().join(format!("cache-{files}"));
        let ours_t = ours(&url, &cache, files).await;
        let work = scratch.path().join(format!("kratix-{files}"));
        std::fs::create_dir_all(&work).expect("scratch");
        let (kratix_t, push_t) = kratix(&url, &work, files);
        rows.push((files, ours_t, kratix_t, push_t));
    }
    let (pushes, commits, shared_t) =
        shared_pushes(&daemon, &scratch.path().join("cache-shared")).await;

    let (_, first, _, _) = rows[0];
    let (last_files, last, last_kratix, _) = rows[rows.len() - 1];
    println!("## Remote Git writer (git daemon on loopback)\n");
    println!(
        "One write of {CHANGED} changed files, median of {ROUNDS} writes per size, warm cache.\n"
    );
    println!(
        "| files in repository | ours | Kratix's strategy | its `git push` alone | \
         Kratix ÷ ours | ours ÷ `git push` | ours ÷ ours at {} |",
        rows[0].0
    );
    println!("|---|---|---|---|---|---|---|");
    for (files, ours_t, kratix_t, push_t) in &rows {
        println!(
            "| {files} | {} | {} | {} | {:.1}× | {:.2} | {:.2} |",
            ms(*ours_t),
            ms(*kratix_t),
            ms(*push_t),
            kratix_t.as_secs_f64() / ours_t.as_secs_f64(),
            ours_t.as_secs_f64() / push_t.as_secs_f64(),
            ours_t.as_secs_f64() / first.as_secs_f64()
        );
    }
    println!();
    println!(
        "- size ratio (ours at {last_files} ÷ ours at {}): **{:.2}** (target ≤ 1.3)",
        rows[0].0,
        last.as_secs_f64() / first.as_secs_f64()
    );
    println!(
        "- speed-up against Kratix's strategy at {last_files}: **{:.1}×** (target ≥ 20×)",
        last_kratix.as_secs_f64() / last.as_secs_f64()
    );
    println!(
        "- Kratix's write step alone at {} files: {} (the floor for one update end to end)",
        rows[0].0,
        ms(rows[0].2)
    );
    println!(
        "- shared pushes: {CONCURRENT_WRITERS} writers at once made {commits} commits in \
         {pushes} pushes: **{:.1} commits per push** ({} in all, {} per write)",
        commits as f64 / pushes.max(1) as f64,
        ms(shared_t),
        ms(shared_t / u32::try_from(CONCURRENT_WRITERS).unwrap_or(u32::MAX))
    );
    println!();
}
