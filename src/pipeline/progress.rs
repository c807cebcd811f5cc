//! What a run says while it goes on — today, that an image is being pulled — so that the run's
//! status, and with it `apply`'s progress, can show it. A pull can take minutes on a slow
//! registry; without this the pipeline only looks stuck.

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// The sending half: cloned into the run, dropped when it ends. The default says nothing to
/// anyone (runs nobody watches, tests).
#[derive(Debug, Clone, Default)]
pub struct Progress(Option<UnboundedSender<Option<String>>>);

impl Progress {
    /// A progress and the receiver of what it says: `Some(message)` while something is under
    /// way, `None` once it is over.
    pub fn channel() -> (Self, UnboundedReceiver<Option<String>>) {
        let (tx, rx) = unbounded_channel();
        (Progress(Some(tx)), rx)
    }

    pub fn say(&self, message: String) {
        self.send(Some(message));
    }

    /// What was said is over.
    pub fn done(&self) {
        self.send(None);
    }

    fn send(&self, message: Option<String>) {
        if let Some(tx) = &self.0 {
            // The receiver goes only once the run's outcome is being recorded, when nothing
            // more is worth showing.
            let _ = tx.send(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_arrive_in_order_and_a_silent_progress_sends_nothing() {
        let (progress, mut rx) = Progress::channel();
        progress.say("pulling image a".into());
        progress.done();
        drop(progress);
        assert_eq!(rx.try_recv().ok(), Some(Some("pulling image a".into())));
        assert_eq!(rx.try_recv().ok(), Some(None));
        assert!(rx.try_recv().is_err());
        Progress::default().say("nobody hears this".into());
    }
}
