//! The initial design (`initial_design`, `initial_design_across_agents`,
//! `initial_points_file`): how each agent's first points are drawn, or which they are.

use super::*;

/// The top-level keys of the initial design, as written.
pub(super) struct RawDesign<'a> {
    pub kind: Option<&'a str>,
    pub across_agents: Option<bool>,
    pub file: Option<&'a str>,
    /// Whether `initial_points` is written (a file must then agree with it).
    pub points_written: bool,
}

/// The initial design and the number of initial points per agent (a file of points fixes
/// it).
pub(super) fn check_initial_design(
    c: &Check,
    raw: &RawDesign,
    objective: &ObjectiveSpec,
    total_agents: usize,
    initial_points: usize,
) -> Result<(crate::design::InitialDesign, usize)> {
    // The initial design: a file of points fixes their number; a design kind how they
    // are drawn.
    let mut initial_points = initial_points;
    let given = match raw.file {
        None => None,
        Some(rel) => {
            let file = c.file.parent().unwrap_or(Path::new(".")).join(rel);
            let (g, n) = crate::design::GivenPoints::read(&file, total_agents)
                .map_err(|e| c.err("initial_points_file", e.to_string()))?;
            if raw.points_written && n != initial_points {
                return Err(c.err(
                    "initial_points",
                    format!(
                        "is {initial_points} but {} gives {n} points per agent; leave it out or make them agree",
                        file.display()
                    ),
                ));
            }
            if g.tells() && !matches!(objective.kind, ObjectiveKind::Command(_)) {
                return Err(c.err(
                    "initial_points_file",
                    format!(
                        "{} has a `value` column: told values are measurements, for command and external objectives; this objective computes its own values (remove the column)",
                        file.display()
                    ),
                ));
            }
            initial_points = n;
            Some(std::sync::Arc::new(g))
        }
    };
    let kind = match raw.kind {
        None => crate::design::DesignKind::Random,
        Some(_) if given.is_some() => {
            return Err(c.err(
                "initial_design",
                "does not go with initial_points_file: the file gives the points",
            ));
        }
        v => c.choice(
            "initial_design",
            v,
            crate::design::DesignKind::Random,
            "design",
            "\"random\", \"lhs\", \"sobol\"",
            crate::design::DesignKind::parse,
        )?,
    };
    if raw.across_agents == Some(true) && kind == crate::design::DesignKind::Random {
        return Err(c.err(
            "initial_design_across_agents",
            "applies to initial_design = \"lhs\" or \"sobol\" (random points have no design to share out)",
        ));
    }
    let initial_design = crate::design::InitialDesign {
        kind,
        across_agents: raw.across_agents.unwrap_or(false),
        given,
    };
    // Initial points are drawn without replacement.
    if let Some(size) = objective.domain_size()
        && initial_points > size
    {
        return Err(c.err(
            "initial_points",
            format!("must be at most the domain size {size}, got {initial_points}"),
        ));
    }
    Ok((initial_design, initial_points))
}
