//! fbo: federated Bayesian optimisation experiments.
//!
//! spec -> objective -> surrogate -> algorithm -> runner -> output. See README.md.

pub mod acquisition;
pub mod algorithm;
pub mod asktell;
pub mod bench;
pub mod best;
pub mod budget;
pub mod cli;
pub mod clock;
pub mod compare;
pub mod count;
pub mod data;
pub mod design;
pub mod error;
pub mod evaluate;
pub mod federation;
pub mod history;
pub mod import;
pub mod journal;
pub mod math;
pub mod model;
pub mod objective;
pub mod outdir;
pub mod output;
pub mod pace;
pub mod pending;
pub mod plot;
pub mod privacy;
pub mod progress;
pub mod runner;
pub mod secagg;
pub mod server;
pub mod spec;
pub mod surrogate;
pub mod sweep;
pub mod tabulate;
pub mod unit;
