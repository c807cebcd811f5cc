//! kratix-rs: the core of Kratix, the platform framework.
//!
//! Dependencies point one way: `cli` → `controllers` → `events` and (`workflow`, `works`,
//! `scheduler`, `writer`, `pipeline`) → (`store`, `api`, `statestores`). `workflow`, `scheduler`
//! and the decision parts of `writer` do no I/O.

pub mod api;
pub mod cli;
pub mod controllers;
pub mod events;
pub mod jobs;
pub mod kube;
pub mod pipeline;
pub mod platform;
pub mod scheduler;
pub mod store;
pub mod workflow;
pub mod works;
pub mod writer;
