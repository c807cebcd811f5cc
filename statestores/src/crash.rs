//! Crash points: places where the crash-safety tests kill the process, to prove that a crash at
//! exactly that moment loses nothing. They exist only in builds with the `failpoints` feature;
//! elsewhere [`crash_point`] does nothing.
//!
//! `KRATIX_CRASH_AT=<name>[:<n>]` kills the process with SIGKILL (no clean-up, as a power cut or
//! the OOM killer would) the `n`th time (default: the first) it passes the crash point `name`.

/// Names a moment at which the process may be killed for a test.
pub fn crash_point(name: &str) {
    #[cfg(feature = "failpoints")]
    armed::pass(name);
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}

#[cfg(feature = "failpoints")]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// The crash point and on which pass to crash, read once.
    fn target() -> Option<&'static (String, u64)> {
        static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
        TARGET
            .get_or_init(|| {
                let value = std::env::var("KRATIX_CRASH_AT").ok()?;
                Some(match value.split_once(':') {
                    Some((name, n)) => (name.to_string(), n.parse().unwrap_or(1)),
                    None => (value, 1),
                })
            })
            .as_ref()
    }

    static PASSES: AtomicU64 = AtomicU64::new(0);

    pub(super) fn pass(name: &str) {
        let Some((wanted, nth)) = target() else {
            return;
        };
        if wanted == name && PASSES.fetch_add(1, Ordering::SeqCst) + 1 == *nth {
            eprintln!("crash point {name}: killing the process");
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        }
    }
}
