//! `[surrogate]` and `[surrogate.own]`: the shared random-feature model behind the
//! messages, and each agent's own GP (kernel, hyperparameter priors and bounds, one length
//! scale or one per axis, refits, the Thompson sampler, a known noise).

use super::*;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSurrogate {
    kernel: Option<String>,
    shared: Option<String>,
    features: Option<i64>,
    length_scale: Option<f64>,
    lambda: Option<f64>,
    kernel_variance: Option<f64>,
    normalize_features: Option<bool>,
    own: Option<RawOwn>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOwn {
    features: Option<i64>,
    ard: Option<toml::Value>,
    ard_margin: Option<f64>,
    prior: Option<String>,
    mean: Option<String>,
    fit: Option<bool>,
    refit_every: Option<i64>,
    fit_starts: Option<i64>,
    fit_restarts: Option<i64>,
    fit_points: Option<i64>,
    normalize_y: Option<bool>,
    sample: Option<String>,
    length_scale: Option<f64>,
    signal_variance: Option<f64>,
    noise_variance: Option<f64>,
    length_scale_bounds: Option<Vec<f64>>,
    signal_variance_bounds: Option<Vec<f64>>,
    noise_variance_bounds: Option<Vec<f64>>,
    noise_variance_known: Option<toml::Value>,
}

/// The checked surrogate and the shared model's number of random features.
pub(super) fn check_surrogate(
    c: &Check,
    raw: Option<RawSurrogate>,
    objective: &ObjectiveSpec,
    total_agents: usize,
) -> Result<(SurrogateSpec, usize)> {
    let rs = raw.unwrap_or_default();
    let kernel = c.choice(
        "surrogate.kernel",
        rs.kernel.as_deref(),
        Kernel::Se,
        "kernel",
        Kernel::NAMES,
        Kernel::parse,
    )?;
    let synthetic_ls = objective.length_scale;
    let features = c.int("surrogate.features", rs.features, 100, 1, MAX_FEATURES)?;
    let length_scale = c.positive("surrogate.length_scale", rs.length_scale, synthetic_ls)?;
    let lambda = c.positive("surrogate.lambda", rs.lambda, objective.noise_var.max(1e-6))?;
    let kernel_variance = c.positive("surrogate.kernel_variance", rs.kernel_variance, 1.0)?;
    let normalize_features = rs.normalize_features.unwrap_or(true);
    let own = own_settings(
        c,
        rs.own.unwrap_or_default(),
        kernel,
        length_scale,
        normalize_features,
        objective,
        total_agents,
    )?;
    // Unwritten: agreed where nothing pins the features and the outputs' scale is the
    // user's (a function, a command, results told by hand), measured better there than
    // the pinned settings (docs/results.md, "Agreed shared models"); the papers' own
    // objectives keep their settings and bytes. Only dp-fts-de takes this default unless
    // the key is written, and a private one only where the agreement is built
    // (spec/algorithm.rs, `shared_model`).
    let pinned = rs.length_scale.is_some() || rs.lambda.is_some() || rs.kernel_variance.is_some();
    let open = objective.kind.is_open();
    let shared = c.choice(
        "surrogate.shared",
        rs.shared.as_deref(),
        if open && !pinned {
            SharedModel::Agreed
        } else {
            SharedModel::Fixed
        },
        "shared model",
        SharedModel::NAMES,
        SharedModel::parse,
    )?;
    let surrogate = SurrogateSpec {
        kernel,
        shared,
        shared_written: rs.shared.is_some(),
        length_scale,
        lambda,
        kernel_variance,
        normalize_features,
        own,
    };

    Ok((surrogate, features))
}

/// The fit's longest length scale on the unit cube where `surrogate.own.length_scale_bounds`
/// is unwritten. A maximum-likelihood fit (`"none"`, the papers') keeps 2: nothing else stops
/// it from switching an axis off on a handful of points. Under the dimension-scaled prior the
/// prior itself does that (its median is 5.8 in 2-D, 18 in 20-D), and a box at 2 would hold
/// every irrelevant axis of a problem hidden among many at a length scale that still
/// decorrelates the points: 18 dead axes at 2 cost Branin in 20-D 22x its regret
/// (docs/results.md, "The length-scale cap").
pub fn max_length_scale(prior: HyperPrior) -> f64 {
    match prior {
        HyperPrior::None => 2.0,
        HyperPrior::DimensionScaled => 20.0,
    }
}

/// `[surrogate.own]`: each agent's GP, its starting hyperparameters from the shared model's
/// where unwritten.
fn own_settings(
    c: &Check,
    ro: RawOwn,
    kernel: Kernel,
    length_scale: f64,
    normalize_features: bool,
    objective: &ObjectiveSpec,
    total_agents: usize,
) -> Result<OwnSettings> {
    let prior = c.choice(
        "surrogate.own.prior",
        ro.prior.as_deref(),
        HyperPrior::DimensionScaled,
        "prior",
        HyperPrior::NAMES,
        HyperPrior::parse,
    )?;
    let bounds = HyperBounds {
        length_scale: c.bounds(
            "surrogate.own.length_scale_bounds",
            ro.length_scale_bounds,
            (0.005, max_length_scale(prior)),
        )?,
        signal_var: c.bounds(
            "surrogate.own.signal_variance_bounds",
            ro.signal_variance_bounds,
            (0.05, 20.0),
        )?,
        noise_var: c.bounds(
            "surrogate.own.noise_variance_bounds",
            ro.noise_variance_bounds,
            (1e-6, 1.0),
        )?,
    };
    let fit = ro.fit.unwrap_or(true);
    let mean = c.choice(
        "surrogate.own.mean",
        ro.mean.as_deref(),
        MeanFn::Constant,
        "mean",
        MeanFn::NAMES,
        MeanFn::parse,
    )?;
    let initial = GpHyper::isotropic(
        kernel,
        c.positive("surrogate.own.length_scale", ro.length_scale, length_scale)?,
        c.positive("surrogate.own.signal_variance", ro.signal_variance, 1.0)?,
        c.positive("surrogate.own.noise_variance", ro.noise_variance, 0.01)?,
    )
    .with_mean(mean);
    let model = HyperModel {
        kernel,
        ard: ard(c, ro.ard.as_ref(), ro.ard_margin)?,
        bounds,
        prior,
        mean,
    };
    Ok(OwnSettings {
        features: c.int("surrogate.own.features", ro.features, 100, 1, MAX_FEATURES)?,
        normalize_features,
        refit_every: if fit {
            Some(c.int("surrogate.own.refit_every", ro.refit_every, 5, 1, MAX_COUNT)?)
        } else {
            None
        },
        fit: {
            let starts = c.int("surrogate.own.fit_starts", ro.fit_starts, 10, 1, 1000)?;
            let restarts = c.int(
                "surrogate.own.fit_restarts",
                ro.fit_restarts,
                3.min(starts as i64),
                1,
                starts as i64,
            )?;
            FitBudget { starts, restarts }
        },
        fit_points: ro
            .fit_points
            .map(|m| c.int("surrogate.own.fit_points", Some(m), m, 20, MAX_OBS))
            .transpose()?,
        model,
        initial,
        normalize_y: ro.normalize_y.unwrap_or(true),
        sampler: c.sampler(
            "surrogate.own.sample",
            ro.sample.as_deref(),
            OwnSampler::Pathwise,
        )?,
        known_noise: known_noise(c, ro.noise_variance_known.as_ref(), objective, total_agents)?,
    })
}

/// `surrogate.own.ard`: one length scale, one per axis, or a rule choosing between them;
/// `surrogate.own.ard_margin` the leave-one-out rule's margin.
fn ard(c: &Check, v: Option<&toml::Value>, margin: Option<f64>) -> Result<Ard> {
    let loo = || -> Result<Ard> {
        let key = "surrogate.own.ard_margin";
        let margin = c.non_negative(key, margin, Ard::LOO_MARGIN)?;
        if margin > 100.0 {
            return Err(c.err(
                key,
                format!("must be in [0, 100] standard errors, got {margin}"),
            ));
        }
        Ok(Ard::Loo { margin })
    };
    let ard = match v {
        // Chosen by measurement (docs/results.md, "One length scale or one per
        // axis"): 2-8x lower regret where few axes matter; its margin of 4 ("The
        // leave-one-out margin") is behind margin 2 nowhere at p < 0.2.
        None => loo()?,
        Some(toml::Value::Boolean(false)) => Ard::Off,
        Some(toml::Value::Boolean(true)) => Ard::On,
        Some(toml::Value::String(s)) if s == "auto" => Ard::AUTO,
        Some(toml::Value::String(s)) if s == "loo" => loo()?,
        Some(toml::Value::Integer(k)) if (1..=1000).contains(k) => Ard::PerAxisFrom(*k as usize),
        Some(other) => {
            return Err(c.err(
                "surrogate.own.ard",
                format!(
                    "must be true, false, \"auto\", \"loo\" or a number of observations per axis in [1, 1000], got {other}"
                ),
            ));
        }
    };
    if margin.is_some() && !matches!(ard, Ard::Loo { .. }) {
        return Err(c.err(
            "surrogate.own.ard_margin",
            "applies to ard = \"loo\" (the default) only: the other forms choose no shape"
                .to_string(),
        ));
    }
    Ok(ard)
}

/// `surrogate.own.noise_variance_known`: a variance > 0, a list of one per agent, or
/// "objective" (the simulated noise `objective.noise_var`, which must then be > 0).
fn known_noise(
    c: &Check,
    v: Option<&toml::Value>,
    objective: &ObjectiveSpec,
    agents: usize,
) -> Result<Vec<f64>> {
    let key = "surrogate.own.noise_variance_known";
    let one = |x: &toml::Value| -> Result<f64> {
        match x.as_float().or_else(|| x.as_integer().map(|i| i as f64)) {
            Some(f) if f.is_finite() && f > 0.0 => Ok(f),
            _ => Err(c.err(
                key,
                format!("must be a variance > 0 on the objective's scale, got {x}"),
            )),
        }
    };
    Ok(match v {
        None => Vec::new(),
        Some(toml::Value::String(s)) if s == "objective" => {
            if objective.noise_var <= 0.0 {
                return Err(c.err(
                    key,
                    "\"objective\" takes objective.noise_var, which is 0 here (a noiseless or measured objective): give the variance",
                ));
            }
            vec![objective.noise_var]
        }
        Some(toml::Value::Array(list)) => {
            if list.len() != agents {
                return Err(c.err(
                    key,
                    format!(
                        "a list needs one variance per agent ({agents}), got {}",
                        list.len()
                    ),
                ));
            }
            list.iter().map(one).collect::<Result<_>>()?
        }
        Some(x) => vec![one(x)?],
    })
}

#[cfg(test)]
mod tests {
    use crate::spec::Spec;
    use std::path::Path;

    /// The fit's length-scale box where `length_scale_bounds` is unwritten: [0.005, 20] under
    /// the default (dimension-scaled) prior, [0.005, 2] under maximum likelihood; a written
    /// box is kept under either.
    #[test]
    fn the_length_scale_cap_follows_the_prior_unless_written() {
        let bounds = |own: &str| {
            let text = format!(
                "name = \"b\"\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n\
                 [surrogate.own]\n{own}\n[[algorithm]]\nkind = \"ts\"\n"
            );
            let s = Spec::parse(&text, Path::new("b.toml")).unwrap();
            s.surrogate.own.model.bounds.length_scale
        };
        assert_eq!(bounds(""), (0.005, 20.0));
        assert_eq!(bounds("prior = \"dimension-scaled\""), (0.005, 20.0));
        assert_eq!(bounds("prior = \"none\""), (0.005, 2.0));
        let pinned = "length_scale_bounds = [0.005, 2.0]";
        assert_eq!(bounds(pinned), (0.005, 2.0));
        let wide = "prior = \"none\"\nlength_scale_bounds = [0.01, 50.0]";
        assert_eq!(bounds(wide), (0.01, 50.0));
    }
}
