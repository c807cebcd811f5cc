//! kratix-rs: the core of Kratix, the platform framework.
//!
//! Dependencies point one way: `cli` → `controllers` → `admission` → (`events`, `pipeline`,
//! `platform`) → (`store`, `api`, `statestores`). `admission` (how a document is parsed,
//! checked, defaulted and merged) is shared by `apply`, `diff` and the platform Destination's
//! sync. `cli` also chooses what the controllers run on: the
//! control plane (`store`'s embedded one, or `kube`) and the executor of pipeline runs
//! (`pipeline`'s local one, or `jobs`, which implements `pipeline::Executor` with Kubernetes
//! Jobs); `controllers` names neither `kube` nor `jobs`. `metrics` (what the process counts,
//! and the `/metrics` listener) is used by `controllers`, `kube` and `cli` and uses none of
//! them: `kube`, a control plane the controllers run on, never imports `controllers`.
//!
//! `controllers` has one folder per kind. What a reconcile decides is in pure files inside the
//! kind folders, which do no I/O: `decide.rs`, the `decide/` folders, the scheduler
//! (`controllers::work::schedule`), the workload groups of a pipeline's output
//! (`controllers::work::from_output`), and the writer's layout and plan
//! (`controllers::placement::layout`, `controllers::placement::plan`). `tests/architecture.rs`
//! checks that, and that `kube` never imports `controllers`; docs/architecture.md describes
//! the whole.

pub(crate) mod admission;
pub mod api;
pub(crate) mod apiserver;
pub mod cli;
pub mod controllers;
pub mod events;
pub mod jobs;
pub mod kube;
pub(crate) mod metrics;
pub mod pipeline;
pub mod platform;
pub mod store;
