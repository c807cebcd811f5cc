//! Kratix's API (`platform.kratix.io/v1alpha1`) and the core `v1` Secret, as serde types.
//!
//! The control plane stores every object as a [`kube::core::DynamicObject`]; the typed structs here
//! are views that controllers parse when they need them. Real Kratix YAML applies unchanged.

pub(crate) mod columns;
pub mod condition;
pub mod crds;
pub mod defaults;
pub(crate) mod destination;
pub(crate) mod destination_paths;
pub(crate) mod durations;
pub(crate) mod formats;
pub mod hash;
pub(crate) mod health_record;
pub mod kinds;
pub(crate) mod names;
pub mod object;
pub mod pipeline;
pub(crate) mod pipeline_run;
pub(crate) mod printer_columns;
pub(crate) mod promise;
pub mod promise_api;
pub(crate) mod promise_release;
pub(crate) mod redact;
pub(crate) mod schema;
pub mod secret;
pub(crate) mod state_store;
pub mod validation;
pub(crate) mod versions;
pub(crate) mod words;
pub(crate) mod work;
pub(crate) mod work_placement;
pub(crate) mod workflow;
pub mod workflow_status;

pub use condition::{Condition, ConditionStatus};
pub use destination::{Destination, FilepathMode};
pub use health_record::HealthRecord;
pub use kinds::{Builtin, KindInfo};
pub use object::{Object, ObjectKey};
pub use pipeline::Pipeline;
pub use pipeline_run::PipelineRun;
pub use promise::Promise;
pub use secret::Secret;
pub use state_store::{BucketStateStore, GitStateStore};
pub use versions::ResourceBinding;
pub use work::Work;
pub use work_placement::WorkPlacement;
pub use workflow::Action;

pub(crate) use pipeline_run::{
    PipelineRunPhase, PipelineRunSpec, PipelineRunStatus, RunExecutor, WorkflowControl,
};
pub(crate) use promise::{PromiseSpec, PromiseStatus};
pub(crate) use promise_release::PromiseRelease;
pub(crate) use versions::PromiseRevision;
pub(crate) use words::reasons;
pub(crate) use work::{WorkSpec, WorkStatus, WorkType};
pub(crate) use work_placement::{WorkPlacementSpec, WorkPlacementStatus};
pub(crate) use workflow::WorkflowType;

/// API group of every Kratix type.
pub const GROUP: &str = "platform.kratix.io";
/// The one version Kratix serves.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of every Kratix type.
pub const API_VERSION: &str = "platform.kratix.io/v1alpha1";
/// Namespace of promise workflows and their Works.
pub const SYSTEM_NAMESPACE: &str = "kratix-platform-system";

/// Label and annotation keys Kratix users and tools rely on.
pub(crate) mod labels {
    pub const PROMISE_NAME: &str = "kratix.io/promise-name";
    pub const RESOURCE_NAME: &str = "kratix.io/resource-name";
    pub const RESOURCE_NAMESPACE: &str = "kratix.io/resource-namespace";
    /// The namespace a pipeline's Job and ServiceAccount live in.
    pub const PIPELINE_NAMESPACE: &str = "kratix.io/pipeline-namespace";
    /// Who manages an object Kratix creates (value `Kratix`).
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    pub const PIPELINE_NAME: &str = "kratix.io/pipeline-name";
    pub const WORKFLOW_TYPE: &str = "kratix.io/workflow-type";
    pub const WORKFLOW_ACTION: &str = "kratix.io/workflow-action";
    pub const HASH: &str = "kratix.io/hash";
    pub(crate) const WORK_TYPE: &str = "kratix.io/work-type";
    pub(crate) const WORK: &str = "kratix.io/work";
    pub(crate) const WORKLOAD_GROUP_ID: &str = "kratix.io/workload-group-id";
    pub(crate) const TARGET_DESTINATION: &str = "kratix.io/targetDestinationName";
    pub(crate) const MISPLACED: &str = "kratix.io/misplaced";
    pub(crate) const MANUAL_RECONCILIATION: &str = "kratix.io/manual-reconciliation";
    pub(crate) const WORKFLOW_SUSPENDED: &str = "kratix.io/workflow-suspended";
    pub(crate) const PAUSED: &str = "kratix.io/paused";
    pub const PROMISE_VERSION: &str = "kratix.io/promise-version";
    /// Annotation on a Promise: how often its configure workflows run again (a Go duration).
    pub(crate) const RECONCILIATION_INTERVAL: &str = "kratix.io/reconciliation-interval";
    /// Label on a Promise: `true` re-runs every request's configure workflow once, then goes.
    pub(crate) const RECONCILE_RESOURCES: &str = "kratix.io/reconcile-resources";
    /// Why a Work or WorkPlacement (and so its files) is being removed: `configure` when its
    /// pipeline left the workflow, `delete` when its object is deleted. Becomes the commit's
    /// `Kratix-Workflow`.
    pub(crate) const REMOVAL_REASON: &str = "kratix.io/removal-reason";
    /// On a GitStateStore: the commit message's text above Kratix's trailers (an annotation,
    /// so that the object stays valid for Kratix).
    pub(crate) const COMMIT_MESSAGE_TEMPLATE: &str = "kratix.io/commit-message-template";
    /// Annotation `apply` (like `kubectl apply`) keeps the applied document in, as JSON, to
    /// know next time what the file set and no longer sets.
    pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
    /// Annotation on a Destination: `"true"` applies what is written for it back into this
    /// platform's own control plane (see `controllers::platform_sync`).
    pub(crate) const APPLY_TO_PLATFORM: &str = "kratix-rs.io/apply-to-platform";
    /// Label on an object the platform Destination's sync applied: that Destination's name.
    pub(crate) const PLATFORM_DESTINATION: &str = "kratix-rs.io/platform-destination";
}

/// Finalizers: what must be done before an object of each kind may go.
pub(crate) mod finalizers {
    /// Promises and requests: their delete workflow ran and their Works (and files) are gone.
    pub(crate) const WORKFLOWS: &str = "kratix.io/workflows-cleanup";
    /// Works: their WorkPlacements are gone.
    pub(crate) const WORK: &str = "kratix.io/work-cleanup";
    /// WorkPlacements: their files left the state store.
    pub(crate) const WORK_PLACEMENT: &str = "finalizers.workplacement.kratix.io/repo-cleanup";
    /// Destinations: every placement's files left the state store.
    pub(crate) const DESTINATION: &str = "kratix.io/destination-cleanup";
    /// PromiseRevisions: their deletion was seen, and reported when requests still name their
    /// version (never deleting those requests).
    pub(crate) const PROMISE_REVISION: &str = "kratix.io/promise-revision-deletion";
}
