//! Wider vectors where the CPU has them, with the same bits everywhere.
//!
//! fbo is compiled for baseline x86-64 (two doubles per vector). The hot loops of a Thompson
//! sample and a GP likelihood evaluation (the sampled function over a tensor grid, the kernel
//! matrix, the triangular inverse) run element-wise: every lane does the same IEEE multiplies,
//! adds, divisions and square roots in the same order, and Rust never fuses a multiply and an
//! add. So compiling them a second time with AVX2 (four doubles per vector; FMA stays off)
//! changes their speed, not a single bit of their results, and [`multiversion!`] picks that
//! copy at run time when the CPU has AVX2. `tests/reproducibility.rs` checks the claim end to
//! end: a trace computed with `FBO_SIMD=baseline` is byte-identical to one computed without.

use std::sync::OnceLock;

/// Whether the AVX2 copies may run: the CPU has AVX2 and `FBO_SIMD` is not `baseline`.
pub fn avx2() -> bool {
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| {
        let allowed = std::env::var("FBO_SIMD").map_or(true, |v| v != "baseline");
        #[cfg(target_arch = "x86_64")]
        {
            allowed && std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = allowed;
            false
        }
    })
}

/// Defines a function whose body is compiled twice, for the baseline target and with AVX2,
/// and runs the AVX2 copy when [`avx2`] says so. The body and what it inlines (`#[inline]`
/// helpers such as `linalg::dot` and `fastmath::fast_exp`) get the wider vectors; the body
/// must not rely on anything else that would differ between the copies.
#[macro_export]
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn wide($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if $crate::math::simd::avx2() {
                    // SAFETY: avx2() checked that this CPU has AVX2.
                    return unsafe { wide($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}
