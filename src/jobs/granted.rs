//! The pipeline rights this controller applied lately. Every run applies its pipeline's rights
//! before its Job (seven server-side applies for a pipeline without permissions, one after
//! another), and every request of a Promise in a namespace shares them: of many runs starting
//! at once, all but the first would write the same objects again. A run skips the applies when
//! the same rights (the same objects, field for field) were applied less than [`FRESH_FOR`]
//! ago and this controller deleted no rights since; runs with the same rights that start while
//! they are applied wait for that one apply instead of making their own.
//!
//! The controller deletes rights only when it cleans up old versions after a run and in sweeps,
//! which forget everything here. [`FRESH_FOR`] bounds how long rights deleted by someone else (by
//! hand) stay missing for the runs that skip them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::rbac::Grants;

/// How long rights applied by one run are taken as present by the next ones.
pub(crate) const FRESH_FOR: Duration = Duration::from_secs(30);

/// Whether rights applied at `applied` (none: never) may be taken as present at `now`.
pub(crate) fn fresh(applied: Option<Instant>, now: Instant, fresh_for: Duration) -> bool {
    applied.is_some_and(|at| now.saturating_duration_since(at) < fresh_for)
}

/// When each set of rights was last applied, by content.
type Slot = Arc<tokio::sync::Mutex<Option<Instant>>>;

#[derive(Debug, Clone, Default)]
pub(crate) struct Granted {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Granted {
    /// Applies `grants` with `apply` unless they were applied lately (see the module).
    pub(crate) async fn ensure<E, F, Fut>(&self, grants: &Grants, apply: F) -> Result<(), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(), E>>,
    {
        let slot = {
            let mut slots = self.lock();
            let now = Instant::now();
            // Forget what is stale and not being applied, so that the map stays small.
            slots.retain(|_, slot| {
                slot.try_lock()
                    .map_or(true, |applied| fresh(*applied, now, FRESH_FOR))
            });
            slots.entry(key(grants)).or_default().clone()
        };
        let mut applied = slot.lock().await;
        let began = Instant::now();
        if fresh(*applied, began, FRESH_FOR) {
            return Ok(());
        }
        apply().await?;
        // From when the apply began: anything deleted after that is not vouched for.
        *applied = Some(began);
        Ok(())
    }

    /// Forgets every apply: rights were deleted, the next runs apply theirs again.
    pub(crate) fn forget_all(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        // A panic while holding it leaves only applies behind, which stay usable.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The rights' content, as one string: equal rights, equal keys.
fn key(grants: &Grants) -> String {
    let parts = serde_json::json!([
        grants.service_account,
        grants.roles,
        grants.role_bindings,
        grants.cluster_roles,
        grants.cluster_role_bindings,
    ]);
    parts.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn rights_are_taken_as_present_for_a_while_after_their_apply() {
        let now = Instant::now();
        let ago = |s| now.checked_sub(Duration::from_secs(s));
        let cases = [
            (None, false),
            (ago(0), true),
            (ago(29), true),
            (ago(30), false),
            (ago(300), false),
            // A clock read before `applied` (another thread's later apply): present.
            (Some(now + Duration::from_secs(1)), true),
        ];
        for (applied, want) in cases {
            assert_eq!(fresh(applied, now, FRESH_FOR), want, "{applied:?}");
        }
    }

    fn grants(account: &str) -> Grants {
        let mut g = Grants::default();
        g.service_account.metadata.name = Some(account.into());
        g
    }

    #[tokio::test]
    async fn equal_rights_are_applied_once_until_forgotten() {
        let granted = Granted::default();
        let applies = AtomicUsize::new(0);
        let apply = || async {
            applies.fetch_add(1, Ordering::SeqCst);
            Ok::<(), ()>(())
        };
        granted.ensure(&grants("a"), apply).await.expect("apply");
        granted.ensure(&grants("a"), apply).await.expect("apply");
        assert_eq!(applies.load(Ordering::SeqCst), 1, "the same rights again");
        granted.ensure(&grants("b"), apply).await.expect("apply");
        assert_eq!(applies.load(Ordering::SeqCst), 2, "other rights");
        granted.forget_all();
        granted.ensure(&grants("a"), apply).await.expect("apply");
        assert_eq!(
            applies.load(Ordering::SeqCst),
            3,
            "after rights were deleted"
        );
    }

    #[tokio::test]
    async fn a_failed_apply_is_not_remembered() {
        let granted = Granted::default();
        let failed = granted
            .ensure(&grants("a"), || async { Err("refused") })
            .await;
        assert_eq!(failed, Err("refused"));
        let applies = AtomicUsize::new(0);
        granted
            .ensure(&grants("a"), || async {
                applies.fetch_add(1, Ordering::SeqCst);
                Ok::<(), &str>(())
            })
            .await
            .expect("apply");
        assert_eq!(applies.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn runs_starting_together_wait_for_one_apply() {
        let granted = Granted::default();
        let applies = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (granted, applies) = (granted.clone(), applies.clone());
                tokio::spawn(async move {
                    granted
                        .ensure(&grants("a"), || async {
                            applies.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            Ok::<(), ()>(())
                        })
                        .await
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("task").expect("apply");
        }
        assert_eq!(applies.load(Ordering::SeqCst), 1);
    }
}
