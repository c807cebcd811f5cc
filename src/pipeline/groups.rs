//! The process groups a run's containers were started in, recorded in the run's folder as each
//! container starts. Plain processes outlive a crash of the process that started them (a sandbox
//! dies with its parent, its container processes with it); whoever recovers the run reads the
//! record and kills what is left, before the run's folder is reused.
//!
//! A line is `<boot id> <process group id>`. Process group ids are only meaningful during the boot
//! that issued them, so lines of another boot are ignored. Within one boot, the kernel does not hand
//! out an id that is still in use as a group id, so while any process of a recorded group lives,
//! the id names that group and nothing else.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The record inside a run's folder.
pub(crate) const RECORD_FILE: &str = "process-groups";

const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot record process group {group} in {path}")]
    Record {
        group: i32,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// This boot's id; empty where `/proc` does not say (the record then matches only itself).
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string(BOOT_ID)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Appends `group` to the record of the run whose folder is `work_dir`.
pub(crate) fn record(work_dir: &Path, group: i32) -> Result<(), Error> {
    let path = work_dir.join(RECORD_FILE);
    let line = format!("{} {group}\n", boot_id());
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|source| Error::Record {
            group,
            path: path.clone(),
            source,
        })
}

/// The groups of `record` that belong to the boot `boot`; malformed lines are skipped.
pub(crate) fn groups_of_boot(record: &str, boot: &str) -> Vec<i32> {
    record
        .lines()
        .filter_map(|line| {
            let (line_boot, group) = line.trim().split_once(' ')?;
            let group: i32 = group.trim().parse().ok()?;
            // 0 and 1 would signal our own group or init: never a container's.
            (line_boot == boot && group > 1).then_some(group)
        })
        .collect()
}

/// Kills every recorded group of the run whose folder is `work_dir` that is still alive, and
/// returns those it signalled.
pub(crate) fn kill_recorded(work_dir: &Path) -> Vec<i32> {
    let Ok(text) = std::fs::read_to_string(work_dir.join(RECORD_FILE)) else {
        return Vec::new();
    };
    groups_of_boot(&text, &boot_id())
        .into_iter()
        .filter(|group| {
            nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(*group),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn only_groups_of_this_boot_count() {
        let cases: &[(&str, &str, &[i32])] = &[
            ("", "b1", &[]),
            ("b1 100\n", "b1", &[100]),
            ("b1 100\nb2 200\nb1 300\n", "b1", &[100, 300]),
            ("b2 200\n", "b1", &[]),
            ("b1 x\nb1\n\nb1 -5\nb1 0\nb1 1\nb1 7", "b1", &[7]),
            ("b1 100 \n", "b1", &[100]),
        ];
        for (record, boot, want) in cases {
            assert_eq!(groups_of_boot(record, boot), *want, "{record:?}");
        }
    }

    #[test]
    fn a_recorded_group_left_running_is_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("sleep starts");
        let group = i32::try_from(child.id()).expect("pid fits");
        record(dir.path(), group).expect("recorded");
        assert_eq!(kill_recorded(dir.path()), vec![group]);
        let status = child.wait().expect("reaped");
        assert!(!status.success(), "killed, not exited: {status:?}");
        assert!(
            kill_recorded(dir.path()).is_empty(),
            "nothing left to kill once the group is gone"
        );
    }
}
