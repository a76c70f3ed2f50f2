//! `fbo compare`: paired statistics of a run's or sweep's algorithms (`crate::compare`).
use crate::error::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompareArgs {
    /// A run's output folder (with trace.csv), or a trace.csv.
    input: PathBuf,
    /// Pool more runs of the same spec's algorithms (other objectives, e.g. the
    /// federations of one skew type) with INPUT: units become (input, run, agent), each
    /// run checked for pairing on its own. Repeat for each.
    #[arg(long = "pool")]
    pool: Vec<PathBuf>,
    /// Only the (input, agent) units listed in this CSV (`input,agent`, the input written
    /// as on this command line), e.g. a federation's tail clients.
    #[arg(long)]
    units: Option<PathBuf>,
    /// Print the comparison as CSV (compare.csv's columns) instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    csv: bool,
    /// The algorithm label to compare against [default: the first in the trace].
    #[arg(long)]
    baseline: Option<String>,
    /// Iterations to compare at, comma-separated [default: the last].
    #[arg(long, value_delimiter = ',')]
    at: Vec<i64>,
    /// Simulated times in seconds to compare at instead, comma-separated: each agent's
    /// value after its last evaluation finished by then (trace column sim_clock_s; runs
    /// with a [clock], e.g. synchronous against asynchronous agents).
    #[arg(long, value_delimiter = ',', conflicts_with = "at")]
    at_clock: Vec<f64>,
    /// What to compare.
    #[arg(long, default_value = "best-metric", value_parser = ["best-metric", "simple-regret"])]
    metric: String,
    /// Bootstrap resamples for the interval.
    #[arg(long, default_value_t = crate::compare::DEFAULT_RESAMPLES as u64, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    resamples: u64,
    /// Print the table as Markdown.
    #[arg(long)]
    markdown: bool,
    /// Compare algorithms whose initial points differ by design (DP-FTS-DE's sub-region
    /// initialisation); units stay paired by seed and objective.
    #[arg(long)]
    allow_init_differences: bool,
    /// Sweeps: the accountant whose epsilon the trend is taken on.
    #[arg(long, default_value = "rdp-int", value_parser = ["rdp-int", "rdp", "pld", "allocation"])]
    accountant: String,
}

pub fn cmd_compare(a: CompareArgs) -> Result<()> {
    crate::compare::run(&crate::compare::CompareOptions {
        input: a.input,
        pool: a.pool,
        units: a.units,
        csv: a.csv,
        baseline: a.baseline,
        at: a.at,
        at_clock: a.at_clock,
        metric: crate::compare::Metric::parse(&a.metric).expect("clap checked the value"),
        resamples: a.resamples as usize,
        markdown: a.markdown,
        allow_init_differences: a.allow_init_differences,
        accountant: a.accountant.parse().expect("clap checked the value"),
    })
}
