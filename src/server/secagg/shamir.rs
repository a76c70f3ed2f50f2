//! Shamir's t-of-n secret sharing of a 32-byte secret over the prime field GF(2^61 - 1).
//!
//! The secret is cut into five 7-byte limbs (each below 2^56 < p); every limb is the constant
//! term of its own random polynomial of degree t - 1, and share x (1..=n) holds the five
//! polynomials' values at x. Any t shares give the limbs back by Lagrange interpolation at 0;
//! any t - 1 are consistent with every secret (for each candidate constant term exactly one
//! polynomial of degree t - 1 passes through them), so they say nothing about it.
use rand::RngCore;

/// The Mersenne prime 2^61 - 1.
pub const P: u64 = (1 << 61) - 1;
const LIMBS: usize = 5;
const LIMB_BYTES: usize = 7;

/// One holder's share: the evaluation point x and the five limbs' polynomial values there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    pub x: u64,
    pub y: [u64; LIMBS],
}

fn add(a: u64, b: u64) -> u64 {
    let s = a + b; // both < 2^61: no overflow
    if s >= P { s - P } else { s }
}

fn sub(a: u64, b: u64) -> u64 {
    if a >= b { a - b } else { a + P - b }
}

fn mul(a: u64, b: u64) -> u64 {
    let m = a as u128 * b as u128;
    // 2^61 = 1 (mod p): fold the high bits onto the low ones.
    let folded = (m & P as u128) as u64 + (m >> 61) as u64;
    if folded >= P { folded - P } else { folded }
}

fn pow(mut a: u64, mut e: u64) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, a);
        }
        a = mul(a, a);
        e >>= 1;
    }
    r
}

/// The inverse of a nonzero element (Fermat: a^(p - 2)).
fn inv(a: u64) -> u64 {
    pow(a, P - 2)
}

/// A uniform field element, by rejection.
fn element<R: RngCore + ?Sized>(rng: &mut R) -> u64 {
    loop {
        let v = rng.next_u64() >> 3;
        if v < P {
            return v;
        }
    }
}

fn limbs(secret: &[u8; 32]) -> [u64; LIMBS] {
    let mut padded = [0u8; LIMBS * LIMB_BYTES];
    padded[..32].copy_from_slice(secret);
    let mut out = [0u64; LIMBS];
    for (k, chunk) in padded.chunks(LIMB_BYTES).enumerate() {
        let mut b = [0u8; 8];
        b[..LIMB_BYTES].copy_from_slice(chunk);
        out[k] = u64::from_le_bytes(b);
    }
    out
}

/// The secret whose limbs these are, or None if a limb cannot be one (a reconstruction from
/// shares that do not belong together).
fn secret_of(l: &[u64; LIMBS]) -> Option<[u8; 32]> {
    let mut padded = [0u8; LIMBS * LIMB_BYTES];
    for (k, &v) in l.iter().enumerate() {
        if v >> (8 * LIMB_BYTES) != 0 {
            return None;
        }
        padded[k * LIMB_BYTES..(k + 1) * LIMB_BYTES]
            .copy_from_slice(&v.to_le_bytes()[..LIMB_BYTES]);
    }
    if padded[32..].iter().any(|&b| b != 0) {
        return None;
    }
    let mut s = [0u8; 32];
    s.copy_from_slice(&padded[..32]);
    Some(s)
}

/// n shares of `secret`, any `t` of which recover it (1 <= t <= n < p).
pub fn split<R: RngCore + ?Sized>(
    secret: &[u8; 32],
    t: usize,
    n: usize,
    rng: &mut R,
) -> Vec<Share> {
    assert!(
        1 <= t && t <= n,
        "a threshold 1 <= t <= n, got t = {t}, n = {n}"
    );
    let constant = limbs(secret);
    // coefficients[k] = [a_1, ..., a_{t-1}] of limb k's polynomial.
    let coefficients: Vec<Vec<u64>> = (0..LIMBS)
        .map(|_| (1..t).map(|_| element(rng)).collect())
        .collect();
    (1..=n as u64)
        .map(|x| {
            let mut y = [0u64; LIMBS];
            for k in 0..LIMBS {
                // Horner from the highest coefficient down to the constant term.
                let mut v = 0;
                for &a in coefficients[k].iter().rev() {
                    v = add(mul(v, x), a);
                }
                y[k] = add(mul(v, x), constant[k]);
            }
            Share { x, y }
        })
        .collect()
}

/// The Lagrange basis polynomial of node i among `xs`, evaluated at `at`:
/// prod over j != i of (at - x_j) / (x_i - x_j); None if two nodes coincide.
fn basis(xs: &[u64], i: usize, at: u64) -> Option<u64> {
    let (mut num, mut den) = (1u64, 1u64);
    for (j, &xj) in xs.iter().enumerate() {
        if j == i {
            continue;
        }
        if xj % P == xs[i] % P {
            return None;
        }
        num = mul(num, sub(at % P, xj % P));
        den = mul(den, sub(xs[i] % P, xj % P));
    }
    Some(mul(num, inv(den)))
}

/// The secret behind `shares` (at least t of them, distinct x), by Lagrange interpolation at
/// 0. With fewer than t it returns some other value (or None), never the secret but by chance.
pub fn combine(shares: &[Share]) -> Option<[u8; 32]> {
    if shares.is_empty() {
        return None;
    }
    let xs: Vec<u64> = shares.iter().map(|s| s.x).collect();
    let mut l = [0u64; LIMBS];
    for (i, si) in shares.iter().enumerate() {
        let b = basis(&xs, i, 0)?;
        for (acc, &y) in l.iter_mut().zip(&si.y) {
            *acc = add(*acc, mul(y, b));
        }
    }
    secret_of(&l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn field_arithmetic_matches_closed_forms() {
        // (p - 1)^2 = 1, 2^61 = 1, and a * a^-1 = 1 (mod p).
        assert_eq!(mul(P - 1, P - 1), 1);
        assert_eq!(mul(1 << 60, 2), 1);
        for a in [1u64, 2, 3, 12345, P - 2, 1 << 40] {
            assert_eq!(mul(a, inv(a)), 1, "{a}");
        }
        assert_eq!(sub(3, 5), P - 2);
        assert_eq!(add(P - 1, 2), 1);
    }

    #[test]
    fn any_t_shares_recover_the_secret_and_t_minus_1_fit_every_secret() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut secret = [0u8; 32];
        rng.fill_bytes(&mut secret);
        secret[31] = 0xff; // the top byte of the last limb used in full
        let (t, n) = (4, 7);
        let shares = split(&secret, t, n, &mut rng);
        // Every 4-subset of the 7 shares.
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != t {
                continue;
            }
            let pick: Vec<Share> = (0..n)
                .filter(|i| mask >> i & 1 == 1)
                .map(|i| shares[i])
                .collect();
            assert_eq!(combine(&pick), Some(secret), "subset {mask:b}");
        }
        // Three shares and any candidate secret: the degree-3 polynomial through (0, candidate)
        // and the three shares exists and its other values are shares of the candidate, so the
        // three shares are as likely under the candidate as under the secret.
        let three = &shares[..3];
        let mut other = [0u8; 32];
        rng.fill_bytes(&mut other);
        let lo = limbs(&other);
        let fourth_x = 9u64;
        // Lagrange through (0, candidate) and the three shares, evaluated at fourth_x.
        let xs: Vec<u64> = std::iter::once(0)
            .chain(three.iter().map(|s| s.x))
            .collect();
        let mut y = [0u64; LIMBS];
        for (k, yk) in y.iter_mut().enumerate() {
            let ys = std::iter::once(lo[k]).chain(three.iter().map(|s| s.y[k]));
            *yk = ys.enumerate().fold(0, |v, (i, yi)| {
                add(v, mul(yi, basis(&xs, i, fourth_x).unwrap()))
            });
        }
        let mut forged = three.to_vec();
        forged.push(Share { x: fourth_x, y });
        assert_eq!(combine(&forged), Some(other));
        // And three alone do not give the secret.
        assert_ne!(combine(three), Some(secret));
    }

    #[test]
    fn a_threshold_of_one_is_the_secret_in_every_share() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let secret = [42u8; 32];
        for s in split(&secret, 1, 3, &mut rng) {
            assert_eq!(combine(&[s]), Some(secret));
        }
    }
}
