//! Models whose validation metric fills the hyperparameter-response tables (`fbo tabulate`).
//! Numerics live here, apart from the datasets and the tabulation driver.

pub mod cnn;
pub mod logreg;
pub mod metrics;
pub mod platt;
pub mod svm;
