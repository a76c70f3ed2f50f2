//! fbo: federated Bayesian optimisation experiments.
//!
//! Layers, top to bottom: `cli` (commands) and `compare`, `federation` -> `run` (the executor:
//! runner, units, output folder, CSVs, journal, sweeps) -> `spec` -> `server` (with `secagg`) /
//! `privacy` -> `algorithm` -> `acquisition` -> `surrogate` -> `objective` (with `model`,
//! `data`, `design`) -> `math`. docs/usage.md, "Layout of the source".

pub mod acquisition;
pub mod algorithm;
pub mod cli;
pub mod compare;
pub mod data;
pub mod design;
pub mod error;
pub mod federation;
pub mod math;
pub mod model;
pub mod objective;
pub mod privacy;
pub mod run;
pub mod server;
pub mod spec;
pub mod surrogate;
