//! kratix-rs: the core of Kratix, the platform framework.
//!
//! Dependencies point one way: `cli` → `controllers` → `events` and (`workflow`, `works`,
//! `scheduler`, `writer`, `pipeline`) → (`store`, `api`, `statestores`). `metrics` (what the
//! process counts, and the `/metrics` listener) is used by `controllers`, `kube` and `cli` and
//! uses none of them: `kube`, a control plane the controllers run on, never imports
//! `controllers`. `workflow`, `scheduler` and the decision parts of `writer` do no I/O.

pub mod api;
pub mod cli;
pub mod controllers;
pub mod events;
pub mod jobs;
pub mod kube;
pub mod metrics;
pub mod pipeline;
pub mod platform;
pub mod store;
