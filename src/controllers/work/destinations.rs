//! The Destinations the scheduler chooses from, kept between reconciles: every Work's schedule
//! would otherwise list every Destination, several times per pipeline run. Forgotten whenever a
//! Destination changes; a listing under way when one changes is not kept (it may predate the
//! change).

use std::sync::{Arc, Mutex, PoisonError};

use crate::api::Object;
use crate::controllers::{Error, Runtime};
use crate::platform::builtin;
use crate::store::Selector;

#[derive(Debug, Default)]
pub(crate) struct Destinations {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Bumped by every change of a Destination.
    epoch: u64,
    listed: Option<Arc<Vec<Object>>>,
}

impl Destinations {
    /// Every Destination, as listed since the last change of one (listed now otherwise).
    pub(crate) async fn all(&self, rt: &Runtime) -> Result<Arc<Vec<Object>>, Error> {
        let epoch = {
            let kept = self.lock();
            if let Some(listed) = &kept.listed {
                return Ok(listed.clone());
            }
            kept.epoch
        };
        let listed = Arc::new(
            rt.cp
                .list(
                    &builtin(crate::api::Builtin::Destination),
                    None,
                    &Selector::everything(),
                )
                .await?,
        );
        let mut kept = self.lock();
        if keeps(kept.epoch, epoch) {
            kept.listed = Some(listed.clone());
        }
        Ok(listed)
    }

    /// A Destination changed: what is kept no longer holds.
    pub(crate) fn forget(&self) {
        let mut kept = self.lock();
        kept.epoch += 1;
        kept.listed = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A listing started at epoch `started` is kept only if no Destination changed since.
fn keeps(now: u64, started: u64) -> bool {
    now == started
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_kept_only_when_nothing_changed_meanwhile() {
        let cases = [(0, 0, true), (1, 0, false), (5, 5, true), (6, 5, false)];
        for (now, started, want) in cases {
            assert_eq!(keeps(now, started), want, "now {now}, started {started}");
        }
    }
}
