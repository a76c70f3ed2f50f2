//! `fbo privacy`: the privacy loss of a mechanism, from the accountants (`crate::privacy`).
use crate::error::{FboError, Result};
use crate::privacy::{self, Accountant, Mechanism, Sampling};
use clap::Args;

#[derive(Args)]
pub struct PrivacyArgs {
    /// Sampling rate q in (0, 1] (poisson and fixed).
    #[arg(long)]
    q: Option<f64>,
    /// Noise multiplier z > 0.
    #[arg(long)]
    z: f64,
    /// Number of rounds composed.
    #[arg(long)]
    steps: u64,
    /// Target delta in (0, 1).
    #[arg(long)]
    delta: f64,
    /// Accountant [default: all three].
    #[arg(long, value_parser = ["rdp-int", "rdp", "pld"])]
    accountant: Option<String>,
    /// poisson: each agent independently with probability q; fixed: exactly round(N q)
    /// of the N = --agents agents, accounted at the realised rate round(N q) / N;
    /// allocation: each agent in --per-agent of the --steps rounds, one in each of that
    /// many consecutive periods, chosen uniformly and hidden (no q).
    #[arg(long, default_value = "poisson", value_parser = ["poisson", "fixed", "allocation"])]
    sampling: String,
    /// Rounds each agent takes part in (--sampling allocation) [default: 1].
    #[arg(long)]
    per_agent: Option<u64>,
    /// Number of agents N (required with --sampling fixed).
    #[arg(long)]
    agents: Option<usize>,
    /// Neighbouring relation [default: add-remove for poisson, replace-one for fixed].
    #[arg(long, value_parser = ["add-remove", "replace-one"])]
    adjacency: Option<String>,
    /// central: the server adds Gaussian noise to the sum; distributed: each contributor
    /// adds discrete Gaussian shares before secure aggregation (`server.noise`), which needs
    /// --agents, --clip and --dim.
    #[arg(long, default_value = "central", value_parser = ["central", "distributed"])]
    noise: String,
    /// Clip norm S of an agent's vector (--noise distributed).
    #[arg(long)]
    clip: Option<f64>,
    /// Coordinates d = P x M of the summed vector (--noise distributed).
    #[arg(long)]
    dim: Option<usize>,
}

pub fn cmd_privacy(a: PrivacyArgs) -> Result<()> {
    let bad = |key: &str, msg: String| FboError::spec("fbo privacy", key, msg);
    if a.sampling == "allocation" {
        return privacy_allocation(a);
    }
    if a.per_agent.is_some() {
        return Err(bad(
            "--per-agent",
            "applies only to --sampling allocation".into(),
        ));
    }
    let PrivacyArgs {
        q,
        z,
        steps,
        delta,
        accountant,
        sampling,
        agents,
        adjacency,
        per_agent: _,
        noise,
        clip,
        dim,
    } = a;
    let q = q.ok_or_else(|| {
        bad(
            "--q",
            format!("--sampling {sampling} needs the sampling rate --q in (0, 1]"),
        )
    })?;
    let sampling: Sampling = sampling.parse().map_err(|e: String| bad("--sampling", e))?;
    let adjacency: privacy::Adjacency = match adjacency {
        Some(a) => a.parse().map_err(|e: String| bad("--adjacency", e))?,
        None => privacy::Adjacency::default_for(sampling),
    };
    let nominal = Mechanism {
        q,
        z,
        steps,
        sampling,
        adjacency,
        noise: privacy::Noise::Gaussian,
    };
    privacy::check(&nominal, delta).map_err(|e| bad("--adjacency", e))?;
    // Every refusal comes before the first line of output.
    // The mechanism accounted, and for fixed-size sampling (selected, of N agents).
    let (m, fixed) = match (sampling, agents) {
        (Sampling::Fixed, None) => {
            return Err(bad(
                "--agents",
                "--sampling fixed needs --agents N: the server selects round(N q) of N agents, and epsilon depends on that realised rate".into(),
            ));
        }
        (_, Some(0)) => return Err(bad("--agents", "must be >= 1, got 0".into())),
        (Sampling::Fixed, Some(n)) => {
            let k = privacy::checked_fixed_sample_size(q, n).map_err(|e| bad("--q", e))?;
            (
                Mechanism::server(q, z, steps, sampling, adjacency, n),
                Some((k, n)),
            )
        }
        (Sampling::Poisson, _) => (nominal, None),
        (Sampling::Allocation { .. }, _) => unreachable!("--sampling allocation returned above"),
    };
    let m = match noise.as_str() {
        "distributed" => m.distributed(distributed_bound(agents, clip, dim, z)?),
        _ => {
            if let Some((key, _)) = [("--clip", clip.is_some()), ("--dim", dim.is_some())]
                .into_iter()
                .find(|(_, set)| *set)
            {
                return Err(bad(key, "applies only with --noise distributed".into()));
            }
            m
        }
    };
    let which: Vec<Accountant> = match accountant {
        Some(a) => vec![a.parse().map_err(|e: String| bad("--accountant", e))?],
        None => Accountant::ALL
            .into_iter()
            .filter(|&a| privacy::supports(a, sampling, adjacency).is_ok())
            .filter(|&a| privacy::supports_noise(a, m.noise).is_ok())
            .collect(),
    };
    for &acc in &which {
        privacy::supports(acc, sampling, adjacency).map_err(|e| bad("--accountant", e))?;
        privacy::supports_noise(acc, m.noise).map_err(|e| bad("--accountant", e))?;
    }
    match fixed {
        Some((k, n)) => println!(
            "sampling fixed: {k} of {n} agents per round, accounted at q = {}; adjacency {}",
            m.q,
            adjacency.name()
        ),
        None => println!(
            "sampling poisson: accounted at q = {}; adjacency {}",
            m.q,
            adjacency.name()
        ),
    }
    if let privacy::Noise::Distributed(d) = m.noise {
        println!(
            "noise distributed: discrete Gaussian shares from at least the threshold's contributors, on a lattice of 2^-{} (sensitivity inflated by {:.3e} for rounding); pld through the continuous Gaussian mechanism it is within a factor e^G of, G = {:.3e} over the rounds",
            crate::math::fixed::FRACTION_BITS,
            d.inflation - 1.0,
            d.stand_in(&m).map_or(f64::INFINITY, |(_, gap)| gap)
        );
    }
    print_epsilons(which, &m, delta)
}

/// `--noise distributed`'s bound (`privacy::discrete::Distributed::bound`), from the keys it
/// needs.
fn distributed_bound(
    agents: Option<usize>,
    clip: Option<f64>,
    dim: Option<usize>,
    z: f64,
) -> Result<privacy::discrete::Distributed> {
    let bad = |key: &str, msg: String| FboError::spec("fbo privacy", key, msg);
    let need = |key: &str, what: &str| {
        bad(
            key,
            format!("--noise distributed needs {key}: {what}, on which the shares' bound depends"),
        )
    };
    let n = agents.ok_or_else(|| need("--agents", "the number of agents N"))?;
    let clip = clip.ok_or_else(|| need("--clip", "the clip norm S"))?;
    let dim = dim.ok_or_else(|| need("--dim", "the coordinates d = P x M"))?;
    if !(clip.is_finite() && clip > 0.0) {
        return Err(bad(
            "--clip",
            format!("must be a finite number > 0, got {clip}"),
        ));
    }
    if dim == 0 {
        return Err(bad("--dim", "must be >= 1, got 0".into()));
    }
    privacy::discrete::Distributed::bound(n, dim, clip, z, crate::math::fixed::FRACTION_BITS)
        .map_err(|e| bad("--noise", e))
}

/// Each accountant's epsilon, one line each (pld with its bracket).
fn print_epsilons(which: Vec<Accountant>, m: &Mechanism, delta: f64) -> Result<()> {
    let bad = |key: &str, msg: String| FboError::spec("fbo privacy", key, msg);
    for acc in which {
        // The bracket is the Gaussian's; distributed noise has the stand-in's upper bound.
        if acc == Accountant::Pld && m.noise == privacy::Noise::Gaussian {
            let b = privacy::pld::epsilon_bounds(m, delta, privacy::pld::DEFAULT_INTERVAL)
                .map_err(|e| bad("--steps", e))?;
            println!(
                "pld      epsilon {}  (true epsilon in [{}, {}]; loss grid {:.2e})",
                shown(b.upper),
                privacy::show_lower(b.lower, 6),
                privacy::show_upper(b.upper, 6),
                b.interval
            );
        } else {
            let g = privacy::epsilon(acc, m, delta).map_err(|e| bad("", e))?;
            let how = match g.order {
                Some(o) => format!("optimal order {o}"),
                None => "an upper bound, through the Gaussian stand-in".into(),
            };
            println!("{:<8} epsilon {}  ({how})", acc.name(), shown(g.epsilon));
        }
    }
    Ok(())
}

/// An upper bound on epsilon as printed: rounded up, so that what is read off the screen
/// (with pld's lower end rounded down) brackets the true epsilon as the full values do.
fn shown(e: f64) -> String {
    if e.is_finite() {
        privacy::show_upper(e, 6)
    } else {
        "inf (no finite epsilon can be certified at this delta)".into()
    }
}

/// `fbo privacy --sampling allocation`: each agent in `--per-agent` of `--steps` rounds, one
/// in each of that many consecutive periods (`privacy::allocation`). Its own accountant, under
/// add-remove adjacency; the keys of the rate-based schemes are refused, not ignored.
fn privacy_allocation(a: PrivacyArgs) -> Result<()> {
    let bad = |key: &str, msg: String| FboError::spec("fbo privacy", key, msg);
    let refused = [
        ("--q", a.q.is_some()),
        ("--agents", a.agents.is_some()),
        ("--accountant", a.accountant.is_some()),
        (
            "--adjacency",
            a.adjacency.as_deref().is_some_and(|s| s != "add-remove"),
        ),
        // Central noise only here; a spec's privacy.csv accounts allocation with distributed.
        ("--noise", a.noise != "central"),
        ("--clip", a.clip.is_some()),
        ("--dim", a.dim.is_some()),
    ];
    if let Some((key, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(bad(
            key,
            "does not apply to --sampling allocation: each agent takes part in --per-agent of --steps rounds (no rate), accounted by random allocation's own accountant under add-remove adjacency".into(),
        ));
    }
    let k = a.per_agent.unwrap_or(1);
    let eps = privacy::allocation::epsilon(a.z, a.steps, k, a.delta).map_err(|r| {
        use privacy::allocation::Input;
        let key = match r.input {
            Input::Sigma => "--z",
            Input::Rounds => "--steps",
            Input::PerAgent => "--per-agent",
            Input::Delta => "--delta",
        };
        bad(key, r.message)
    })?;
    let sizes = privacy::allocation::periods(a.steps, k);
    let sizes: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    println!(
        "sampling allocation: each agent in one round of each of {k} period(s) of {} rounds, chosen uniformly and hidden; adjacency add-remove",
        sizes.join(", ")
    );
    println!("allocation epsilon {}", shown(eps));
    Ok(())
}
