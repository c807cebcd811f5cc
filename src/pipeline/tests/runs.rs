//! How a run goes: containers in order, a failing one, the timeout, a dropped run.

use super::*;

#[tokio::test]
async fn containers_run_in_order_and_share_the_output() {
    for mode in MODES {
        let containers = ["first", "second", "third"]
            .iter()
            .map(|name| {
                script(
                    name,
                    &format!("echo {name} >> \"$KRATIX_OUTPUT_DIR/order.txt\"; echo log-of-{name}; echo err-of-{name} >&2"),
                )
            })
            .collect();
        let (dir, outcome) = run_in(mode, containers).await;
        assert_eq!(
            outcome.result,
            RunResult::Succeeded,
            "{mode:?}: {}",
            outcome.logs
        );
        assert_eq!(
            file(&outcome, "order.txt"),
            "first\nsecond\nthird\n",
            "{mode:?}"
        );
        assert_eq!(
            outcome.logs,
            "== container first ==\nlog-of-first\nerr-of-first\n\
             == container second ==\nlog-of-second\nerr-of-second\n\
             == container third ==\nlog-of-third\nerr-of-third\n",
            "{mode:?}"
        );
        let saved = std::fs::read_to_string(dir.path().join(LOGS_FILE)).expect("logs.txt");
        assert_eq!(saved, outcome.logs);
    }
}

#[tokio::test]
async fn a_failing_container_stops_the_run_with_its_exit_code() {
    for mode in MODES {
        let (dir, outcome) = run_in(
            mode,
            vec![
                script("ok", "echo one > \"$KRATIX_OUTPUT_DIR/one\""),
                script("broken", "echo about to fail; exit 3"),
                script("never", "echo three > \"$KRATIX_OUTPUT_DIR/three\""),
            ],
        )
        .await;
        assert_failed(&outcome, "broken", Some(3), "\"broken\" exited with code 3");
        assert!(outcome.logs.contains("about to fail"), "{mode:?}");
        assert!(!outcome.logs.contains("== container never =="), "{mode:?}");
        assert!(dir.path().join("output/one").exists(), "{mode:?}");
        assert!(
            !dir.path().join("output/three").exists(),
            "{mode:?}: later container ran"
        );
    }
}

#[tokio::test]
async fn a_run_past_its_timeout_is_killed() {
    for mode in MODES {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut req = request(
            dir.path(),
            mode,
            vec![
                script("quick", "true"),
                script(
                    "slow",
                    "sleep 600 & echo $! > \"$KRATIX_OUTPUT_DIR/pid\"; echo started; wait",
                ),
                script("never", "echo x > \"$KRATIX_OUTPUT_DIR/never\""),
            ],
        );
        req.timeout = Duration::from_secs(2);
        let outcome = run(req).await.expect("run");
        assert_eq!(
            outcome.result,
            RunResult::TimedOut {
                container: "slow".into()
            },
            "{mode:?}: {}",
            outcome.logs
        );
        assert!(
            outcome.logs.contains("started"),
            "{mode:?}: {}",
            outcome.logs
        );
        assert!(!dir.path().join("output/never").exists());
        if mode == Isolation::Process {
            // The background sleep was in the container's process group and must be gone.
            let pid = std::fs::read_to_string(dir.path().join("output/pid")).expect("pid");
            assert!(
                !process_is_running(pid.trim()),
                "background child {pid} survived"
            );
        }
    }
}

/// Alive and not a zombie; polls because SIGKILL delivery is asynchronous.
fn process_is_running(pid: &str) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                if state.starts_with('Z') || state.starts_with('X') {
                    return false;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

#[tokio::test]
async fn dropping_a_run_kills_its_containers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = request(
        dir.path(),
        Isolation::Process,
        vec![script(
            "slow",
            "sleep 600 & echo $! > \"$TMPDIR/pid\" && mv \"$TMPDIR/pid\" \"$KRATIX_OUTPUT_DIR/pid\"; wait",
        )],
    );
    let pid_path = dir.path().join("output/pid");
    let mut running = Box::pin(run(req));
    let pid_written = async {
        while !pid_path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        finished = &mut running => panic!("the run finished: {finished:?}"),
        waited = tokio::time::timeout(Duration::from_secs(60), pid_written) => {
            waited.expect("the container starts within a minute");
        }
    }
    drop(running);
    let pid = std::fs::read_to_string(&pid_path).expect("pid");
    assert!(
        !process_is_running(pid.trim()),
        "background child {pid} survived"
    );
}
