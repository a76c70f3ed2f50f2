//! The simulated clock of one run (`[clock]`, spec/clock.rs): what each evaluation costs and
//! when it finishes, for agents in synchronous rounds or alone. The asynchronous driver
//! (`crate::run::pace`) keeps its own event times from the same costs.

use crate::algorithm::Query;
use crate::math::rng::{Purpose, Rng, stream};
use crate::objective::Landscape;
use crate::spec::{ClockSpec, Spec};
use ndarray::Array1;
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

/// Seconds each evaluation costs: the objective's recorded training time at the point (a
/// response table's `train_seconds`) where it has one, otherwise the cost model's draw.
pub struct Costs {
    recorded: Option<Arc<Landscape>>,
    median_s: f64,
    spread: f64,
    /// Per traced agent (by slot): its speed factor and its stream of draws. Agent a's i-th
    /// evaluation costs the same in every algorithm of a spec (same stream, same order), so
    /// algorithms compared on the clock stay paired.
    sites: Vec<(f64, Rng)>,
}

impl Costs {
    pub fn new(
        spec: &Spec,
        clock: &ClockSpec,
        run: usize,
        targets: &[usize],
        landscape: &Arc<Landscape>,
    ) -> Self {
        let sites = targets
            .iter()
            .map(|&a| {
                let mut rng = stream(spec.seed, run as u64, a as u64, Purpose::Clock);
                let z: f64 = StandardNormal.sample(&mut rng);
                ((clock.site_spread * z).exp(), rng)
            })
            .collect();
        Costs {
            recorded: landscape
                .recorded_costs()
                .is_some()
                .then(|| landscape.clone()),
            median_s: clock.median_s,
            spread: clock.spread,
            sites,
        }
    }

    /// The cost of query `q` of the agent at `slot`.
    pub fn cost(&mut self, slot: usize, q: &Query) -> f64 {
        if let Some(l) = &self.recorded
            && let (Some(costs), Some(i)) = (l.recorded_costs(), q.point.index)
        {
            return costs[q.agent][i];
        }
        let (speed, rng) = &mut self.sites[slot];
        let z: f64 = StandardNormal.sample(rng);
        self.median_s * *speed * (self.spread * z).exp()
    }

    /// The slowest site's typical evaluation cost: the largest over the traced agents of
    /// each one's median recorded cost, or of the cost model's site medians. An asynchronous
    /// server's default period, so that its releases span the slowest agent's iterations.
    pub fn slowest_median(&self, targets: &[usize]) -> f64 {
        match self.recorded.as_ref().and_then(|l| l.recorded_costs()) {
            Some(costs) => targets
                .iter()
                .map(|&a| median(std::slice::from_ref(&costs[a])))
                .fold(0.0, f64::max),
            None => self
                .sites
                .iter()
                .map(|(speed, _)| self.median_s * speed)
                .fold(0.0, f64::max),
        }
    }
}

fn median(costs: &[Array1<f64>]) -> f64 {
    let mut all: Vec<f64> = costs.iter().flat_map(|c| c.iter().copied()).collect();
    all.sort_by(f64::total_cmp);
    match all.len() {
        0 => 0.0,
        n if n % 2 == 1 => all[n / 2],
        n => 0.5 * (all[n / 2 - 1] + all[n / 2]),
    }
}

/// The clock of a run whose agents act in rounds (`rounds`: each round starts when the
/// slowest agent's last evaluation is done) or alone (each agent's clock is its own).
pub struct RunClock {
    costs: Costs,
    now: Vec<f64>,
    rounds: bool,
}

impl RunClock {
    pub fn new(costs: Costs, agents: usize, rounds: bool) -> Self {
        RunClock {
            costs,
            now: vec![0.0; agents],
            rounds,
        }
    }

    /// The costs, and when each agent is next free.
    pub fn into_parts(self) -> (Costs, Vec<f64>) {
        (self.costs, self.now)
    }

    /// When an initial point of the agent at `slot` is done: a site evaluates its initial
    /// points one after another, from time 0.
    pub fn initial(&mut self, slot: usize, q: &Query) -> f64 {
        self.now[slot] += self.costs.cost(slot, q);
        self.now[slot]
    }

    /// When the next round's evaluation of the agent at each slot would start.
    pub fn starts(&self) -> Vec<f64> {
        let shared = self.now.iter().copied().fold(0.0, f64::max);
        match self.rounds {
            true => vec![shared; self.now.len()],
            false => self.now.clone(),
        }
    }

    /// When each query of one round is done, given each query's slot: all start together
    /// (at the slowest agent's finish, in rounds; at the agent's own, alone), a site's
    /// several queries (a batch) on workers of their own.
    pub fn round(&mut self, slots: &[usize], queries: &[Query]) -> Vec<f64> {
        let start = self.starts();
        slots
            .iter()
            .zip(queries)
            .map(|(&slot, q)| {
                let done = start[slot] + self.costs.cost(slot, q);
                self.now[slot] = self.now[slot].max(done);
                done
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(&[Array1::from(vec![3.0, 1.0, 2.0])]), 2.0);
        assert_eq!(
            median(&[Array1::from(vec![4.0, 1.0]), Array1::from(vec![2.0, 3.0])]),
            2.5
        );
    }
}
