//! Standard GP Thompson sampling for one agent (no federation).

use super::agent::Learner;
use super::{Algorithm, Query, RunContext, Source};
use crate::error::Result;

pub struct Ts {
    learner: Learner,
    targets: [usize; 1],
}

impl Ts {
    pub fn new(ctx: &RunContext) -> Self {
        let target = 0;
        Ts {
            learner: Learner::new(
                target,
                ctx.landscape.domain.clone(),
                ctx.spec.surrogate.own.clone(),
                ctx.seed(),
                ctx.run,
            ),
            targets: [target],
        }
    }
}

impl Algorithm for Ts {
    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        Ok(vec![Query {
            agent: self.targets[0],
            index: self.learner.thompson()?,
            source: Source::Own,
        }])
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        for (q, y) in queries.iter().zip(ys) {
            self.learner.add(q.index, *y);
        }
    }
}
