//! Settings of the survey's federated frameworks (issue 27; the survey of federated BO, Sec. III)
//! as keys of an `[[algorithm]]` table: consensus, the constrained GP on shared near-optimal
//! designs (`cgp`), shared design densities, federated GP hyperparameters (`fedgp`) and
//! FMTBO. Each kind reads only its own keys and refuses the others', so a key that does
//! nothing is never accepted silently.

use super::Check;
use super::algorithm::EiForm;
use crate::error::Result;

/// CGP-UCB's default UCB beta.
pub const CGP_BETA: f64 = 4.0;

/// The acquisition an agent maximises on its own model (consensus, fedgp).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decide {
    Ts,
    Ei(EiForm),
    /// A fixed beta, or None for Srinivas et al.'s schedule.
    Ucb {
        beta: Option<f64>,
    },
}

/// How FedGP's server solves eq. 9, the weighted sum of the agents' likelihoods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FedGpSolver {
    /// Yue and Kontar's FedAvg: local gradient steps, the server averages the results.
    FedAvg,
    /// The server runs L-BFGS on the sum; each round every agent returns its likelihood
    /// and gradient at the server's point. With identical agents it is the centralised fit.
    Lbfgs,
}

/// How consensus's W(t) moves (survey eq. 6, and the leader scheme of its ref. [24]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsensusSchedule {
    /// W(t) = (t/T) I + (1 - t/T) J/K: from the uniform average to I at the last iteration.
    Linear,
    /// The linear W(t) moved towards the round's leader (the agent whose candidate scores
    /// highest on its own acquisition).
    Leader,
}

/// What an agent shares as the density of its optimum (survey eq. 8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Density {
    /// A Gaussian at its best observed point.
    Incumbent,
    /// Gaussians at the argmaxes of `samples` Thompson samples (the empirical distribution of
    /// the optimum's location, smoothed by the width).
    Thompson { samples: usize },
    /// A Gaussian at the maximiser of its LCB mu - eta sigma (the survey's shared design of
    /// eq. 7): where the agent is confident it is good, which a noisy incumbent is not.
    Lcb { eta: f64 },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Framework {
    /// Not one of the survey's frameworks.
    None,
    Consensus {
        decide: Decide,
        schedule: ConsensusSchedule,
        /// Each agent's own share of W(0) = a I + (1 - a) J/K (0: the plain average, as the
        /// survey writes it; 1 would never mix).
        own_weight: f64,
        /// z: Gaussian noise of s.d. z sqrt(D) / 2 on every coordinate of a shared
        /// candidate (z times half the unit box's diameter); None: candidates are sent as
        /// they are.
        noise: Option<f64>,
    },
    Cgp {
        /// eta in the shared designs' LCB mu - eta sigma (survey eq. 7).
        eta: f64,
        /// Joint posterior draws at the borrowed designs per decision (the rejection budget).
        samples: usize,
        /// The agent's UCB beta (`CGP_BETA` unless set); None for Srinivas et al.'s schedule.
        beta: Option<f64>,
        /// Who shares with whom each round: None, every agent with all others (as the paper
        /// states eq. 7); Some(k), random groups of k drawn anew every round (GUIDE-FBO's
        /// CGP-UCB), each agent borrowing from its own group only.
        group: Option<usize>,
        /// `rejection = "pattern"`: the satisfaction-pattern rule (`cgp::reject_pattern`);
        /// false: the fixed budget of `samples` draws.
        pattern: bool,
    },
    DesignDensity {
        density: Density,
        /// Standard deviation of each Gaussian, in unit-box coordinates.
        width: f64,
        /// The density's power is beta / t (piBO's decay); None: iterations / 10 (piBO's
        /// recommendation).
        beta: Option<f64>,
        /// The power held at beta / T (T = iterations) instead of decaying as beta / t (the
        /// peer's choice: the others' beliefs weigh the same throughout).
        constant_power: bool,
        /// `ei = "log"`: the score's EI term is log-EI (finite where EI underflows), not
        /// ln of EI floored at 1e-300.
        log_ei: bool,
    },
    FedGp {
        decide: Decide,
        /// How the server solves eq. 9.
        solver: FedGpSolver,
        /// Communication rounds per iteration (the most, with `tolerance` or `lbfgs`).
        rounds: usize,
        local_steps: usize,
        step_size: f64,
        /// Stop an iteration's rounds once the federated log likelihood per observation
        /// improves by less than this; None: always `rounds`.
        tolerance: Option<f64>,
    },
    Fmtbo {
        /// Weight of the global model's EI (1 - gamma: the local model's).
        gamma: f64,
        /// Fraction of the agents, those ranking the shared points most like an agent's own
        /// model, averaged into its global model.
        fraction: f64,
        /// Size of the shared point set the rankings are taken on.
        shared_points: usize,
        /// The global GP: the averaged length scales as they are (false), or a refit of the
        /// agent's own likelihood started from them (true; the peer implementation's).
        refit: bool,
        /// `ei = "log"`: the acquisition is ln(gamma EI_global + (1 - gamma) EI_local),
        /// formed from log-EI (finite where both EIs underflow), not the plain sum.
        log_ei: bool,
    },
}

impl Decide {
    fn name(self) -> String {
        match self {
            Decide::Ts => "TS".into(),
            Decide::Ei(form) => form.label(),
            Decide::Ucb { beta: None } => "UCB".into(),
            Decide::Ucb { beta: Some(b) } => format!("UCB beta={b}"),
        }
    }
}

impl Framework {
    /// The algorithm's default label.
    pub fn label(&self) -> String {
        match self {
            Framework::None => String::new(),
            Framework::Consensus {
                decide,
                schedule,
                own_weight,
                noise,
            } => format!(
                "Consensus {}{}{}{}",
                decide.name(),
                if *schedule == ConsensusSchedule::Leader {
                    " leader"
                } else {
                    ""
                },
                if *own_weight > 0.0 {
                    format!(" W0={own_weight}")
                } else {
                    String::new()
                },
                noise.map(|z| format!(" z={z}")).unwrap_or_default()
            ),
            Framework::Cgp { group, pattern, .. } => format!(
                "CGP-UCB{}{}",
                group.map(|k| format!(" groups of {k}")).unwrap_or_default(),
                if *pattern { " pattern" } else { "" }
            ),
            Framework::DesignDensity {
                density,
                constant_power,
                log_ei,
                ..
            } => {
                let base = match density {
                    Density::Incumbent => "Design density".to_string(),
                    Density::Thompson { samples } => format!("Design density TS x{samples}"),
                    Density::Lcb { .. } => "Design density LCB".to_string(),
                };
                let base = if *constant_power {
                    format!("{base} beta/T")
                } else {
                    base
                };
                if *log_ei {
                    format!("{base} log-EI")
                } else {
                    base
                }
            }
            Framework::FedGp { decide, solver, .. } => format!(
                "FedGP {}{}",
                decide.name(),
                match solver {
                    FedGpSolver::FedAvg => "",
                    FedGpSolver::Lbfgs => " L-BFGS",
                }
            ),
            Framework::Fmtbo { refit, log_ei, .. } => format!(
                "FMTBO{}{}",
                if *refit { " refit" } else { "" },
                if *log_ei { " log-EI" } else { "" }
            ),
        }
    }
}

impl Framework {
    /// What one agent releases per iteration as a differentially private mechanism, for the
    /// accountants: consensus's noisy candidates. The candidate lies in the unit box, so
    /// replacing the agent's data by any other moves it by at most the diameter sqrt(D):
    /// centred on the box it has norm <= sqrt(D) / 2 =: S, noise z S, and every agent sends in
    /// every round, which is fbo's fixed-size replace-one mechanism at q = 1 (sensitivity 2S =
    /// sqrt(D)). None for a framework that releases nothing noisy.
    pub fn mechanism(&self, steps: u64) -> Option<crate::privacy::Mechanism> {
        match self {
            Framework::Consensus { noise: Some(z), .. } => Some(crate::privacy::Mechanism {
                q: 1.0,
                z: *z,
                steps,
                sampling: crate::privacy::Sampling::Fixed,
                adjacency: crate::privacy::Adjacency::ReplaceOne,
                noise: crate::privacy::Noise::Gaussian,
            }),
            _ => None,
        }
    }
}

/// The keys these frameworks add to an `[[algorithm]]` table, as read.
#[derive(Default)]
pub(super) struct RawFramework {
    pub acquisition: Option<String>,
    pub schedule: Option<String>,
    pub noise: Option<f64>,
    pub eta: Option<f64>,
    pub samples: Option<i64>,
    pub beta: Option<f64>,
    /// The form of EI, checked and parsed with the algorithm's other keys.
    pub ei: Option<EiForm>,
    pub density: Option<String>,
    pub width: Option<f64>,
    pub rounds: Option<i64>,
    pub tolerance: Option<f64>,
    pub global: Option<String>,
    pub power: Option<String>,
    pub local_steps: Option<i64>,
    pub step_size: Option<f64>,
    pub gamma: Option<f64>,
    pub fraction: Option<f64>,
    pub shared_points: Option<i64>,
    pub group: Option<i64>,
    pub own_weight: Option<f64>,
    pub rejection: Option<String>,
    pub solver: Option<String>,
}

/// The framework keys each kind takes (beta and samples are also read by ucb and rgpe,
/// and checked there).
pub(super) fn keys_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "consensus" => &[
            "acquisition",
            "schedule",
            "noise",
            "beta",
            "ei",
            "own_weight",
        ],
        "cgp" => &["eta", "samples", "beta", "group", "rejection"],
        "design-density" => &["density", "width", "samples", "beta", "power", "eta", "ei"],
        "fedgp" => &[
            "acquisition",
            "rounds",
            "local_steps",
            "step_size",
            "beta",
            "ei",
            "tolerance",
            "solver",
        ],
        "fmtbo" => &["gamma", "fraction", "shared_points", "global", "ei"],
        _ => &[],
    }
}

impl RawFramework {
    /// The framework keys that are set, by name.
    fn set(&self) -> Vec<&'static str> {
        let mut s = Vec::new();
        let mut note = |name, on: bool| {
            if on {
                s.push(name)
            }
        };
        note("acquisition", self.acquisition.is_some());
        note("schedule", self.schedule.is_some());
        note("noise", self.noise.is_some());
        note("eta", self.eta.is_some());
        note("density", self.density.is_some());
        note("width", self.width.is_some());
        note("rounds", self.rounds.is_some());
        note("tolerance", self.tolerance.is_some());
        note("global", self.global.is_some());
        note("power", self.power.is_some());
        note("local_steps", self.local_steps.is_some());
        note("step_size", self.step_size.is_some());
        note("gamma", self.gamma.is_some());
        note("fraction", self.fraction.is_some());
        note("shared_points", self.shared_points.is_some());
        note("group", self.group.is_some());
        note("own_weight", self.own_weight.is_some());
        note("rejection", self.rejection.is_some());
        note("solver", self.solver.is_some());
        s
    }
}

/// Reads the framework of an algorithm of kind `kind` (its name in the spec); `key` names
/// a key of this algorithm's table for messages. Refuses a framework key the kind does not
/// take.
pub(super) fn parse(
    c: &Check,
    kind: &str,
    raw: &RawFramework,
    key: &dyn Fn(&str) -> String,
) -> Result<Framework> {
    let own = keys_of(kind);
    if let Some(k) = raw.set().into_iter().find(|k| !own.contains(k)) {
        let takers: Vec<&str> = ["consensus", "cgp", "design-density", "fedgp", "fmtbo"]
            .into_iter()
            .filter(|f| keys_of(f).contains(&k))
            .collect();
        return Err(c.err(
            &key(k),
            format!("applies only to kind = {}", takers.join(" or ")),
        ));
    }
    let beta = match raw.beta {
        Some(b) if !(b.is_finite() && b > 0.0 && b <= 1e6) => {
            return Err(c.err(&key("beta"), format!("must be in (0, 1e6], got {b}")));
        }
        b => b,
    };
    let k = Keys { c, raw, key, beta };
    match kind {
        "consensus" => consensus(&k),
        "cgp" => cgp(&k),
        "design-density" => design_density(&k),
        "fedgp" => fedgp(&k),
        "fmtbo" => fmtbo(&k),
        _ => Ok(Framework::None),
    }
}

/// A framework's table as written, with what checks its keys.
struct Keys<'a> {
    c: &'a Check<'a>,
    raw: &'a RawFramework,
    key: &'a dyn Fn(&str) -> String,
    /// `beta`, checked.
    beta: Option<f64>,
}

impl Keys<'_> {
    fn err(&self, k: &str, why: impl Into<String>) -> crate::error::FboError {
        self.c.err(&(self.key)(k), why.into())
    }

    /// Key `k`'s value `v` (or `default`) in [lo, hi], or (lo, hi] with `open_lo`.
    fn real(
        &self,
        k: &str,
        v: Option<f64>,
        default: f64,
        lo: f64,
        hi: f64,
        open_lo: bool,
    ) -> Result<f64> {
        let x = v.unwrap_or(default);
        let ok = x.is_finite() && (if open_lo { x > lo } else { x >= lo }) && x <= hi;
        if ok {
            Ok(x)
        } else {
            Err(self.err(
                k,
                format!(
                    "must be in {}{lo}, {hi}], got {x}",
                    if open_lo { "(" } else { "[" }
                ),
            ))
        }
    }

    fn int(&self, k: &str, v: Option<i64>, default: i64, lo: i64, hi: i64) -> Result<usize> {
        self.c.int(&(self.key)(k), v, default, lo, hi)
    }

    /// The acquisition, `default` when unwritten (consensus: TS, the survey's; FedGP: EI,
    /// measured better: docs/results.md, "FedGP's solver").
    fn decide(&self, default: Decide) -> Result<Decide> {
        let d = match self.raw.acquisition.as_deref() {
            None => default,
            Some("ts") => Decide::Ts,
            Some("ei") => Decide::Ei(self.raw.ei.unwrap_or(EiForm::DEFAULT)),
            Some("ucb") => Decide::Ucb { beta: self.beta },
            Some(o) => {
                return Err(self.err(
                    "acquisition",
                    format!("unknown acquisition \"{o}\"; allowed: \"ts\", \"ei\", \"ucb\""),
                ));
            }
        };
        if self.beta.is_some() && !matches!(d, Decide::Ucb { .. }) {
            return Err(self.err("beta", "applies only with acquisition = \"ucb\""));
        }
        if self.raw.ei.is_some() && !matches!(d, Decide::Ei(_)) {
            return Err(self.err("ei", "applies only with acquisition = \"ei\""));
        }
        Ok(d)
    }

    /// Where EI enters a sum or product with other terms (FMTBO, design densities): `ei =
    /// "log"` (true) or `"plain"` (false, unwritten: these methods' published form). The
    /// noisy incumbent belongs to one posterior's EI, which these mix: refused.
    fn ei_in_a_product(&self) -> Result<bool> {
        match self.raw.ei {
            None | Some(EiForm::Plain) => Ok(false),
            Some(EiForm::Log) => Ok(true),
            Some(EiForm::LogNoisy) => Err(self.err(
                "ei",
                "allowed here: \"plain\" (the default), \"log\"; \"log-noisy\" applies to kind = ei, consensus and fedgp",
            )),
        }
    }

    /// A two-way choice: false for `no`, true for `yes` (`what` names it, `allowed` lists).
    fn flag(
        &self,
        k: &str,
        v: Option<&str>,
        what: &str,
        no: &str,
        yes: &str,
        allowed: &str,
    ) -> Result<bool> {
        self.c.choice(&(self.key)(k), v, false, what, allowed, |s| {
            if s == no {
                Some(false)
            } else if s == yes {
                Some(true)
            } else {
                None
            }
        })
    }
}

fn consensus(k: &Keys) -> Result<Framework> {
    let raw = k.raw;
    Ok(Framework::Consensus {
        decide: k.decide(Decide::Ts)?,
        own_weight: k.real("own_weight", raw.own_weight, 0.0, 0.0, 1.0, false)?,
        schedule: match raw.schedule.as_deref() {
            None | Some("linear") => ConsensusSchedule::Linear,
            Some("leader") => ConsensusSchedule::Leader,
            Some(o) => {
                return Err(k.err(
                    "schedule",
                    format!("unknown schedule \"{o}\"; allowed: \"linear\", \"leader\""),
                ));
            }
        },
        noise: match raw.noise {
            None => None,
            Some(_) if raw.schedule.as_deref() == Some("leader") => {
                return Err(k.err(
                    "noise",
                    "does not go with schedule = \"leader\": electing the leader shares every agent's acquisition value, which no noise covers, so no privacy loss could be stated",
                ));
            }
            Some(z) => Some(k.real("noise", Some(z), 0.0, 0.0, 1e3, true)?),
        },
    })
}

fn cgp(k: &Keys) -> Result<Framework> {
    let raw = k.raw;
    Ok(Framework::Cgp {
        eta: k.real("eta", raw.eta, 1.0, 0.0, 100.0, false)?,
        samples: k.int("samples", raw.samples, 100, 1, 1_000_000)?,
        // GUIDE-FBO's CGP-UCB setting (UCB beta 4); Srinivas et al.'s schedule explores
        // far more and lost to it on Rosenbrock-4 (docs/algorithms.md).
        beta: Some(k.beta.unwrap_or(CGP_BETA)),
        group: match raw.group {
            None => None,
            Some(_) => Some(k.int("group", raw.group, 4, 2, 100_000)?),
        },
        pattern: k.flag(
            "rejection",
            raw.rejection.as_deref(),
            "rejection rule",
            "budget",
            "pattern",
            "\"budget\", \"pattern\"",
        )?,
    })
}

fn design_density(k: &Keys) -> Result<Framework> {
    let raw = k.raw;
    let no_samples = || match raw.samples {
        Some(_) => Err(k.err("samples", "applies only with density = \"thompson\"")),
        None => Ok(()),
    };
    let no_eta = || match raw.eta {
        Some(_) => Err(k.err("eta", "applies only with density = \"lcb\"")),
        None => Ok(()),
    };
    let density = match raw.density.as_deref() {
        None | Some("incumbent") => {
            no_samples()?;
            no_eta()?;
            Density::Incumbent
        }
        Some("thompson") => {
            no_eta()?;
            Density::Thompson {
                samples: k.int("samples", raw.samples, 20, 1, 10_000)?,
            }
        }
        Some("lcb") => {
            no_samples()?;
            Density::Lcb {
                eta: k.real("eta", raw.eta, 1.0, 0.0, 100.0, false)?,
            }
        }
        Some(o) => {
            return Err(k.err(
                "density",
                format!("unknown density \"{o}\"; allowed: \"incumbent\", \"thompson\", \"lcb\""),
            ));
        }
    };
    Ok(Framework::DesignDensity {
        density,
        width: k.real("width", raw.width, 0.1, 0.0, 10.0, true)?,
        beta: k.beta,
        constant_power: k.flag(
            "power",
            raw.power.as_deref(),
            "power",
            "beta/t",
            "beta/T",
            "\"beta/t\" (decaying), \"beta/T\" (constant)",
        )?,
        log_ei: k.ei_in_a_product()?,
    })
}

fn fedgp(k: &Keys) -> Result<Framework> {
    let raw = k.raw;
    let solver = fedgp_solver(k.c, raw, k.key)?;
    let default_rounds = match solver {
        FedGpSolver::FedAvg => 10,
        FedGpSolver::Lbfgs => 50,
    };
    Ok(Framework::FedGp {
        decide: k.decide(Decide::Ei(raw.ei.unwrap_or(EiForm::DEFAULT)))?,
        solver,
        rounds: k.int("rounds", raw.rounds, default_rounds, 1, 10_000)?,
        local_steps: k.int("local_steps", raw.local_steps, 5, 1, 10_000)?,
        step_size: k.real("step_size", raw.step_size, 0.05, 0.0, 10.0, true)?,
        tolerance: match raw.tolerance {
            None => None,
            Some(t) => Some(k.real("tolerance", Some(t), 0.0, 0.0, 1e3, true)?),
        },
    })
}

fn fmtbo(k: &Keys) -> Result<Framework> {
    let raw = k.raw;
    Ok(Framework::Fmtbo {
        gamma: k.real("gamma", raw.gamma, 0.5, 0.0, 1.0, false)?,
        fraction: k.real("fraction", raw.fraction, 0.8, 0.0, 1.0, true)?,
        shared_points: k.int("shared_points", raw.shared_points, 20, 2, 10_000)?,
        refit: k.flag(
            "global",
            raw.global.as_deref(),
            "global model",
            "average",
            "refit",
            "\"average\", \"refit\"",
        )?,
        log_ei: k.ei_in_a_product()?,
    })
}

/// FedGP's solver. The FedAvg keys (local steps, step size, tolerance) are refused with L-BFGS,
/// where they would do nothing.
fn fedgp_solver(
    c: &Check,
    raw: &RawFramework,
    key: &dyn Fn(&str) -> String,
) -> Result<FedGpSolver> {
    let solver = c.choice(
        &key("solver"),
        raw.solver.as_deref(),
        FedGpSolver::Lbfgs,
        "solver",
        "\"fedavg\", \"lbfgs\"",
        |s| match s {
            "fedavg" => Some(FedGpSolver::FedAvg),
            "lbfgs" => Some(FedGpSolver::Lbfgs),
            _ => None,
        },
    )?;
    // FedAvg's keys name its solver; the default is L-BFGS (docs/results.md, "FedGP's
    // solver"), so they need it named.
    let fedavg_only = [
        ("local_steps", raw.local_steps.is_some()),
        ("step_size", raw.step_size.is_some()),
        ("tolerance", raw.tolerance.is_some()),
    ];
    if solver == FedGpSolver::Lbfgs
        && let Some((k, _)) = fedavg_only.iter().find(|(_, set)| *set)
    {
        return Err(c.err(
            &key(k),
            "applies only to solver = \"fedavg\" (the default, \"lbfgs\", stops on its own criteria, `rounds` capping it)",
        ));
    }
    Ok(solver)
}
