//! The names of a trace's columns: fbo's own, and a point's (its unit coordinates u0, u1, ...,
//! then its hyperparameters by name). Here, below the spec, so that the spec can refuse a
//! hyperparameter named like one of them before anything runs; `run::output` writes them.

/// fbo's own columns before a point's.
pub const BEFORE_POINT: [&str; 5] = ["algorithm", "run", "agent", "iteration", "x_index"];

/// fbo's own columns after a point's.
pub const AFTER_POINT: [&str; 12] = [
    "source",
    "y",
    "f",
    "metric",
    "best_f",
    "best_metric",
    "simple_regret",
    "cumulative_regret",
    "elapsed_s",
    "params_sent",
    "train_s",
    "sim_clock_s",
];

/// The name of unit coordinate k in a trace: `u0`, `u1`, ... (a function's hyperparameters are
/// `x1`, `x2`, ...; names of their own so that no trace has two columns of one name).
pub fn unit_column(k: usize) -> String {
    format!("u{k}")
}

/// Whether `name` is a unit column's (`u0`, `u1`, ...).
pub fn is_unit_column(name: &str) -> bool {
    name.strip_prefix('u')
        .is_some_and(|k| k.parse::<usize>().is_ok())
}

/// Whether a hyperparameter may not be called `name`: it is a column fbo writes itself.
pub fn is_reserved(name: &str) -> bool {
    BEFORE_POINT.contains(&name) || AFTER_POINT.contains(&name) || is_unit_column(name)
}
