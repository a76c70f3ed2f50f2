//! Standard GP Thompson sampling (no federation), for each target agent independently: the
//! target of the FTS family, or every agent of the DP family.

use super::agent::Learner;
use super::{Algorithm, Query, RunContext, Source};
use crate::error::Result;
use rayon::prelude::*;

pub struct Ts {
    learners: Vec<Learner>,
    targets: Vec<usize>,
}

impl Ts {
    pub fn new(ctx: &RunContext) -> Self {
        let targets = ctx.spec.targets().to_vec();
        let learners = targets.iter().map(|&a| Learner::for_run(ctx, a)).collect();
        Ts { learners, targets }
    }
}

impl Algorithm for Ts {
    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        // Independent agents on their own streams: parallel order cannot change the result.
        self.learners
            .par_iter_mut()
            .map(|l| {
                Ok(Query {
                    agent: l.agent,
                    point: l.thompson()?,
                    source: Source::Own,
                })
            })
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            let slot = self
                .targets
                .iter()
                .position(|&a| a == q.agent)
                .expect("query for a target");
            self.learners[slot].add(q.point.clone(), *y);
        }
    }
}
