//! The executor: everything between a checked spec and the files it leaves. Seeds and units
//! (`unit`: one algorithm on one seed), the parallel runner with its part files, resume and
//! merge (`runner`), the output folder and its lock (`outdir`), the CSV writers (`output`),
//! progress and the Ctrl-C note (`progress`), evaluation counts and budgets checked before a
//! run (`count`, `budget`), sweeps (`sweep`), and the simulated clock with agents at their own
//! pace or with evaluations pending (`clock`, `pace`, `pending`). It drives the algorithms;
//! nothing below it imports it (the evaluations journal is the objective's,
//! `objective::journal`; the trace's column names are `objective::columns`).

pub mod budget;
pub mod clock;
pub mod count;
pub mod outdir;
pub mod output;
pub mod pace;
pub mod pending;
pub mod progress;
pub mod runner;
pub mod sweep;
pub mod unit;
