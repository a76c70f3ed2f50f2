//! Federated GP hyperparameters (survey Sec. III-C1, eq. 9; Yue and Kontar, TPAMI 2024, its
//! ref. [32]): the kernel's hyperparameters are learned jointly on the agents' log marginal
//! likelihoods, by L-BFGS at the server on their sum (each round every agent returns its
//! likelihood and gradient: p + 3 numbers) or by the paper's FedAvg (each agent returns its
//! locally stepped hyperparameters: p + 2 numbers: p length scales, the signal and the noise
//! variance), and every agent then decides on its own data under that shared prior (TS, UCB
//! or EI).

use super::agent::{Learner, Rule, observe_all};
use super::consensus::rule_of;
use super::{Algorithm, Query, RunContext, Source};
use crate::error::Result;
use crate::math::optim::{LbfgsOptions, lbfgs_box};
use crate::spec::frameworks::{FedGpSolver, Framework};
use crate::surrogate::gp::{Distances, GpHyper, HyperModel, log_marginal_likelihood};
use ndarray::Array1;
use rayon::prelude::*;

/// One agent's share of eq. 9: its data's distances, its (standardised) targets, and its
/// weight p_k = n_k / sum n.
pub struct Local {
    pub dist: Distances,
    pub y: Array1<f64>,
    pub weight: f64,
}

/// FedAvg on sum_k p_k L_k (eq. 9) in the fit's log coordinates (ln l_1..ln l_p, ln s^2,
/// ln s_n^2): every round each agent starts from the global theta, takes `steps` gradient
/// ascent steps of size `eta` on its L_k = (log p(y_k | theta) + log prior / K) / n_k,
/// clamped to the model's bounds, and the server averages the results with weights p_k.
/// With L_k per observation sum_k p_k L_k is the centralised log posterior over sum n, so one
/// local step per round is gradient ascent on the centralised fit (the test below).
/// The federated objective at theta: sum_k p_k (log p(y_k | theta) + log prior / K) / n_k,
/// what FedAvg ascends (None where some agent's kernel matrix is not positive definite).
pub fn federated_objective(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
) -> Option<f64> {
    federated_value(theta, locals, model, dim, false).map(|(f, _)| f)
}

/// `federated_objective` and, with `grad`, its gradient in the log coordinates: the weighted
/// sum of what each agent returns in a round of the L-BFGS solver (its L_k and gradient).
/// The agents' terms are summed in agent order, so the result does not depend on threads.
fn federated_value(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    grad: bool,
) -> Option<(f64, Vec<f64>)> {
    let k = locals.len() as f64;
    let h = GpHyper::from_log(model.kernel, model.mean, theta);
    let (prior, prior_grad) = model.prior.log_density(theta, dim);
    let terms: Vec<Option<(f64, Vec<f64>)>> = locals
        .par_iter()
        .map(|l| log_marginal_likelihood(&l.dist, l.y.view(), &h, grad))
        .collect();
    let total: f64 = locals.iter().map(|l| l.weight).sum();
    let mut f = 0.0;
    let mut g = vec![0.0; if grad { theta.len() } else { 0 }];
    for (l, term) in locals.iter().zip(terms) {
        let (lml, lg) = term?;
        let w = l.weight / l.y.len().max(1) as f64 / total;
        f += w * (lml + prior / k);
        for (i, gi) in g.iter_mut().enumerate() {
            *gi += w * (lg[i] + prior_grad[i] / k);
        }
    }
    Some((f, g))
}

/// Eq. 9 solved by L-BFGS at the server, from `theta`, inside the model's bounds: every
/// evaluation is one communication round (each agent returns its L_k and gradient at the
/// server's point), at most `rounds` of them. Returns the shared hyperparameters and the
/// rounds taken. On identical agents this is the centralised fit's ascent from `theta`.
pub fn lbfgs_rounds(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
) -> (Vec<f64>, usize) {
    let bounds = model.bounds.log_box(theta.len() - 2);
    let (lo, hi): (Vec<f64>, Vec<f64>) = bounds.iter().copied().unzip();
    let start: Vec<f64> = theta
        .iter()
        .zip(&bounds)
        .map(|(t, b)| t.clamp(b.0, b.1))
        .collect();
    let mut taken = 0;
    // Past the budget the server asks no more: the line search sees no value and stops.
    let mut objective = |x: &[f64]| {
        if taken == rounds {
            return None;
        }
        taken += 1;
        federated_value(x, locals, model, dim, true)
            .map(|(f, g)| (-f, g.iter().map(|v| -v).collect()))
    };
    let opts = LbfgsOptions {
        max_iter: rounds,
        grad_tol: 1e-5,
        ..Default::default()
    };
    let found = lbfgs_box(&mut objective, &start, &lo, &hi, opts).map(|m| m.x);
    (found.unwrap_or(start), taken)
}

/// `fedavg` for at most `rounds` rounds, stopping early once a round improves the federated
/// objective by less than `tolerance` (when given); returns the shared hyperparameters and
/// the rounds taken. Each early-stopping round costs one more likelihood per agent (the
/// server asks each agent for its L_k at the new theta: one number).
#[allow(clippy::too_many_arguments)]
pub fn fedavg_until(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
    steps: usize,
    eta: f64,
    tolerance: Option<f64>,
) -> (Vec<f64>, usize) {
    let Some(tol) = tolerance else {
        return (
            fedavg(theta, locals, model, dim, rounds, steps, eta),
            rounds,
        );
    };
    let mut global = theta.to_vec();
    let mut last = federated_objective(&global, locals, model, dim);
    for r in 1..=rounds {
        global = fedavg(&global, locals, model, dim, 1, steps, eta);
        let now = federated_objective(&global, locals, model, dim);
        if let (Some(a), Some(b)) = (last, now)
            && b - a < tol
        {
            return (global, r);
        }
        last = now;
    }
    (global, rounds)
}

pub fn fedavg(
    theta: &[f64],
    locals: &[Local],
    model: &HyperModel,
    dim: usize,
    rounds: usize,
    steps: usize,
    eta: f64,
) -> Vec<f64> {
    let bounds = model.bounds.log_box(theta.len() - 2);
    let k = locals.len() as f64;
    let mut global = theta.to_vec();
    for _ in 0..rounds {
        let updates: Vec<Vec<f64>> = locals
            .par_iter()
            .map(|l| {
                let n = l.y.len().max(1) as f64;
                let mut th = global.clone();
                for _ in 0..steps {
                    let h = GpHyper::from_log(model.kernel, model.mean, &th);
                    let Some((_, g)) = log_marginal_likelihood(&l.dist, l.y.view(), &h, true)
                    else {
                        // Not positive definite here: this agent stays where it is.
                        break;
                    };
                    let prior = model.prior.log_density(&th, dim).1;
                    for (i, t) in th.iter_mut().enumerate() {
                        *t = (*t + eta * (g[i] + prior[i] / k) / n).clamp(bounds[i].0, bounds[i].1);
                    }
                }
                th
            })
            .collect();
        let total: f64 = locals.iter().map(|l| l.weight).sum();
        global = (0..global.len())
            .map(|i| {
                updates
                    .iter()
                    .zip(locals)
                    .map(|(u, l)| u[i] * l.weight)
                    .sum::<f64>()
                    / total
            })
            .collect();
    }
    global
}

pub struct FedGp {
    agents: Vec<Learner>,
    targets: Vec<usize>,
    rule: Rule,
    solver: FedGpSolver,
    rounds: usize,
    local_steps: usize,
    step_size: f64,
    tolerance: Option<f64>,
    /// FedAvg rounds taken before each iteration so far (what was sent).
    rounds_taken: Vec<usize>,
    /// The shared hyperparameters of the last iteration (log coordinates), FedAvg's warm
    /// start for the next.
    global: Vec<f64>,
    /// The shared hyperparameters every agent decided its last query with.
    decided: Option<GpHyper>,
}

impl FedGp {
    pub fn new(ctx: &RunContext) -> Self {
        let Framework::FedGp {
            decide,
            solver,
            rounds,
            local_steps,
            step_size,
            tolerance,
        } = ctx.algorithm.framework
        else {
            unreachable!("fedgp specs carry fedgp settings")
        };
        let n = ctx.landscape.agents();
        let agents: Vec<Learner> = (0..n).map(|a| Learner::for_run(ctx, a)).collect();
        let global = ctx.spec.surrogate.own.initial.to_log();
        FedGp {
            agents,
            targets: (0..n).collect(),
            rule: rule_of(decide),
            solver,
            rounds,
            local_steps,
            step_size,
            tolerance,
            rounds_taken: Vec::new(),
            global,
            decided: None,
        }
    }

    /// The shared hyperparameters for this iteration: FedAvg from the last ones.
    fn learn(&mut self) -> GpHyper {
        let settings = self.agents[0].settings().clone();
        let model = settings.model;
        let dim = self.agents[0].space().dim();
        let n_min = self.agents.iter().map(Learner::n_obs).min().unwrap_or(0);
        let p = if model.ard.applies(n_min, dim) {
            dim
        } else {
            1
        };
        // One length scale becomes one per axis (their geometric mean) when ARD starts.
        let p_now = self.global.len() - 2;
        if p_now != p {
            let mean = self.global[..p_now].iter().sum::<f64>() / p_now as f64;
            let tail = self.global[p_now..].to_vec();
            self.global = std::iter::repeat_n(mean, p).chain(tail).collect();
        }
        let total: usize = self.agents.iter().map(Learner::n_obs).sum();
        let locals: Vec<Local> = self
            .agents
            .iter()
            .map(|a| Local {
                dist: Distances::new(a.inputs().view(), p > 1),
                y: a.scaled_ys(),
                weight: a.n_obs() as f64 / total.max(1) as f64,
            })
            .collect();
        let (global, taken) = match self.solver {
            FedGpSolver::FedAvg => fedavg_until(
                &self.global,
                &locals,
                &model,
                dim,
                self.rounds,
                self.local_steps,
                self.step_size,
                self.tolerance,
            ),
            FedGpSolver::Lbfgs => lbfgs_rounds(&self.global, &locals, &model, dim, self.rounds),
        };
        self.global = global;
        self.rounds_taken.push(taken);
        GpHyper::from_log(model.kernel, model.mean, &self.global)
    }
}

impl Algorithm for FedGp {
    fn belief(&self, agent: usize) -> Option<super::agent::Belief> {
        self.agents
            .get(agent)
            .map(|l| l.belief(self.decided.as_ref()))
    }

    fn targets(&self) -> &[usize] {
        &self.targets
    }

    fn propose(&mut self, _t: usize) -> Result<Vec<Query>> {
        let hyper = self.learn();
        self.decided = Some(hyper.clone());
        let rule = self.rule;
        self.agents
            .par_iter_mut()
            .map(|a| {
                Ok(Query {
                    agent: a.agent,
                    point: a.decide(rule, Some(&hyper))?.point,
                    source: match rule {
                        Rule::Thompson => Source::Own,
                        _ => Source::Acquisition,
                    },
                })
            })
            .collect()
    }

    fn observe(&mut self, queries: &[Query], ys: &[f64]) {
        observe_all(&mut self.agents, queries, ys);
    }

    /// Each agent sends its local hyperparameters (p + 2 numbers; FedAvg) or its likelihood
    /// and gradient (p + 3; L-BFGS) in every communication round of every iteration.
    fn params_sent(&self, t: usize) -> u64 {
        let rounds: usize = self.rounds_taken.iter().take(t).sum();
        // With a tolerance each FedAvg round also returns one likelihood per agent.
        let per_round = self.global.len()
            + usize::from(self.tolerance.is_some() || self.solver == FedGpSolver::Lbfgs);
        (per_round * rounds) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};
    use crate::surrogate::gp::{
        Ard, FitBudget, HyperBounds, HyperPrior, Kernel, MeanFn, fit_hyperparameters,
    };
    use ndarray::Array2;
    use rand::Rng as _;

    /// Four identical agents on 25 noisy points of sin(6x), their model, and the centralised
    /// fit on the same data (20 starts) in log coordinates.
    fn identical_agents() -> (Vec<Local>, HyperModel, Vec<f64>) {
        let mut rng = stream(5, 0, 0, Purpose::AgentData);
        let x = Array2::from_shape_fn((25, 1), |_| rng.random::<f64>());
        let y = crate::surrogate::gp::standardize(
            &x.column(0)
                .iter()
                .map(|v| (6.0 * v).sin() + 0.1 * rng.random::<f64>())
                .collect::<Vec<_>>(),
        );
        let model = HyperModel {
            kernel: Kernel::Se,
            ard: Ard::Off,
            bounds: HyperBounds {
                length_scale: (1e-3, 10.0),
                signal_var: (1e-2, 20.0),
                noise_var: (1e-6, 1.0),
            },
            prior: HyperPrior::None,
            mean: MeanFn::Zero,
        };
        let central = fit_hyperparameters(
            x.view(),
            y.view(),
            &model,
            FitBudget {
                starts: 20,
                restarts: 20,
            },
            None,
            &mut rng,
        )
        .unwrap()
        .to_log();
        let locals: Vec<Local> = (0..4)
            .map(|_| Local {
                dist: Distances::new(x.view(), false),
                y: y.clone(),
                weight: 0.25,
            })
            .collect();
        (locals, model, central)
    }

    #[test]
    fn fedavg_on_identical_agents_reaches_the_centralised_fit() {
        let (locals, model, central) = identical_agents();
        let start = GpHyper::isotropic(Kernel::Se, 0.3, 1.0, 0.01).to_log();
        let fed = fedavg(&start, &locals, &model, 1, 3000, 3, 0.05);
        // Stopping once a round gains less than 1e-10 per observation: fewer rounds, the same
        // optimum to the test's precision, and exactly fedavg with that many rounds.
        let (until, taken) = fedavg_until(&start, &locals, &model, 1, 3000, 3, 0.05, Some(1e-10));
        // 1193 rounds here (1e-7 stops after far fewer, short of the optimum on this flat
        // likelihood: the tolerance is per observation and per round).
        assert!(taken < 3000, "{taken}");
        assert_eq!(until, fedavg(&start, &locals, &model, 1, taken, 3, 0.05));
        let before = fedavg(&start, &locals, &model, 1, taken - 1, 3, 0.05);
        let gain = federated_objective(&until, &locals, &model, 1).unwrap()
            - federated_objective(&before, &locals, &model, 1).unwrap();
        assert!(gain < 1e-10, "{gain}");
        for (a, b) in until.iter().zip(&central) {
            assert!((a - b).abs() < 2e-3, "{until:?} vs {central:?}");
        }
        for (a, b) in fed.iter().zip(&central) {
            assert!(
                (a - b).abs() < 2e-3,
                "fedavg {fed:?} vs centralised {central:?}"
            );
        }
    }

    #[test]
    fn lbfgs_on_identical_agents_reaches_the_centralised_fit_in_few_rounds() {
        let (locals, model, central) = identical_agents();
        let start = GpHyper::isotropic(Kernel::Se, 0.3, 1.0, 0.01).to_log();
        let (found, taken) = lbfgs_rounds(&start, &locals, &model, 1, 200);
        // FedAvg took 1193 rounds to the same precision (the test above).
        assert!(taken < 100, "{taken}");
        for (a, b) in found.iter().zip(&central) {
            assert!(
                (a - b).abs() < 2e-3,
                "lbfgs {found:?} vs centralised {central:?}"
            );
        }
        // A budget of rounds is a cap: it stops there, where it has got to.
        let (capped, used) = lbfgs_rounds(&start, &locals, &model, 1, 3);
        assert_eq!(used, 3);
        assert!(
            federated_objective(&capped, &locals, &model, 1).unwrap()
                > federated_objective(&start, &locals, &model, 1).unwrap()
        );
    }

    #[test]
    fn the_federated_gradient_is_the_objectives_derivative() {
        let (locals, model, _) = identical_agents();
        let theta = [-1.0, 0.2, -3.0];
        let (_, g) = federated_value(&theta, &locals, &model, 1, true).unwrap();
        for i in 0..3 {
            let mut up = theta;
            let mut down = theta;
            up[i] += 1e-6;
            down[i] -= 1e-6;
            let fd = (federated_objective(&up, &locals, &model, 1).unwrap()
                - federated_objective(&down, &locals, &model, 1).unwrap())
                / 2e-6;
            assert!(
                (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                "{i}: {fd} vs {}",
                g[i]
            );
        }
    }
}
