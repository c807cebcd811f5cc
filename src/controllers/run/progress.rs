//! Stores what a run says while it goes on (an image being pulled) as its status message, so
//! that its owner's status and `apply`'s progress show it.

use tokio::sync::mpsc::UnboundedReceiver;
use tracing::warn;

use crate::api::{ObjectKey, PipelineRunPhase, PipelineRunStatus};
use crate::platform::builtin;

use crate::controllers::run::claims::Executor;
use crate::controllers::{status, ErrorChain, Runtime};

/// Writes each message into the run's status while the run is still this executor's and
/// running; ends when the run's side hangs up. Only the newest of the messages waiting is
/// written: a message that is already over is not worth a write.
pub(super) async fn store(
    rt: Runtime,
    key: ObjectKey,
    me: Executor,
    mut told: UnboundedReceiver<Option<String>>,
) {
    while let Some(mut message) = told.recv().await {
        while let Ok(newer) = told.try_recv() {
            message = newer;
        }
        let kind = builtin(crate::api::Builtin::PipelineRun);
        let stored = status::update_typed_status(
            rt.cp.as_ref(),
            &kind,
            &key,
            "PipelineRun",
            |s: &mut PipelineRunStatus| {
                if s.phase == PipelineRunPhase::Running && s.executor.as_ref() == Some(&me) {
                    s.message = message.clone();
                }
            },
        )
        .await;
        if let Err(err) = stored {
            // Progress is for people watching; the run goes on without it.
            warn!(run = %key, error = %ErrorChain(&err), "storing the run's progress failed");
        }
    }
}
