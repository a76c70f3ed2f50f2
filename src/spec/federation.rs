//! `[federation]`: how many agents and which act (targets), what the senders observed, and
//! how the target weighs them (the FTS paper's p_t, agent weights and message mode).

use super::*;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFederation {
    agents: Option<i64>,
    observations: Option<i64>,
    observations_from: Option<String>,
    p_t: Option<toml::Value>,
    p1_equals_p2: Option<bool>,
    agent_weights: Option<toml::Value>,
    messages: Option<String>,
}

/// N (set by a table or data, required for a command) and with the FTS family's target the
/// agents in all; fills `objective.targets` (every agent where unwritten, agent 0 in the FTS
/// paper's family).
pub(super) fn check_agents(
    c: &Check,
    rf: &RawFederation,
    objective: &mut ObjectiveSpec,
) -> Result<(usize, usize)> {
    let agents = match &objective.kind {
        ObjectiveKind::Table { agents, .. } | ObjectiveKind::Model { agents, .. } => {
            if rf.agents.is_some() {
                let by = match objective.kind {
                    ObjectiveKind::Table { .. } => "the table",
                    _ => "the data",
                };
                return Err(c.err(
                    "federation.agents",
                    format!("is set by {by}: choose participants with objective.agents"),
                ));
            }
            agents.len()
        }
        ObjectiveKind::Command(_) => {
            if rf.agents.is_none() {
                return Err(c.err(
                    "federation.agents",
                    "missing: how many agents evaluate the command (each gets its FBO_AGENT, 0..N-1)",
                ));
            }
            c.int("federation.agents", rf.agents, 1, 1, 10_000)?
        }
        _ => c.int("federation.agents", rf.agents, 50, 1, 100_000)?,
    };
    let total_agents = match objective.kind {
        ObjectiveKind::SyntheticFts => agents + 1,
        _ => agents,
    };
    objective.targets = match objective.targets.is_empty() {
        false => {
            if let Some(&t) = objective.targets.iter().find(|&&t| t >= total_agents) {
                return Err(c.err(
                    "objective.targets",
                    format!(
                        "target {t} is not one of the {total_agents} agents (0..{})",
                        total_agents - 1
                    ),
                ));
            }
            objective.targets.clone()
        }
        true => match objective.kind {
            ObjectiveKind::SyntheticFts => vec![0],
            _ => (0..total_agents).collect(),
        },
    };
    Ok((agents, total_agents))
}

/// The FTS family's sharing settings, defaults for every algorithm's table.
pub(super) struct Sharing {
    pub p_t: Schedule,
    pub p1: bool,
    pub messages: MessageMode,
}

pub(super) fn check_federation(
    c: &Check,
    rf: RawFederation,
    agents: usize,
    total_agents: usize,
    objective: &ObjectiveSpec,
    iterations: usize,
) -> Result<(FederationSpec, Sharing)> {
    let observations = c.int("federation.observations", rf.observations, 40, 0, MAX_OBS)?;
    let p1 = rf.p1_equals_p2.unwrap_or(true);
    let fed_pt = c.schedule("federation.p_t", rf.p_t.as_ref(), p1, iterations)?;
    let fed_messages = c.messages(
        "federation.messages",
        rf.messages.as_deref(),
        MessageMode::OneShot,
    )?;
    let weights = agent_weights(c, rf.agent_weights, total_agents, objective.targets.len())?;
    let observations_from = match rf.observations_from.as_deref() {
        None | Some("random") => ObservationSource::Random,
        Some("ts") => ObservationSource::Ts,
        Some(o) => {
            return Err(c.err(
                "federation.observations_from",
                format!("unknown source \"{o}\"; allowed: \"random\", \"ts\""),
            ));
        }
    };
    let federation = FederationSpec {
        agents,
        observations,
        observations_from,
        weights,
    };

    Ok((
        federation,
        Sharing {
            p_t: fed_pt,
            p1,
            messages: fed_messages,
        },
    ))
}

/// `federation.agent_weights`: "uniform" or one weight per agent other than the target,
/// normalised.
fn agent_weights(
    c: &Check,
    v: Option<toml::Value>,
    total_agents: usize,
    targets: usize,
) -> Result<Vec<f64>> {
    // P_N ranges over the agents other than the target.
    let others = total_agents - 1;
    if v.as_ref().is_some_and(|w| w.is_array()) && targets > 1 {
        return Err(c.err(
            "federation.agent_weights",
            "a list of weights needs a single target (objective.targets); with several use \"uniform\"",
        ));
    }
    let uniform = vec![1.0 / others.max(1) as f64; others];
    Ok(match v {
        None => uniform,
        Some(toml::Value::String(s)) if s == "uniform" => uniform,
        Some(toml::Value::Array(items)) => {
            if items.len() != others {
                return Err(c.err(
                    "federation.agent_weights",
                    format!(
                        "must list one weight per agent other than the target ({others}), got {}",
                        items.len()
                    ),
                ));
            }
            let mut w = Vec::with_capacity(others);
            for (i, it) in items.iter().enumerate() {
                let v = it.as_float().or_else(|| it.as_integer().map(|x| x as f64));
                match v {
                    Some(v) if v.is_finite() && v >= 0.0 => w.push(v),
                    _ => {
                        return Err(c.err(
                            &format!("federation.agent_weights[{i}]"),
                            "must be a finite number >= 0",
                        ));
                    }
                }
            }
            let total: f64 = w.iter().sum();
            if total <= 0.0 {
                return Err(c.err("federation.agent_weights", "must not all be zero"));
            }
            w.iter().map(|v| v / total).collect()
        }
        Some(other) => {
            return Err(c.err(
                "federation.agent_weights",
                format!(
                    "must be \"uniform\" or a list of weights, got {}",
                    other.type_str()
                ),
            ));
        }
    })
}
