//! The words statuses are made of, as Kratix spells them: condition types, the reasons that are
//! compared, pipeline phases and a Promise's status. Every writer and every reader names them
//! from here, so that the two cannot drift apart; users read the same strings as ever.

/// The `type` of each condition Kratix writes.
pub mod types {
    /// Destinations, state stores, Works and WorkPlacements.
    pub const READY: &str = "Ready";
    /// Promises and requests: every workflow done and every Work written.
    pub const RECONCILED: &str = "Reconciled";
    pub const CONFIGURE_WORKFLOW_COMPLETED: &str = "ConfigureWorkflowCompleted";
    pub const DELETE_WORKFLOW_COMPLETED: &str = "DeleteWorkflowCompleted";
    /// Promises and requests: every Work of theirs is `Ready`.
    pub const WORKS_SUCCEEDED: &str = "WorksSucceeded";
    /// A Promise that may take requests.
    pub const AVAILABLE: &str = "Available";
    /// A Promise whose required Promises are installed.
    pub const REQUIREMENTS_FULFILLED: &str = "RequirementsFulfilled";
    /// A request whose Promise is available.
    pub const PROMISE_AVAILABLE: &str = "PromiseAvailable";
    /// A request moved to its Promise's new version.
    pub const UPGRADE_SUCCEEDED: &str = "UpgradeSucceeded";
    /// Works: every workload group has a Destination.
    pub const SCHEDULE_SUCCEEDED: &str = "ScheduleSucceeded";
    /// WorkPlacements: the files are in the state store.
    pub const WRITE_SUCCEEDED: &str = "WriteSucceeded";
    /// PromiseReleases: the Promise is applied.
    pub const INSTALLED: &str = "Installed";
    /// The platform Destination: what was written for it is applied back here.
    pub const PLATFORM_SYNCED: &str = "PlatformSynced";
}

/// Reasons of the conditions that are compared as well as written, as Kratix spells them.
pub mod reasons {
    pub const UNSCHEDULED_WORKLOADS: &str = "UnscheduledWorkloads";
    pub const ALL_WORKPLACEMENTS_SCHEDULED: &str = "AllWorkplacementsScheduled";
    pub const WORKPLACEMENTS_FAILING: &str = "WorkplacementsFailing";
    pub const WORKPLACEMENTS_PENDING: &str = "WorkplacementsPending";
    pub const ALL_WORKPLACEMENTS_WRITTEN: &str = "AllWorkplacementsWritten";
    pub const DESTINATION_SELECTOR_MISMATCH: &str = "DestinationSelectorMismatch";
    pub const WORKLOADS_WRITTEN_TO_STATE_STORE: &str = "WorkloadsWrittenToStateStore";
    pub const WORKLOADS_WRITTEN_TO_TARGET_DESTINATION: &str = "WorkloadsWrittenToTargetDestination";
    /// `Reconciled` of an object whose reconciliation is paused.
    pub const PAUSED_RECONCILIATION: &str = "PausedReconciliation";
    /// `ConfigureWorkflowCompleted` of a workflow whose pipeline failed.
    pub const CONFIGURE_WORKFLOW_FAILED: &str = "ConfigureWorkflowFailed";
    /// `Ready` of a Destination whose state store does not exist.
    pub const STATE_STORE_NOT_FOUND: &str = "StateStoreNotFound";
    /// `Ready` of a Destination whose state store is not ready.
    pub const STATE_STORE_NOT_READY: &str = "StateStoreNotReady";
    /// `PlatformSynced` while a document waits for its kind to be served.
    pub const KIND_NOT_SERVED: &str = "KindNotServed";
}

/// The `phase` of a PipelineRun and of each pipeline in a workflow's status.
pub mod phases {
    pub const PENDING: &str = "Pending";
    pub const RUNNING: &str = "Running";
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
    /// A pipeline that suspended its workflow.
    pub const SUSPENDED: &str = "Suspended";
}

/// A Promise's `status.status`.
pub mod promise_status {
    pub const AVAILABLE: &str = "Available";
    pub const UNAVAILABLE: &str = "Unavailable";
}

/// A state store's `status.status`, beside its `Ready` condition.
pub mod store_status {
    pub const READY: &str = "Ready";
    pub const NOT_READY: &str = "NotReady";
}

/// The message of a Work's or WorkPlacement's `Ready` condition, which says where it stands.
pub mod readiness {
    pub const READY: &str = "Ready";
    pub const PENDING: &str = "Pending";
    pub const FAILING: &str = "Failing";
    pub const MISPLACED: &str = "Misplaced";
}
