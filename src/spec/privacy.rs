//! `[privacy]`: delta and the accountants, checked against every private algorithm's
//! mechanism; the agreement's and the budget's settings completed here, where delta is known.

use super::*;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrivacy {
    delta: Option<f64>,
    accountants: Option<Vec<String>>,
}

pub(super) fn check_privacy(
    c: &Check,
    raw: Option<RawPrivacy>,
    algorithms: &mut [AlgorithmSpec],
    top_server: &RawServer,
    total_agents: usize,
    iterations: usize,
) -> Result<PrivacySpec> {
    let rp = raw.unwrap_or_default();
    let delta = rp.delta.unwrap_or((total_agents as f64).powf(-1.1));
    let private = algorithms
        .iter()
        .any(|a| a.server.as_ref().is_some_and(|s| s.dp.is_some()));
    // [server]'s privacy keys are defaults for private algorithms; with none in the spec
    // they would change nothing, which is never what their author meant.
    if !private {
        for key in server::DP_KEYS {
            if top_server.sets(key) {
                return Err(c.err(
                    &format!("server.{key}"),
                    "applies only with dp = true, and no algorithm of this spec is private (set server.dp = true, or remove the key)",
                ));
            }
        }
    }
    if rp.delta.is_none() && private && !(delta > 0.0 && delta < 1.0) {
        return Err(c.err(
            "privacy.delta",
            format!(
                "the default N^-1.1 is {delta} for N = {total_agents} agent(s), not a valid delta; set privacy.delta in (0, 1), e.g. 1e-5"
            ),
        ));
    }
    if rp.delta.is_some() && !(delta > 0.0 && delta < 1.0) {
        return Err(c.err("privacy.delta", format!("must be in (0, 1), got {delta}")));
    }
    set_allocations(c, algorithms, iterations, delta)?;
    let accountants_written = rp.accountants.is_some();
    let allocating = algorithms.iter().any(|a| {
        a.server
            .as_ref()
            .and_then(|s| s.dp)
            .is_some_and(|dp| matches!(dp.sampling, Sampling::Allocation { .. }))
    });
    let accountants = parse_accountants(c, rp.accountants, allocating)?;
    check_supported(
        c,
        algorithms,
        &accountants,
        accountants_written,
        total_agents,
    )?;
    settle_agreements(c, algorithms)?;
    set_budgets(c, algorithms, iterations, total_agents, delta)?;
    Ok(PrivacySpec { delta, accountants })
}

/// `privacy.accountants`: each named once, in the order written; unwritten, every one (the
/// rate-based ones, and random allocation's where an algorithm allocates).
fn parse_accountants(
    c: &Check,
    list: Option<Vec<String>>,
    allocating: bool,
) -> Result<Vec<Accountant>> {
    Ok(match list {
        None if allocating => [&Accountant::ALL[..], &[Accountant::Allocation]].concat(),
        None => Accountant::ALL.to_vec(),
        Some(list) => {
            let mut out = Vec::new();
            for (i, a) in list.iter().enumerate() {
                let acc: Accountant = a
                    .parse()
                    .map_err(|e: String| c.err(&format!("privacy.accountants[{i}]"), e))?;
                if !out.contains(&acc) {
                    out.push(acc);
                }
            }
            out
        }
    })
}

/// Each private algorithm's sampling, adjacency (and, where the list is written, noise) has
/// an analysis in every accountant; a fixed-size sample is a whole number of agents.
fn check_supported(
    c: &Check,
    algorithms: &[AlgorithmSpec],
    accountants: &[Accountant],
    accountants_written: bool,
    total_agents: usize,
) -> Result<()> {
    for (i, a) in algorithms.iter().enumerate() {
        if let Some(dp) = a.server.as_ref().and_then(|s| s.dp) {
            for (j, &acc) in accountants.iter().enumerate() {
                // Unwritten, the list holds the accountants of both kinds of scheme, and
                // each algorithm is accounted by those of its own.
                if !accountants_written && !acc.applies_to(dp.sampling) {
                    continue;
                }
                crate::privacy::supports(acc, dp.sampling, dp.adjacency).map_err(|e| {
                    c.err(
                        &a.server_key(i, "adjacency"),
                        format!("{e} (privacy.accountants[{j}] = \"{acc}\")"),
                    )
                })?;
                // Unwritten, the list is every accountant, and each algorithm is
                // accounted by those that have an analysis of its noise.
                if accountants_written {
                    crate::privacy::supports_noise(acc, dp.noise).map_err(|e| {
                        c.err(
                            &a.server_key(i, "noise"),
                            format!("{e} (privacy.accountants[{j}] = \"{acc}\")"),
                        )
                    })?;
                }
            }
        }
        if let Some(dp) = a.server.as_ref().and_then(|s| s.dp)
            && dp.sampling == Sampling::Fixed
        {
            crate::privacy::checked_fixed_sample_size(dp.q, total_agents)
                .map_err(|e| c.err(&a.server_key(i, "q"), e))?;
        }
    }
    Ok(())
}

/// Random allocation's rounds are the spec's iterations (one server round each), and its
/// accountant's ranges checked here, where they are known: the noise multiplier as accounted
/// (with an agreement, the pair's), the rounds and the rounds per agent. Its accountant has
/// distributed noise's only through the Gaussian stand-in (refused without one).
fn set_allocations(
    c: &Check,
    algorithms: &mut [AlgorithmSpec],
    iterations: usize,
    delta: f64,
) -> Result<()> {
    for (i, a) in algorithms.iter_mut().enumerate() {
        let (z_key, k_key, noise_key, sampling_key) = (
            a.server_key(i, "z"),
            a.server_key(i, "rounds_per_agent"),
            a.server_key(i, "noise"),
            a.server_key(i, "sampling"),
        );
        let agreed = a.shared == SharedModel::Agreed;
        let Some(dp) = a.server.as_mut().and_then(|s| s.dp.as_mut()) else {
            continue;
        };
        let Sampling::Allocation { per_agent, .. } = dp.sampling else {
            continue;
        };
        if agreed {
            // The agreement is released at one rate for the whole run; an allocated round's
            // rate is its period's own.
            return Err(c.err(
                &sampling_key,
                "random allocation is not built with shared = \"agreed\" (the agreement's release assumes one rate for every round); use shared = \"fixed\" or sampling = \"poisson\"",
            ));
        }
        crate::privacy::supports_noise(Accountant::Allocation, dp.noise)
            .map_err(|e| c.err(&noise_key, e))?;
        let rounds = iterations as u64;
        dp.sampling = Sampling::Allocation { per_agent, rounds };
        let z = dp.noise_multiplier();
        crate::privacy::allocation::check(z, rounds, per_agent, delta).map_err(|r| {
            use crate::privacy::allocation::Input;
            let key = match r.input {
                Input::Sigma => z_key.as_str(),
                Input::Rounds => "iterations",
                Input::PerAgent => k_key.as_str(),
                Input::Delta => "privacy.delta",
            };
            c.err(key, r.message)
        })?;
    }
    Ok(())
}

/// The agreement is released (and accounted) only when the shared model is agreed: its
/// noise defaults to the messages' z, and its keys are refused without it.
fn settle_agreements(c: &Check, algorithms: &mut [AlgorithmSpec]) -> Result<()> {
    for (i, a) in algorithms.iter_mut().enumerate() {
        let Some(dp) = a.server.as_mut().and_then(|s| s.dp.as_mut()) else {
            continue;
        };
        if a.shared == SharedModel::Agreed
            && matches!(dp.noise, crate::privacy::Noise::Distributed(_))
        {
            return Err(c.err(
                &a.server_key(i, "noise"),
                "distributed noise covers the message vectors only, and shared = \"agreed\" releases an agreement beside them through the server's own noise; use shared = \"fixed\" or noise = \"central\"",
            ));
        }
        if a.shared == SharedModel::Agreed && dp.self_sampling {
            return Err(c.err(
                &a.server_key(i, "self_sampling"),
                "under self-sampling the server must not learn who took part, and shared = \"agreed\" sends each agent's fits beside its masked vector (a fit, or its absence, names the agent); use shared = \"fixed\" or self_sampling = false",
            ));
        }
        match (a.shared, dp.agreement) {
            (SharedModel::Agreed, None) => {
                dp.agreement = Some(server::AgreementDp::default_for(dp.z))
            }
            (SharedModel::Fixed, Some(_)) => {
                return Err(c.err(
                    &a.server_key(i, "agreement_z"),
                    "agreement_z and agreement_clip apply only with shared = \"agreed\" (surrogate.shared or the algorithm's own)",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A privacy budget (`max_epsilon`) as the number of rounds it allows.
fn set_budgets(
    c: &Check,
    algorithms: &mut [AlgorithmSpec],
    iterations: usize,
    total_agents: usize,
    delta: f64,
) -> Result<()> {
    for (i, a) in algorithms.iter_mut().enumerate() {
        let key = a.server_key(i, "max_epsilon");
        if let Some(dp) = a.server.as_mut().and_then(|s| s.dp.as_mut())
            && let Some(b) = dp.budget.as_mut()
        {
            let unlimited = DpSpec {
                budget: None,
                ..*dp
            };
            b.rounds = budget_rounds(&unlimited, b, iterations as u64, total_agents, delta)
                .map_err(|e| c.err(&key, e))?;
        }
    }
    Ok(())
}
