//! Child processes that cannot outlive the test: each runs in its own process group, and the
//! whole group is killed and reaped on drop (git daemon and sshd start children of their own).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

pub(crate) struct ProcessGroup {
    child: Child,
    /// How long drop lets the leader finish on its own before killing the group. Letting it
    /// finish lets it reap its own children; killed, they would linger as zombies.
    grace: Duration,
}

impl ProcessGroup {
    pub(crate) fn spawn(command: &mut Command, grace: Duration) -> std::io::Result<Self> {
        let child = command.process_group(0).spawn()?;
        Ok(Self { child, grace })
    }

    /// True once the leader has exited (and is reaped).
    pub(crate) fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + self.grace;
        while !self.has_exited() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // The child leads its group, so the group id is its process id (which always fits an
        // i32 on Linux). Killing fails only when no member is left, which is what we want anyway.
        if let Ok(group) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}
