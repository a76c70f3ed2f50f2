//! The numerics every layer above rests on, with no knowledge of BO: dense linear algebra
//! (plain Rust, so results do not depend on the CPU), fast elementwise functions and their
//! AVX2 copies, and the seeded random streams (one per run, agent and purpose). Nothing here
//! imports from outside `math` (the `multiversion!` macro aside). The optimisers are not here
//! yet: `optim` also holds the acquisition maximiser over a search space, which imports the
//! objective layer's regions, and must be split before its L-BFGS can move in.

pub mod fastmath;
pub mod linalg;
pub mod rng;
pub mod simd;
