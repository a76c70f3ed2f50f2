//! One unit (seed, algorithm) from its initial points to its last iteration: the initial
//! queries every algorithm of a run shares, the evaluator that turns queries into noisy
//! observations, and the tracer that turns them into trace rows. The runner drives whole units
//! in one process; `crate::federation` drives the same pieces one agent at a time.

use crate::algorithm::agent::SenderCache;
use crate::algorithm::{self, Algorithm, InitArea, Query, RunContext, Source};
use crate::design::{DesignKind, snap};
use crate::error::Result;
use crate::math::rng::{Purpose, stream};
use crate::objective::journal::INIT;
use crate::objective::{Landscape, Point, Region, Request, Space};
use crate::run::output::{BeliefRow, TraceRow};
use crate::server::RoundRecord;
use crate::spec::Spec;
use rand::seq::index::sample as sample_indices;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// Everything one (algorithm, run) pair produces.
pub struct RunOutput {
    pub rows: Vec<TraceRow>,
    pub server: Vec<RoundRecord>,
    /// With `output.beliefs`: the model behind each model-chosen query, in query order.
    pub beliefs: Vec<BeliefRow>,
}

/// One (algorithm, run) pair traced from start to end.
pub fn run_one(
    spec: &Spec,
    alg_index: usize,
    run: usize,
    landscape: Arc<Landscape>,
) -> Result<RunOutput> {
    run_one_shared(spec, alg_index, run, landscape, None)
}

/// One unit set up and its initial points evaluated, observed and traced: what the
/// synchronous rounds below and the asynchronous driver (`crate::run::pace`) both start from.
pub(crate) struct Unit<'a> {
    pub(crate) spec: &'a Spec,
    /// The algorithm's settings (its label, pace and release rule among them).
    pub(crate) algorithm: &'a crate::spec::AlgorithmSpec,
    pub(crate) label: &'a str,
    pub(crate) run: usize,
    pub(crate) alg: Box<dyn Algorithm>,
    pub(crate) targets: Vec<usize>,
    /// Each target's observation-noise stream, by slot.
    pub(crate) noise: Vec<crate::math::rng::Rng>,
    pub(crate) tracer: Tracer,
    pub(crate) evaluator: Evaluator,
    /// With a `[clock]`: the simulated clock (agents alone never wait; others in rounds).
    pub(crate) clock: Option<crate::run::clock::RunClock>,
}

impl<'a> Unit<'a> {
    pub(crate) fn start(
        spec: &'a Spec,
        alg_index: usize,
        run: usize,
        landscape: Arc<Landscape>,
        senders: Option<&SenderCache>,
    ) -> Result<Self> {
        let alg_spec = &spec.algorithms[alg_index];
        let ctx = RunContext {
            spec,
            algorithm: alg_spec,
            run,
            landscape: landscape.clone(),
            senders,
            place: algorithm::Place::Simulation,
        };
        let alg = algorithm::build(&ctx)?;
        let targets = alg.targets().to_vec();
        let noise = targets
            .iter()
            .map(|&a| stream(spec.seed, run as u64, a as u64, Purpose::Noise))
            .collect();
        let clock = spec.clock.as_ref().map(|c| {
            let costs = crate::run::clock::Costs::new(spec, c, run, &targets, &landscape);
            crate::run::clock::RunClock::new(costs, targets.len(), alg_spec.waits_in_rounds())
        });
        let mut unit = Unit {
            spec,
            algorithm: alg_spec,
            label: &alg_spec.label,
            run,
            tracer: Tracer::new(spec, &alg_spec.label, run, landscape.clone(), targets.len()),
            evaluator: Evaluator::new(landscape.clone(), &targets, spec.output.timing),
            alg,
            targets,
            noise,
            clock,
        };
        unit.initial_points(&landscape)?;
        Ok(unit)
    }

    /// The trace slot of a target agent.
    pub(crate) fn slot(&self, agent: usize) -> usize {
        self.targets
            .iter()
            .position(|&a| a == agent)
            .expect("query for a target")
    }

    fn initial_points(&mut self, landscape: &Arc<Landscape>) -> Result<()> {
        let init = initial_queries(
            self.spec,
            self.alg.as_ref(),
            self.label,
            self.run,
            &self.targets,
            &landscape.space,
        );
        tell_given(self.spec, landscape, &init)?;
        let batch: Vec<(&Query, Request)> = init.iter().map(|(q, r)| (q, r.clone())).collect();
        let evaluated = self.evaluator.evaluate(&batch, &mut self.noise)?;
        for ((q, req), (f, y, cost)) in init.iter().zip(evaluated) {
            let slot = self.slot(q.agent);
            let training = self.evaluator.training_s;
            self.tracer
                .record(slot, q, y, req.iteration, 0, f, cost, training);
            if let Some(c) = self.clock.as_mut() {
                self.tracer.finished_at(c.initial(slot, q));
            }
            // A failed evaluation that is skipped is traced, not observed.
            if !f.is_nan() {
                self.alg.observe(std::slice::from_ref(q), &[y]);
            }
        }
        Ok(())
    }

    /// The model behind agent `agent`'s next query, with `output.beliefs`.
    pub(crate) fn belief(&self, agent: usize, iteration: usize) -> Option<BeliefRow> {
        if !self.spec.output.beliefs {
            return None;
        }
        self.alg.belief(agent).map(|belief| BeliefRow {
            agent,
            iteration,
            belief,
        })
    }

    pub(crate) fn finish(self, beliefs: Vec<BeliefRow>) -> RunOutput {
        RunOutput {
            server: self.alg.server_records().to_vec(),
            rows: self.tracer.rows,
            beliefs,
        }
    }
}

/// `run_one` with the senders' states shared across the algorithms of a spec: the
/// algorithm's initial points, then `iterations` rounds of propose, evaluate, observe, each
/// query traced as it is evaluated (or the asynchronous driver, for `pace = "asynchronous"`).
pub fn run_one_shared(
    spec: &Spec,
    alg_index: usize,
    run: usize,
    landscape: Arc<Landscape>,
    senders: Option<&SenderCache>,
) -> Result<RunOutput> {
    crate::run::progress::check_stop()?;
    let alg_spec = &spec.algorithms[alg_index];
    let mut u = Unit::start(spec, alg_index, run, landscape.clone(), senders)?;
    if alg_spec.has_asynchronous_server() {
        return crate::run::pace::run_asynchronous(u);
    }
    if spec.parallel > 1 {
        return crate::run::pending::run_pending(u, &landscape);
    }
    let mut beliefs = Vec::new();
    let horizon = spec.horizon_s();
    for t in 1..=spec.iterations {
        crate::run::progress::check_stop()?;
        // With a wall-clock budget: no round once every agent's next start is past it, and
        // (agents alone) no query of an agent whose own is.
        let starts = u.clock.as_ref().map(|c| c.starts());
        let open = |slot: usize| match (horizon, &starts) {
            (Some(h), Some(s)) => s[slot] < h,
            _ => true,
        };
        if !(0..u.targets.len()).any(open) {
            break;
        }
        let mut queries = u.alg.propose(t)?;
        queries.retain(|q| open(u.slot(q.agent)));
        let slots: Vec<usize> = queries.iter().map(|q| u.slot(q.agent)).collect();
        // The trace counts evaluations: an agent's j-th query of round t (j from 0) is its
        // iteration (t - 1) batch + j + 1.
        let mut taken = vec![0; u.targets.len()];
        let iterations: Vec<usize> = slots
            .iter()
            .map(|&s| {
                taken[s] += 1;
                (t - 1) * spec.batch + taken[s]
            })
            .collect();
        beliefs.extend(
            queries
                .iter()
                .zip(&iterations)
                .filter_map(|(q, &iteration)| u.belief(q.agent, iteration)),
        );
        let batch: Vec<(&Query, Request)> = queries
            .iter()
            .zip(&iterations)
            .map(|(q, &it)| {
                (
                    q,
                    Request::new(alg_spec.label.clone(), run, q.agent, it as i64),
                )
            })
            .collect();
        let evaluated = u.evaluator.evaluate(&batch, &mut u.noise)?;
        let finished = u.clock.as_mut().map(|c| c.round(&slots, &queries));
        let (mut seen, mut ys) = (Vec::new(), Vec::new());
        for (k, (q, (f, y, cost))) in queries.iter().zip(evaluated).enumerate() {
            let training = u.evaluator.training_s;
            let it = iterations[k] as i64;
            let params = u.alg.params_sent(q.agent, t);
            u.tracer
                .record(slots[k], q, y, it, params, f, cost, training);
            if let Some(done) = &finished {
                u.tracer.finished_at(done[k]);
            }
            if !f.is_nan() {
                seen.push(q.clone());
                ys.push(y);
            }
        }
        u.alg.observe(&seen, &ys);
    }
    Ok(u.finish(beliefs))
}

/// Initial points: distinct, uniformly random, from a stream of (run, agent) alone so that
/// every algorithm starts from the same points, each with the journal request that names it.
/// Points from the whole space are every such algorithm's (one shared scope); points from an
/// algorithm's own area (DP-FTS-DE's sub-regions) are its own.
pub(crate) fn initial_queries(
    spec: &Spec,
    alg: &dyn Algorithm,
    label: &str,
    run: usize,
    targets: &[usize],
    space: &Space,
) -> Vec<(Query, Request)> {
    let n_init = spec.initial_points;
    let iteration = |k: usize| k as i64 + 1 - n_init as i64;
    let mut init = Vec::with_capacity(targets.len() * n_init);
    for &agent in targets {
        let mut rng = stream(spec.seed, run as u64, agent as u64, Purpose::Init);
        let init_scope = match alg.init_area(agent) {
            None => INIT.to_string(),
            Some(_) => format!("{INIT} {label}"),
        };
        let design = &spec.initial_design;
        let picks: Vec<Point> = if let Some(given) = &design.given {
            // Checked before the run (algorithm::check): every target has its points.
            given
                .points(space, run, agent)
                .expect("given initial points checked before the run")
        } else if design.kind != DesignKind::Random {
            designed(spec, alg.init_area(agent), space, run, agent)
        } else {
            match (alg.init_area(agent), space.grid()) {
                (Some(InitArea::Points(c)), Some(grid)) => {
                    sample_indices(&mut rng, c.len(), n_init)
                        .into_iter()
                        .map(|i| grid.at(c[i]))
                        .collect()
                }
                (None, Some(grid)) => sample_indices(&mut rng, grid.len(), n_init)
                    .into_iter()
                    .map(|i| grid.at(i))
                    .collect(),
                (Some(InitArea::Region(r)), _) => (0..n_init)
                    .map(|_| space.point(r.sample(&mut rng)))
                    .collect(),
                (None, None) => {
                    let unit = Region::unit(space.dim());
                    (0..n_init)
                        .map(|_| space.point(unit.sample(&mut rng)))
                        .collect()
                }
                (Some(InitArea::Points(_)), None) => {
                    unreachable!("grid candidates on a box")
                }
            }
        };
        // A reference's start takes the last random point's place (same iteration, its
        // own scope: the shared "init" memo of that iteration is another point), unless a
        // random pick is that point already.
        let warm = alg
            .warm_start(agent)
            .filter(|w| !picks.iter().any(|p| p.x == w.x) && n_init > 0);
        for (k, point) in picks.into_iter().enumerate() {
            let (point, scope, source) = match &warm {
                Some(w) if k + 1 == n_init => {
                    (w.clone(), format!("{INIT} {label}"), Source::Reference)
                }
                _ => (point, init_scope.clone(), Source::Init),
            };
            let q = Query {
                agent,
                point,
                source,
            };
            init.push((q, Request::new(scope, run, agent, iteration(k))));
        }
    }
    init
}

/// The values `initial_points_file` tells for the initial queries, recorded as their results
/// before anything runs, so that those points are never evaluated again. A reference's start
/// (which replaced a given point) is run.
pub(crate) fn tell_given(
    spec: &Spec,
    landscape: &Landscape,
    init: &[(Query, Request)],
) -> Result<()> {
    // Only a measured objective records results; the evaluation counter's stand-in
    // (`count::per_run`) counts told points as asked, an upper bound on what will run.
    let Some(given) = spec.initial_design.given.as_ref().filter(|g| g.tells()) else {
        return Ok(());
    };
    if !landscape.is_measured() {
        return Ok(());
    }
    let n_init = spec.initial_points as i64;
    for (q, req) in init.iter().filter(|(q, _)| q.source == Source::Init) {
        // initial_queries numbers the k-th point iteration k + 1 - n_init.
        let k = (req.iteration + n_init - 1) as usize;
        if let Some(Some(v)) = given.values(req.run, q.agent).get(k) {
            landscape.tell(req, &q.point, *v)?;
        }
    }
    Ok(())
}

/// Agent `agent`'s initial points from the spec's design (Latin hypercube or Sobol; one
/// design shared out across the agents, block by block, if `across_agents`), mapped into its
/// algorithm's area: a sub-region's box, or the nearest free points of a list or a grid.
fn designed(
    spec: &Spec,
    area: Option<InitArea<'_>>,
    space: &Space,
    run: usize,
    agent: usize,
) -> Vec<Point> {
    let d = space.dim();
    let n = spec.initial_points;
    let (block, mut rng) = if spec.initial_design.across_agents {
        // One stream per run for the shared design: every agent draws the same design.
        let all = spec.total_agents();
        (
            (agent, all),
            stream(spec.seed, run as u64, u64::MAX, Purpose::Init),
        )
    } else {
        (
            (0, 1),
            stream(spec.seed, run as u64, agent as u64, Purpose::Init),
        )
    };
    let unit = crate::design::unit_design(spec.initial_design.kind, n, d, block, &mut rng)
        .expect("design sizes checked before the run");
    let rows = |c: &[usize], grid: &crate::objective::space::Domain| -> Vec<Point> {
        let cands: Vec<Vec<f64>> = c.iter().map(|&i| grid.point(i).to_vec()).collect();
        snap(&unit, &cands)
            .into_iter()
            .map(|k| grid.at(c[k]))
            .collect()
    };
    match (area, space.grid()) {
        (Some(InitArea::Points(c)), Some(grid)) => rows(c, grid),
        (None, Some(grid)) => rows(&(0..grid.len()).collect::<Vec<_>>(), grid),
        (Some(InitArea::Region(r)), _) => unit
            .iter()
            .map(|u| {
                space.point(
                    u.iter()
                        .enumerate()
                        .map(|(k, v)| r.lo[k] + (r.hi[k] - r.lo[k]) * v)
                        .collect(),
                )
            })
            .collect(),
        (None, None) => unit.into_iter().map(|u| space.point(u)).collect(),
        (Some(InitArea::Points(_)), None) => unreachable!("grid candidates on a box"),
    }
}

/// Evaluates batches of queries: the noiseless values (trained now, memoised or journaled),
/// then their noisy y in query order. A live model's evaluations run in parallel across the
/// batch (they are deterministic, so the order cannot matter), a command's on threads of
/// their own (it waits on a process, and its concurrency limit is its own); measured costs
/// are recorded only when timing is on (byte-identical traces otherwise). Every evaluation of
/// a batch is finished before an error is returned, so none is lost.
pub(crate) struct Evaluator {
    landscape: Arc<Landscape>,
    targets: Vec<usize>,
    live: bool,
    measured: bool,
    timing: bool,
    /// Seconds spent training live models so far (taken out of elapsed_s).
    pub(crate) training_s: f64,
}

impl Evaluator {
    pub(crate) fn new(landscape: Arc<Landscape>, targets: &[usize], timing: bool) -> Self {
        Evaluator {
            targets: targets.to_vec(),
            live: landscape.space.grid().is_none() || landscape.optimum(0).is_none(),
            measured: landscape.is_measured(),
            timing,
            training_s: 0.0,
            landscape,
        }
    }

    /// (f, y, cost) of every query of the batch, y drawn from its agent's noise stream.
    pub(crate) fn evaluate(
        &mut self,
        batch: &[(&Query, Request)],
        rngs: &mut [crate::math::rng::Rng],
    ) -> Result<Vec<(f64, f64, f64)>> {
        let values = self.values(batch)?;
        Ok(self.observed(batch, values, rngs))
    }

    /// (f, cost) of every query of the batch: the objective's own evaluations.
    pub(crate) fn values(&mut self, batch: &[(&Query, Request)]) -> Result<Vec<(f64, f64)>> {
        let t0 = Instant::now();
        let landscape = &*self.landscape;
        let one = |(q, req): &(&Query, Request)| landscape.evaluate(req, &q.point);
        let values: Vec<Result<(f64, f64)>> = if self.measured && batch.len() > 1 {
            std::thread::scope(|s| {
                let handles: Vec<_> = batch.iter().map(|b| s.spawn(move || one(b))).collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("evaluation thread"))
                    .collect()
            })
        } else if self.live {
            batch.par_iter().map(one).collect()
        } else {
            batch.iter().map(one).collect()
        };
        let values: Vec<(f64, f64)> = values.into_iter().collect::<Result<_>>()?;
        if self.live {
            self.training_s += t0.elapsed().as_secs_f64();
        }
        Ok(values)
    }

    /// (f, y, cost) of the batch given its (f, cost): y drawn from each query's agent's noise
    /// stream, in query order (so the same values always give the same y).
    pub(crate) fn observed(
        &self,
        batch: &[(&Query, Request)],
        values: Vec<(f64, f64)>,
        rngs: &mut [crate::math::rng::Rng],
    ) -> Vec<(f64, f64, f64)> {
        let (live, timing) = (self.live, self.timing);
        batch
            .iter()
            .zip(values)
            .map(|((q, _), (f, cost))| {
                let slot = self
                    .targets
                    .iter()
                    .position(|&a| a == q.agent)
                    .expect("query for a target");
                let y = self.landscape.noisy(f, &mut rngs[slot]);
                (f, y, if live && !timing { 0.0 } else { cost })
            })
            .collect()
    }
}

/// The trace of one run as it is made: each agent's best value, cumulative regret and
/// training time so far, and one row per evaluated query.
pub(crate) struct Tracer {
    label: String,
    run: usize,
    landscape: Arc<Landscape>,
    best: Vec<f64>,
    cumulative: Vec<f64>,
    trained: Vec<f64>,
    /// elapsed_s counts the target's BO overhead from after set-up (the other agents'
    /// message preparation is their work, not the target's). A live model's training is
    /// measured apart (train_s) and taken out of elapsed_s, as a table's recorded training
    /// time never enters it.
    start: Instant,
    timing: bool,
    pub(crate) rows: Vec<TraceRow>,
}

impl Tracer {
    pub(crate) fn new(
        spec: &Spec,
        label: &str,
        run: usize,
        landscape: Arc<Landscape>,
        n: usize,
    ) -> Self {
        Tracer {
            label: label.to_string(),
            run,
            landscape,
            best: vec![f64::NEG_INFINITY; n],
            cumulative: vec![0.0; n],
            trained: vec![0.0; n],
            start: Instant::now(),
            timing: spec.output.timing,
            rows: Vec::with_capacity(n * (spec.evaluations() + spec.initial_points)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &mut self,
        slot: usize,
        q: &Query,
        y: f64,
        iteration: i64,
        params: u64,
        f: f64,
        cost: f64,
        training_s: f64,
    ) {
        let landscape = &*self.landscape;
        let opt = landscape.optimum(q.agent);
        self.trained[slot] += cost;
        self.best[slot] = self.best[slot].max(f);
        if iteration > 0
            && let Some(o) = opt
        {
            self.cumulative[slot] += o - f;
        }
        let best = self.best[slot];
        self.rows.push(TraceRow {
            algorithm: self.label.to_string(),
            run: self.run,
            agent: q.agent,
            iteration,
            x_index: q.point.index,
            x: q.point.x.clone(),
            raw: landscape.space.raw(&q.point),
            source: if f.is_nan() {
                "failed".to_string()
            } else {
                q.source.to_string()
            },
            y,
            f,
            metric: landscape.metric(f),
            best_f: best,
            best_metric: landscape.metric(best),
            simple_regret: opt.map(|o| o - best),
            cumulative_regret: opt.map(|_| self.cumulative[slot]),
            elapsed_s: self.timing.then(|| {
                if iteration > 0 {
                    (self.start.elapsed().as_secs_f64() - training_s).max(0.0)
                } else {
                    0.0
                }
            }),
            params_sent: params,
            train_s: self.trained[slot],
            clock_s: None,
        });
    }

    /// Stamps the last recorded row with the simulated time its evaluation finished.
    pub(crate) fn finished_at(&mut self, clock_s: f64) {
        if let Some(r) = self.rows.last_mut() {
            r.clock_s = Some(clock_s);
        }
    }
}
