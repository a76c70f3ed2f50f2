//! The numerics every layer above rests on, with no knowledge of BO: dense linear algebra
//! (plain Rust, so results do not depend on the CPU), fast elementwise functions and their
//! AVX2 copies, fixed point for exact sums and its hex text, the seeded random streams (one per run, agent and purpose), and L-BFGS (plain
//! and box-constrained). Nothing here imports from outside `math` (the `multiversion!` macro
//! aside).

pub mod fastmath;
pub mod fixed;
pub mod hex;
pub mod linalg;
pub mod optim;
pub mod rng;
pub mod simd;
