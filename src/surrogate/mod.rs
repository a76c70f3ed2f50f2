//! Surrogate models. Nothing here knows about federation: random features, the Bayesian
//! linear-regression posterior on them, the exact GP and its hyperparameter fit, and the
//! target's own Thompson sample built from those.

pub mod agreement;
pub mod blr;
pub mod gp;
pub mod kernel;
pub mod own;
pub mod pathwise;
pub mod rff;
