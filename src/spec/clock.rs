//! `[clock]`: the simulated wall clock agents run on, and `pace` on an algorithm.
//!
//! With a `[clock]` table every evaluation costs simulated seconds: the objective's recorded
//! training time where it has one (a response table's `train_seconds`), otherwise a draw of
//! the cost model below, the same i-th draw for an agent's i-th evaluation in every
//! algorithm of the spec (so comparisons stay paired). The trace's `sim_clock_s` is then the
//! simulated time at which each evaluation finished, deterministic and independent of
//! `output.timing`. Agents in synchronous rounds wait for the slowest site each round; agents
//! alone (ts, ei, ucb, random) never wait; DP-FTS-DE with `pace = "asynchronous"` lets every
//! agent propose as soon as its last evaluation returns while the server releases on its own
//! period or on arrivals (`crate::run::pace`), and the target-and-senders forms (fts, rgpe,
//! taf) with it keep each target on its own clock.

use super::Check;
use crate::error::Result;
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClock {
    median_s: Option<f64>,
    site_spread: Option<f64>,
    spread: Option<f64>,
    period_s: Option<f64>,
    staleness: Option<i64>,
    horizon_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClockSpec {
    /// The cost model's median seconds per evaluation (objectives without recorded costs).
    pub median_s: f64,
    /// Standard deviation of ln(site speed) across agents: sites differ by about
    /// exp(2 site_spread) between fast and slow ones.
    pub site_spread: f64,
    /// Standard deviation of ln(cost) of one site's evaluations about its own median.
    pub spread: f64,
    /// Periodic asynchronous server: seconds between releases (None: the slowest site's
    /// median cost).
    pub period_s: Option<f64>,
    /// Asynchronous server: a message enters a release only if it was sent after the
    /// release `staleness` releases back (1: since the previous release).
    pub staleness: usize,
    /// No evaluation starts at or after this simulated time: a wall-clock budget, within
    /// which agents at their own pace may evaluate more than slow ones (`iterations` stays
    /// each agent's cap). None: every agent evaluates all its iterations.
    pub horizon_s: Option<f64>,
}

/// When an asynchronous server releases (`[[algorithm]] release`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Every `clock.period_s` simulated seconds, at times fixed in advance.
    Periodic,
    /// As soon as `after` evaluations have returned since the previous release
    /// (`release_after`; None: as many as there are agents), so that fast agents are not held
    /// to the slowest site's period. Its times follow the agents' costs.
    Arrivals { after: Option<usize> },
}

impl Release {
    pub const NAMES: &'static str = "\"periodic\", \"arrivals\"";
}

/// How an algorithm's agents keep time with each other (`[[algorithm]] pace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Rounds: every agent waits for the slowest before the next message and query.
    Synchronous,
    /// Every agent proposes as soon as its last evaluation returns, from the server's latest
    /// release; the server releases every `period_s` simulated seconds or on arrivals
    /// (`Release`).
    Asynchronous,
}

impl Pace {
    pub const NAMES: &'static str = "\"synchronous\", \"asynchronous\"";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "synchronous" => Some(Pace::Synchronous),
            "asynchronous" => Some(Pace::Asynchronous),
            _ => None,
        }
    }
}

/// The `[clock]` table checked; None without one.
pub(super) fn check_clock(c: &Check, raw: Option<RawClock>) -> Result<Option<ClockSpec>> {
    let Some(r) = raw else { return Ok(None) };
    let spread = |key: &str, v: Option<f64>, default: f64| -> Result<f64> {
        let v = c.non_negative(key, v, default)?;
        if v > 5.0 {
            return Err(c.err(
                key,
                format!(
                    "must be at most 5 (a factor of e^5 = 148 per standard deviation), got {v}"
                ),
            ));
        }
        Ok(v)
    };
    Ok(Some(ClockSpec {
        median_s: c.positive("clock.median_s", r.median_s, 60.0)?,
        site_spread: spread("clock.site_spread", r.site_spread, 1.0)?,
        spread: spread("clock.spread", r.spread, 0.3)?,
        period_s: c.positive_or_none("clock.period_s", r.period_s)?,
        staleness: c.int("clock.staleness", r.staleness, 4, 1, 1_000_000)?,
        horizon_s: c.positive_or_none("clock.horizon_s", r.horizon_s)?,
    }))
}
