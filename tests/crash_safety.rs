//! Crash safety: `serve` is killed (SIGKILL, or its own crash points, which kill it the same way)
//! at seeded random moments of three-pipeline workflows writing to a Git server on loopback:
//! after random delays, while a pipeline runs, between a commit and its push, during a push, and
//! after a pipeline's Work is stored but before its run is marked finished. After each crash
//! `serve` starts again (alternating sandboxed and plain-process pipelines). In the end every
//! request has settled for its latest spec, no two runs of one request overlapped, and the
//! repository holds exactly the tree that a clean run of the same requests writes.
//!
//! Reproducible: `KRATIX_CRASH_SEED` (printed by the test) and `KRATIX_CRASH_TRIALS` (default 30;
//! 150 with `KRATIX_LONG_TESTS=1`). Crash points exist only in builds with the `failpoints`
//! feature, which the test command enables (`cargo test --all-features`); without it the test
//! only uses SIGKILL.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::things::{self, assert_never_overlapped, reconciled, runs};
use support::{git_destination_yaml, Kratix};
use testkit::git;

const REQUESTS: [&str; 3] = ["r0", "r1", "r2"];
/// How long a request may take to settle, or a crash point to be reached, before the test fails:
/// a guard against a hang, not a speed check. The README's test command runs this beside other
/// tests and builds on a 2-core machine, where one trial has taken over 100 s.
const PATIENCE: Duration = Duration::from_secs(300);

/// splitmix64: small, seedable, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Where a trial's crash happens.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// SIGKILL this long after the change is applied.
    After(Duration),
    /// SIGKILL this long after one of the request's pipelines is seen running.
    WhileRunning(Duration),
    /// `serve` kills itself the `n`th time it passes the crash point.
    CrashPoint(&'static str, u64),
}

const CRASH_POINTS: [&str; 3] = ["git-after-commit", "git-in-push", "run-before-finish"];

fn pick_moment(rng: &mut Rng) -> Moment {
    let crash_points_built = cfg!(feature = "failpoints");
    let kinds = if crash_points_built { 5 } else { 2 };
    match rng.below(kinds) {
        0 => Moment::After(Duration::from_millis(rng.below(1500))),
        1 => Moment::WhileRunning(Duration::from_millis(rng.below(300))),
        n => Moment::CrashPoint(
            CRASH_POINTS[usize::try_from(n - 2).expect("small")],
            1 + rng.below(3),
        ),
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn platform(k: &Kratix, url: &str) {
    k.apply_yaml(
        &git_destination_yaml(url, "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    k.apply_yaml(&things::promise(&["a", "b", "c"]), &["--timeout", "60"])
        .assert_ok();
}

/// Every path and blob of the branch `main`.
fn tree(bare: &Path) -> String {
    git(
        &[
            "--git-dir",
            &bare.display().to_string(),
            "ls-tree",
            "-r",
            "main",
        ],
        bare,
    )
}

/// What a failed wait shows: the request as stored, its runs, and the end of `serve`'s log, so
/// that a timeout on a loaded machine says where the workflow stood.
fn state_of(k: &Kratix, name: &str) -> String {
    let request = k.get_json(things::KIND, name, None).map_or_else(
        || "(not found)".to_string(),
        |r| serde_json::to_string_pretty(&r).unwrap_or_default(),
    );
    let runs: Vec<String> = runs(k, name)
        .iter()
        .map(|r| {
            format!(
                "#{} {} {} {} {:?}..{:?} {}",
                r.sequence, r.pipeline, r.action, r.phase, r.start, r.completion, r.message
            )
        })
        .collect();
    let log = k.serve_log();
    let tail: Vec<&str> = log.lines().rev().take(60).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!(
        "request {name}:\n{request}\nits runs:\n{}\nthe end of serve's log:\n{}",
        runs.join("\n"),
        tail.join("\n")
    )
}

/// Waits until `name` has settled for `size`, or fails showing where it stood.
fn settled_at(k: &Kratix, name: &str, size: i64) -> serde_json::Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(r) = reconciled(k, name).filter(|r| r["spec"]["size"] == size) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {name} to settle\n{}",
            state_of(k, name)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn serve_has_exited(k: &mut Kratix) -> bool {
    k.serve_child()
        .is_none_or(|child| matches!(child.try_wait(), Ok(Some(_))))
}

#[test]
fn crashes_at_random_moments_lose_nothing_and_never_overlap_runs() {
    let seed = env_number("KRATIX_CRASH_SEED").unwrap_or(0x2026_1202);
    let trials = env_number("KRATIX_CRASH_TRIALS").unwrap_or(
        if std::env::var_os("KRATIX_LONG_TESTS").is_some() {
            150
        } else {
            30
        },
    );
    eprintln!("KRATIX_CRASH_SEED={seed} KRATIX_CRASH_TRIALS={trials}");
    let mut rng = Rng(seed);

    let daemon = testkit::GitDaemon::start().expect("git daemon on loopback");
    let bare = daemon.bare_repo("state.git").expect("a bare repository");
    let mut k = Kratix::new();
    k.start_serve();
    platform(&k, &daemon.url("state.git"));
    let mut latest = [1i64; 3];
    for name in REQUESTS {
        k.apply_yaml(&things::request(name, 1), &["--timeout", "60"])
            .assert_ok();
    }

    let mut crashed_at: std::collections::BTreeMap<String, u32> = Default::default();
    for trial in 0..trials {
        let target = usize::try_from(rng.below(3)).expect("small");
        let size = i64::try_from(trial).expect("small") + 2;
        latest[target] = size;
        let isolation = if rng.below(2) == 0 { "process" } else { "auto" };
        let moment = pick_moment(&mut rng);
        let change = things::request(REQUESTS[target], size);
        let label = match moment {
            Moment::After(delay) => {
                k.apply_yaml(&change, &["--no-wait"]).assert_ok();
                std::thread::sleep(delay);
                k.kill_serve();
                "random delay".to_string()
            }
            Moment::WhileRunning(delay) => {
                k.apply_yaml(&change, &["--no-wait"]).assert_ok();
                let deadline = Instant::now() + Duration::from_secs(30);
                while Instant::now() < deadline
                    && !runs(&k, REQUESTS[target])
                        .iter()
                        .any(|r| r.phase == "Running")
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                std::thread::sleep(delay);
                k.kill_serve();
                "while a pipeline runs".to_string()
            }
            Moment::CrashPoint(point, nth) => {
                k.kill_serve();
                k.start_serve_with(&[
                    ("KRATIX_CRASH_AT", &format!("{point}:{nth}")),
                    ("KRATIX_ISOLATION", isolation),
                ]);
                k.apply_yaml(&change, &["--no-wait"]).assert_ok();
                let deadline = Instant::now() + PATIENCE;
                let mut settled = false;
                while !serve_has_exited(&mut k) && !settled {
                    assert!(
                        Instant::now() < deadline,
                        "trial {trial}: neither crashed at {point} nor settled\n{}",
                        state_of(&k, REQUESTS[target])
                    );
                    std::thread::sleep(Duration::from_millis(50));
                    settled =
                        reconciled(&k, REQUESTS[target]).is_some_and(|r| r["spec"]["size"] == size);
                }
                let crashed = serve_has_exited(&mut k);
                k.kill_serve();
                if crashed {
                    format!("crash point {point}")
                } else {
                    format!("crash point {point} (not reached)")
                }
            }
        };
        *crashed_at.entry(label).or_default() += 1;
        k.start_serve_with(&[("KRATIX_ISOLATION", isolation)]);
    }

    for (name, size) in REQUESTS.iter().zip(latest) {
        let settled = settled_at(&k, name, size);
        assert_eq!(settled["spec"]["size"], size);
        let runs = runs(&k, name);
        assert_never_overlapped(&runs);
    }
    let interrupted = k.serve_log().matches("run was interrupted").count();

    // A clean run of the final requests, with no crash, into a second repository.
    let clean_bare = daemon.bare_repo("clean.git").expect("a bare repository");
    let clean = Kratix::new();
    platform(&clean, &daemon.url("clean.git"));
    for (name, size) in REQUESTS.iter().zip(latest) {
        clean
            .apply_yaml(&things::request(name, size), &["--timeout", "60"])
            .assert_ok();
    }
    let crashed_tree = tree(&bare);
    assert!(
        crashed_tree.contains("worker-1/resources/default/thing/r0/c/"),
        "the files are there: {crashed_tree}"
    );
    assert_eq!(
        crashed_tree,
        tree(&clean_bare),
        "the crashed platform's tree equals a clean run's"
    );
    let fsck = testkit::hermetic_git_command(&bare)
        .args(["fsck", "--strict"])
        .output()
        .expect("git fsck runs");
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    eprintln!(
        "seed {seed}: {trials} trials, crashes {crashed_at:?}, runs found interrupted and run again: {interrupted}, writes lost: 0"
    );
}
