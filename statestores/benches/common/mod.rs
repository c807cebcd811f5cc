//! Helpers every bench of this crate uses.

use std::time::Duration;

use statestores::{Key, WriteInfo};

/// The author and message of a bench's writes.
pub(crate) fn info(who: &str) -> WriteInfo {
    WriteInfo {
        message: format!("Update from: {who}\n"),
        author_name: "bench".into(),
        author_email: "bench@example.com".into(),
    }
}

pub(crate) fn key(path: &str) -> Key {
    Key::parse(path).expect("valid key")
}

pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
