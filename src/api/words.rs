//! The words statuses are made of, as Kratix spells them: condition types, the reasons that are
//! compared, pipeline phases and a Promise's status. Every writer and every reader names them
//! from here, so that the two cannot drift apart; users read the same strings as ever.

/// The `type` of each condition Kratix writes.
pub(crate) mod types {
    /// Destinations, state stores, Works and WorkPlacements.
    pub(crate) const READY: &str = "Ready";
    /// Promises and requests: every workflow done and every Work written.
    pub(crate) const RECONCILED: &str = "Reconciled";
    pub(crate) const CONFIGURE_WORKFLOW_COMPLETED: &str = "ConfigureWorkflowCompleted";
    pub(crate) const DELETE_WORKFLOW_COMPLETED: &str = "DeleteWorkflowCompleted";
    /// Promises and requests: every Work of theirs is `Ready`.
    pub(crate) const WORKS_SUCCEEDED: &str = "WorksSucceeded";
    /// A Promise that may take requests.
    pub(crate) const AVAILABLE: &str = "Available";
    /// A Promise whose required Promises are installed.
    pub(crate) const REQUIREMENTS_FULFILLED: &str = "RequirementsFulfilled";
    /// A request whose Promise is available.
    pub(crate) const PROMISE_AVAILABLE: &str = "PromiseAvailable";
    /// A request moved to its Promise's new version.
    pub(crate) const UPGRADE_SUCCEEDED: &str = "UpgradeSucceeded";
    /// Works: every workload group has a Destination.
    pub(crate) const SCHEDULE_SUCCEEDED: &str = "ScheduleSucceeded";
    /// WorkPlacements: the files are in the state store.
    pub(crate) const WRITE_SUCCEEDED: &str = "WriteSucceeded";
    /// PromiseReleases: the Promise is applied.
    pub(crate) const INSTALLED: &str = "Installed";
    /// The platform Destination: what was written for it is applied back here.
    pub(crate) const PLATFORM_SYNCED: &str = "PlatformSynced";
}

/// Reasons of the conditions that are compared as well as written, as Kratix spells them.
pub(crate) mod reasons {
    pub(crate) const UNSCHEDULED_WORKLOADS: &str = "UnscheduledWorkloads";
    pub(crate) const ALL_WORKPLACEMENTS_SCHEDULED: &str = "AllWorkplacementsScheduled";
    pub(crate) const WORKPLACEMENTS_FAILING: &str = "WorkplacementsFailing";
    pub(crate) const WORKPLACEMENTS_PENDING: &str = "WorkplacementsPending";
    pub(crate) const ALL_WORKPLACEMENTS_WRITTEN: &str = "AllWorkplacementsWritten";
    pub(crate) const DESTINATION_SELECTOR_MISMATCH: &str = "DestinationSelectorMismatch";
    pub(crate) const WORKLOADS_WRITTEN_TO_STATE_STORE: &str = "WorkloadsWrittenToStateStore";
    pub(crate) const WORKLOADS_WRITTEN_TO_TARGET_DESTINATION: &str =
        "WorkloadsWrittenToTargetDestination";
    /// `Reconciled` of an object whose reconciliation is paused.
    pub(crate) const PAUSED_RECONCILIATION: &str = "PausedReconciliation";
    /// `ConfigureWorkflowCompleted` of a workflow whose pipeline failed.
    pub(crate) const CONFIGURE_WORKFLOW_FAILED: &str = "ConfigureWorkflowFailed";
    /// `Ready` of a Destination whose state store does not exist.
    pub(crate) const STATE_STORE_NOT_FOUND: &str = "StateStoreNotFound";
    /// `Ready` of a Destination whose state store is not ready.
    pub(crate) const STATE_STORE_NOT_READY: &str = "StateStoreNotReady";
    /// `PlatformSynced` while a document waits for its kind to be served.
    pub(crate) const KIND_NOT_SERVED: &str = "KindNotServed";
}

/// The `phase` of a PipelineRun and of each pipeline in a workflow's status.
pub(crate) mod phases {
    pub(crate) const PENDING: &str = "Pending";
    pub(crate) const RUNNING: &str = "Running";
    pub(crate) const SUCCEEDED: &str = "Succeeded";
    pub(crate) const FAILED: &str = "Failed";
    /// A pipeline that suspended its workflow.
    pub(crate) const SUSPENDED: &str = "Suspended";
}

/// A Promise's `status.status`.
pub(crate) mod promise_status {
    pub(crate) const AVAILABLE: &str = "Available";
    pub(crate) const UNAVAILABLE: &str = "Unavailable";
}

/// A state store's `status.status`, beside its `Ready` condition.
pub(crate) mod store_status {
    pub(crate) const READY: &str = "Ready";
    pub(crate) const NOT_READY: &str = "NotReady";
}

/// The message of a Work's or WorkPlacement's `Ready` condition, which says where it stands.
pub(crate) mod readiness {
    pub(crate) const READY: &str = "Ready";
    pub(crate) const PENDING: &str = "Pending";
    pub(crate) const FAILING: &str = "Failing";
    pub(crate) const MISPLACED: &str = "Misplaced";
}
