//! Secure aggregation: the server learns the sum of the selected agents' vectors and nothing
//! else (Bonawitz et al., CCS 2017, its honest-but-curious form; docs/algorithms.md "Secure
//! aggregation" states the protocol step by step and its threat model).
//!
//! Each round, over the round's cohort (the agents the server selected):
//! 1. **Advertise.** Every member draws an X25519 key pair for its masks and sends the public
//!    key.
//! 2. **Share.** Every member draws a 32-byte self-mask seed b_u and deals Shamir shares
//!    (threshold t) of b_u and of its mask secret key to every other member (in a deployment
//!    through the server, encrypted to the recipient; here handed over directly).
//! 3. **Masked input.** Member u sends y_u = x_u + PRG(b_u) + sum over v > u of PRG(s_uv) -
//!    sum over v < u of PRG(s_uv) (mod 2^64 per coordinate), s_uv = SHA-256 of the X25519
//!    agreement of u and v. The pairwise masks cancel in the sum; each y_u alone is uniform.
//! 4. **Unmask.** The server names the survivors S (whose y arrived) and the dropped D. Each
//!    survivor answers with its share of b_u for u in S and of u's secret key for u in D,
//!    never both for one u. With t answers the server rebuilds every b_u of S and the secret
//!    keys of D, removes the self masks and the dropped members' pairwise masks, and has
//!    sum over S of x_u. Fewer than t survivors: the round yields nothing.
//!
//! Values travel in fixed point (`encode`, 32 fraction bits) so that sums are exact modular
//! integer sums: independent of the order of addition, hence of threads.
pub mod graph;
pub mod shamir;

pub use graph::Graph;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use shamir::Share;
use x25519_dalek::{PublicKey, StaticSecret};

pub use crate::math::fixed::{FRACTION_BITS, decode, encode};

/// A member's private material for one round: its mask key, its self-mask seed, and the key
/// the shares dealt to it are sealed with (across machines; `seal`).
pub struct Member {
    pub id: usize,
    secret: StaticSecret,
    self_seed: [u8; 32],
    cipher: StaticSecret,
}

/// Step 1's message: the member's two public keys (masks; sealing shares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advert {
    pub id: usize,
    pub public: [u8; 32],
    pub cipher: [u8; 32],
}

/// Step 2's message from `from` to one other member: its shares of the sender's self-mask
/// seed and mask secret key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dealt {
    pub from: usize,
    pub self_seed: Share,
    pub secret: Share,
}

/// Step 4's answer of one survivor: for each member, the share the server asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reveal {
    pub from: usize,
    pub self_seeds: Vec<(usize, Share)>,
    pub secrets: Vec<(usize, Share)>,
}

/// Step 1: a member's key pair and self-mask seed, drawn from its own stream.
pub fn advertise<R: RngCore + ?Sized>(id: usize, rng: &mut R) -> (Member, Advert) {
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let mut self_seed = [0u8; 32];
    rng.fill_bytes(&mut self_seed);
    let mut cipher_key = [0u8; 32];
    rng.fill_bytes(&mut cipher_key);
    let secret = StaticSecret::from(key);
    let public = PublicKey::from(&secret).to_bytes();
    let cipher = StaticSecret::from(cipher_key);
    let cipher_public = PublicKey::from(&cipher).to_bytes();
    (
        Member {
            id,
            secret,
            self_seed,
            cipher,
        },
        Advert {
            id,
            public,
            cipher: cipher_public,
        },
    )
}

/// A member's stream for secure round `round`: its base stream on the round's own ChaCha
/// stream id, so that a site can draw a round's key material again after a restart (the same
/// keys, without replaying earlier rounds). In a deployment the base comes from the operating
/// system's generator; here it is seeded per (run, agent) so that runs reproduce.
pub fn round_stream(base: &crate::math::rng::Rng, round: usize) -> crate::math::rng::Rng {
    let mut r = base.clone();
    r.set_stream(round as u64);
    r.set_word_pos(0);
    r
}

/// Bytes of a sealed `Dealt`: two shares of 48 bytes each.
pub const SEALED_LEN: usize = 2 * 48;

/// The one-time key sealing what `from` deals to `to` in round `round`: SHA-256 of their
/// X25519 agreement on the sealing keys, the round and both ids (a fresh key per round and
/// ordered pair, so the stream below is never reused).
fn seal_key(
    mine: &StaticSecret,
    theirs: &[u8; 32],
    from: usize,
    to: usize,
    round: usize,
) -> [u8; 32] {
    let dh = mine.diffie_hellman(&PublicKey::from(*theirs));
    let mut h = Sha256::new();
    h.update(b"fbo secure aggregation share seal v1");
    h.update(dh.as_bytes());
    h.update((round as u64).to_le_bytes());
    h.update((from as u64).to_le_bytes());
    h.update((to as u64).to_le_bytes());
    h.finalize().into()
}

fn xor_stream(key: [u8; 32], bytes: &mut [u8]) {
    let mut rng = ChaCha20Rng::from_seed(key);
    let mut pad = vec![0u8; bytes.len()];
    rng.fill_bytes(&mut pad);
    for (b, p) in bytes.iter_mut().zip(pad) {
        *b ^= p;
    }
}

fn share_bytes(s: &Share, out: &mut Vec<u8>) {
    out.extend(s.x.to_le_bytes());
    for y in s.y {
        out.extend(y.to_le_bytes());
    }
}

fn share_of(b: &[u8]) -> Share {
    let word = |k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().expect("8 bytes"));
    Share {
        x: word(0),
        y: std::array::from_fn(|k| word(k + 1)),
    }
}

/// Across machines, step 2's shares travel through the server sealed to their recipient:
/// `d` (dealt by `m`) as only member `to` can open it, by the ChaCha20 stream of a key from
/// the X25519 agreement of `m`'s and `to`'s sealing keys. Confidential against an
/// honest-but-curious server, not authenticated (a server that alters it is outside the
/// threat model).
pub fn seal(m: &Member, to: &Advert, round: usize, d: &Dealt) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(SEALED_LEN);
    share_bytes(&d.self_seed, &mut bytes);
    share_bytes(&d.secret, &mut bytes);
    xor_stream(
        seal_key(&m.cipher, &to.cipher, m.id, to.id, round),
        &mut bytes,
    );
    bytes
}

/// What member `from` sealed to `m` in round `round` (`seal`).
pub fn open(m: &Member, from: &Advert, round: usize, sealed: &[u8]) -> Result<Dealt, String> {
    if sealed.len() != SEALED_LEN {
        return Err(format!(
            "a sealed share from member {} of {} bytes, not {SEALED_LEN}",
            from.id,
            sealed.len()
        ));
    }
    let mut bytes = sealed.to_vec();
    xor_stream(
        seal_key(&m.cipher, &from.cipher, from.id, m.id, round),
        &mut bytes,
    );
    Ok(Dealt {
        from: from.id,
        self_seed: share_of(&bytes[..48]),
        secret: share_of(&bytes[48..]),
    })
}

/// Step 2: the shares `m` deals, one per member of `adverts` (itself included, in the
/// adverts' order; share x is the position + 1).
pub fn deal<R: RngCore + ?Sized>(
    m: &Member,
    adverts: &[Advert],
    threshold: usize,
    rng: &mut R,
) -> Vec<(usize, Dealt)> {
    let n = adverts.len();
    let seeds = shamir::split(&m.self_seed, threshold, n, rng);
    let secrets = shamir::split(&m.secret.to_bytes(), threshold, n, rng);
    adverts
        .iter()
        .enumerate()
        .map(|(k, a)| {
            (
                a.id,
                Dealt {
                    from: m.id,
                    self_seed: seeds[k],
                    secret: secrets[k],
                },
            )
        })
        .collect()
}

/// The seed two members share: SHA-256 of their X25519 agreement and both ids.
fn pair_seed(secret: &StaticSecret, other: &Advert, me: usize) -> [u8; 32] {
    let dh = secret.diffie_hellman(&PublicKey::from(other.public));
    let (lo, hi) = (me.min(other.id), me.max(other.id));
    let mut h = Sha256::new();
    h.update(b"fbo secure aggregation pair mask v1");
    h.update(dh.as_bytes());
    h.update((lo as u64).to_le_bytes());
    h.update((hi as u64).to_le_bytes());
    h.finalize().into()
}

/// The mask a seed expands to: `len` words of the ChaCha20 stream keyed by it.
pub fn expand(seed: &[u8; 32], len: usize) -> Vec<u64> {
    let mut rng = ChaCha20Rng::from_seed(*seed);
    (0..len).map(|_| rng.next_u64()).collect()
}

/// Adds (`sign`) or subtracts `m` into `acc`, word by word modulo 2^64: how masks and masked
/// inputs combine, and how the server sums the masked inputs it receives.
pub fn add_into(acc: &mut [u64], m: &[u64], sign: bool) {
    for (a, &v) in acc.iter_mut().zip(m) {
        *a = if sign {
            a.wrapping_add(v)
        } else {
            a.wrapping_sub(v)
        };
    }
}

/// Step 3: `m`'s masked input.
pub fn mask(m: &Member, adverts: &[Advert], input: &[u64]) -> Vec<u64> {
    masked_with(m, adverts, input, |other| pair_seed(&m.secret, other, m.id))
}

/// `m`'s masked input, with `seed(v)` the seed it shares with member v.
fn masked_with(
    m: &Member,
    adverts: &[Advert],
    input: &[u64],
    seed: impl Fn(&Advert) -> [u8; 32],
) -> Vec<u64> {
    let mut y = input.to_vec();
    let len = y.len();
    add_into(&mut y, &expand(&m.self_seed, len), true);
    for other in adverts.iter().filter(|a| a.id != m.id) {
        add_into(&mut y, &expand(&seed(other), len), m.id < other.id);
    }
    y
}

/// Every pair's seed among `members` (`local[k]`: member k's neighbourhood), by (lower id,
/// higher id), agreed once by the lower id: in one process both members of a pair would agree
/// the same seed (a site agrees each of its own). The members agree in parallel.
fn pair_seeds(
    members: &[Member],
    local: &[Vec<Advert>],
) -> std::collections::HashMap<(usize, usize), [u8; 32]> {
    members
        .par_iter()
        .zip(local)
        .flat_map_iter(|(m, mine)| {
            mine.iter()
                .filter(|a| a.id > m.id)
                .map(|a| ((m.id, a.id), pair_seed(&m.secret, a, m.id)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Step 4, a survivor's side: from what it was dealt, the self-mask seed shares of the
/// survivors and the secret-key shares of the dropped. Refuses a request that names one
/// member in both, which would hand the server that member's input.
pub fn reveal(
    me: usize,
    dealt: &[Dealt],
    survivors: &[usize],
    dropped: &[usize],
) -> Result<Reveal, String> {
    if let Some(u) = survivors.iter().find(|u| dropped.contains(u)) {
        return Err(format!("member {u} named both survivor and dropped"));
    }
    let pick = |who: &[usize], f: fn(&Dealt) -> Share| -> Vec<(usize, Share)> {
        who.iter()
            .filter_map(|&u| dealt.iter().find(|d| d.from == u).map(|d| (u, f(d))))
            .collect()
    };
    Ok(Reveal {
        from: me,
        self_seeds: pick(survivors, |d| d.self_seed),
        secrets: pick(dropped, |d| d.secret),
    })
}

/// Who masks with whom in a round (`graph`) and the threshold of each neighbourhood, the
/// number of shares of a member's secrets that rebuild them (`graph::Graph`; for the
/// complete graph, plain secure aggregation, the round's threshold).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbourhoods {
    pub graph: Graph,
    pub threshold: usize,
}

impl Neighbourhoods {
    /// Plain secure aggregation among `members` at the round's `threshold`.
    pub fn complete(members: &[usize], threshold: usize) -> Self {
        Neighbourhoods {
            graph: Graph::complete(members),
            threshold,
        }
    }

    /// A round's neighbourhoods among `members` under `secure`: the complete graph, or with
    /// `secure.neighbours = k` the Harary graph on a cycle shuffled by `seed()` (called only
    /// then, so plain rounds draw nothing), each neighbourhood at the threshold of its size.
    pub fn of_round(
        secure: &crate::spec::SecureSpec,
        members: &[usize],
        seed: impl FnOnce() -> [u8; 32],
    ) -> Self {
        let graph = match secure.neighbours {
            None => Graph::complete(members),
            Some(k) => Graph::harary(members, k, seed()),
        };
        // threshold(n) is within 1..=n for n >= 1 (and 1 for an empty cohort).
        let threshold = secure.threshold(graph.neighbourhood_size());
        Neighbourhoods { graph, threshold }
    }

    /// Of `adverts`, those of `u`'s neighbourhood (`u` included), in their order.
    pub fn of(&self, u: usize, adverts: &[Advert]) -> Vec<Advert> {
        let around = self.graph.around(u);
        adverts
            .iter()
            .filter(|a| around.binary_search(&a.id).is_ok())
            .copied()
            .collect()
    }
}

/// Step 4, the server's side: the sum of the survivors' inputs from the sum of their masked
/// inputs and at least `threshold` reveals, each member's secrets rebuilt from at least its
/// neighbourhood's threshold of shares; refused when the survivors' graph is not connected
/// (their pairwise masks would cancel part by part, and the server learn each part's sum).
pub fn unmask(
    adverts: &[Advert],
    masked_sum: &[u64],
    (survivors, dropped): (&[usize], &[usize]),
    reveals: &[Reveal],
    threshold: usize,
    around: &Neighbourhoods,
) -> Result<Vec<u64>, String> {
    if reveals.len() < threshold {
        return Err(format!(
            "{} survivors answered, the threshold is {threshold}",
            reveals.len()
        ));
    }
    if !around.graph.connected(survivors) {
        return Err(
            "the survivors' masks do not connect them all (unmasking would reveal the sums of the parts)"
                .into(),
        );
    }
    let shares_of = |u: usize,
                     f: fn(&Reveal) -> &Vec<(usize, Share)>|
     -> Result<Vec<Share>, String> {
        let s: Vec<Share> = reveals
            .iter()
            .filter_map(|r| f(r).iter().find(|(v, _)| *v == u).map(|(_, s)| *s))
            .collect();
        if s.len() < around.threshold {
            return Err(format!(
                "{} shares of member {u}'s secrets came back, its neighbourhood's threshold is {}",
                s.len(),
                around.threshold
            ));
        }
        Ok(s)
    };
    let mut sum = masked_sum.to_vec();
    let len = sum.len();
    // Each member's masks are rebuilt on their own, in parallel; the first failure in member
    // order is the one reported, so the message does not depend on the threads.
    let self_masks: Vec<Result<Vec<u64>, String>> = survivors
        .par_iter()
        .map(|&u| {
            let seed = shamir::combine(&shares_of(u, |r| &r.self_seeds)?)
                .ok_or_else(|| format!("the self-mask seed of member {u} does not reconstruct"))?;
            Ok(expand(&seed, len))
        })
        .collect();
    for m in self_masks {
        add_into(&mut sum, &m?, false);
    }
    // Per dropped member: its pairwise masks with its surviving neighbours, each with the
    // sign the neighbour added it with.
    type Masks = Vec<(Vec<u64>, bool)>;
    let pair_masks: Vec<Result<Masks, String>> = dropped
        .par_iter()
        .map(|&u| {
            let key = shamir::combine(&shares_of(u, |r| &r.secrets)?)
                .ok_or_else(|| format!("the secret key of member {u} does not reconstruct"))?;
            let secret = StaticSecret::from(key);
            // Its surviving neighbours (u, dropped, is no survivor).
            let neighbours = around.graph.around(u);
            Ok(adverts
                .iter()
                .filter(|a| survivors.contains(&a.id) && neighbours.binary_search(&a.id).is_ok())
                // v added +PRG(s_uv) if v < u, else -PRG(s_uv): take it back out.
                .map(|v| (expand(&pair_seed(&secret, v, u), len), v.id > u))
                .collect())
        })
        .collect();
    for masks in pair_masks {
        for (m, sign) in masks? {
            add_into(&mut sum, &m, sign);
        }
    }
    Ok(sum)
}

/// Bytes each step puts on the wire in one round among `n` members with `k` neighbours each
/// (n - 1: plain secure aggregation; `dropped` of them after step 2), vectors of `len` words:
/// an advert is an id and two 32-byte keys; a dealt pair of shares two (x, five limbs); a
/// reveal one share per member of the neighbourhood asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecureSizes {
    pub advertise: usize,
    pub shares: usize,
    pub masked: usize,
    pub reveal: usize,
}

impl SecureSizes {
    const ID: usize = 8;
    const SHARE: usize = 8 + 5 * 8;

    pub fn of(n: usize, len: usize, dropped: usize, k: usize) -> Self {
        let survivors = n - dropped;
        SecureSizes {
            // Up to the server, and each member's neighbourhood back down to it.
            advertise: n * (Self::ID + 64) * (2 + k),
            // Every ordered pair of neighbours, relayed through the server (up and down).
            shares: 2 * n * k * (Self::ID + 2 * Self::SHARE),
            masked: survivors * len * 8,
            reveal: survivors * (k + 1) * (Self::ID + Self::SHARE),
        }
    }

    pub fn total(&self) -> usize {
        self.advertise + self.shares + self.masked + self.reveal
    }
}

/// What the server saw in one round, for inspection and tests (`output.server_view`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerView {
    pub adverts: Vec<Advert>,
    /// (member, masked input) of every survivor.
    pub masked: Vec<(usize, Vec<u64>)>,
    pub reveals: Vec<Reveal>,
    /// The survivors' sum it recovered (fixed point), None when the round yielded none.
    pub sum: Option<Vec<u64>>,
}

/// One round of plain secure aggregation among `cohort` (`round_among` on the complete
/// graph).
pub fn round<R: RngCore + Send>(
    cohort: &mut [(usize, R)],
    inputs: &[Option<Vec<u64>>],
    len: usize,
    threshold: usize,
) -> (Option<Vec<u64>>, ServerView) {
    let threshold = threshold.clamp(1, cohort.len().max(1));
    let ids: Vec<usize> = cohort.iter().map(|(id, _)| *id).collect();
    round_among(
        cohort,
        inputs,
        len,
        threshold,
        &Neighbourhoods::complete(&ids, threshold),
    )
}

/// One round among `cohort` (ids with their streams), each member masking with and dealing
/// to its neighbourhood in `around`, where `inputs[k]` is member k's encoded vector or None
/// when it drops out after step 2: the survivors' sum, or None when fewer than `threshold`
/// survive or a secret does not rebuild (`unmask`); with what the server saw.
pub fn round_among<R: RngCore + Send>(
    cohort: &mut [(usize, R)],
    inputs: &[Option<Vec<u64>>],
    len: usize,
    threshold: usize,
    around: &Neighbourhoods,
) -> (Option<Vec<u64>>, ServerView) {
    let threshold = threshold.clamp(1, cohort.len().max(1));
    let mut view = ServerView::default();
    if cohort.is_empty() {
        return (Some(vec![0; len]), view);
    }
    // Each member works on its own stream and material, so the members run in parallel; what
    // the server adds up is summed modulo 2^64, the same in any order.
    let (members, adverts): (Vec<Member>, Vec<Advert>) = cohort
        .par_iter_mut()
        .map(|(id, rng)| advertise(*id, rng))
        .unzip();
    view.adverts = adverts;
    // Each member's neighbourhood (its own advert included), for its shares and its masks.
    let local: Vec<Vec<Advert>> = members
        .iter()
        .map(|m| around.of(m.id, &view.adverts))
        .collect();
    let dealt: Vec<Vec<(usize, Dealt)>> = members
        .par_iter()
        .zip(&local)
        .zip(cohort.par_iter_mut())
        .map(|((m, mine), (_, rng))| deal(m, mine, around.threshold, rng))
        .collect();
    // inbox[k]: what member k was dealt.
    let mut inbox: Vec<Vec<Dealt>> = vec![Vec::new(); members.len()];
    for (to, d) in dealt.into_iter().flatten() {
        let k = view
            .adverts
            .iter()
            .position(|a| a.id == to)
            .expect("a member");
        inbox[k].push(d);
    }
    let seeds = pair_seeds(&members, &local);
    let masked: Vec<Option<Vec<u64>>> = members
        .par_iter()
        .zip(&local)
        .zip(inputs.par_iter())
        .map(|((m, mine), input)| {
            input.as_ref().map(|x| {
                let seed = |v: &Advert| seeds[&(m.id.min(v.id), m.id.max(v.id))];
                masked_with(m, mine, x, seed)
            })
        })
        .collect();
    let mut masked_sum = vec![0u64; len];
    let (mut survivors, mut dropped) = (Vec::new(), Vec::new());
    for (m, y) in members.iter().zip(masked) {
        match y {
            Some(y) => {
                add_into(&mut masked_sum, &y, true);
                view.masked.push((m.id, y));
                survivors.push(m.id);
            }
            None => dropped.push(m.id),
        }
    }
    if survivors.len() < threshold {
        return (None, view);
    }
    for (k, m) in members.iter().enumerate() {
        if survivors.contains(&m.id) {
            let r = reveal(m.id, &inbox[k], &survivors, &dropped).expect("disjoint sets");
            view.reveals.push(r);
        }
    }
    let sum = unmask(
        &view.adverts,
        &masked_sum,
        (&survivors, &dropped),
        &view.reveals,
        threshold,
        around,
    )
    .ok();
    view.sum = sum.clone();
    (sum, view)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cohort(n: usize, seed: u64) -> Vec<(usize, ChaCha20Rng)> {
        (0..n)
            .map(|i| {
                (
                    3 * i + 1,
                    ChaCha20Rng::seed_from_u64(seed * 1000 + i as u64),
                )
            })
            .collect()
    }

    fn inputs(n: usize, len: usize) -> Vec<Vec<u64>> {
        (0..n)
            .map(|i| {
                (0..len)
                    .map(|k| encode((i as f64 - 2.5) * 0.37 + k as f64 * 1e-3, n).unwrap())
                    .collect()
            })
            .collect()
    }

    fn plain_sum(xs: &[Vec<u64>], keep: &[bool]) -> Vec<u64> {
        let mut s = vec![0u64; xs[0].len()];
        for (x, _) in xs.iter().zip(keep).filter(|(_, k)| **k) {
            add_into(&mut s, x, true);
        }
        s
    }

    #[test]
    fn fixed_point_round_trips_and_refuses_what_could_overflow() {
        for v in [0.0, 1.5, -2.25, 1e-9, -123456.789] {
            let e = encode(v, 10).unwrap();
            assert!((decode(e) - v).abs() <= 2f64.powi(-33), "{v}");
        }
        let a = encode(-3.5, 3).unwrap();
        let b = encode(1.25, 3).unwrap();
        assert_eq!(decode(a.wrapping_add(b)), -2.25);
        // Two values of 2^29 (2^61 in fixed point) sum inside i64; the bound is |v| < 2^63 / cohort.
        assert!(encode(2f64.powi(29), 2).is_some());
        assert!(encode(2f64.powi(30), 2).is_none());
        assert!(encode(2f64.powi(29), 4).is_none());
        assert!(encode(f64::NAN, 1).is_none());
    }

    #[test]
    fn the_server_recovers_exactly_the_survivors_sum_up_to_the_dropout_bound() {
        let (n, len, t) = (7, 5, 4);
        let xs = inputs(n, len);
        // No dropout, and every dropout pattern of up to n - t members.
        for pattern in 0u32..(1 << n) {
            let drops = pattern.count_ones() as usize;
            if drops > n - t + 1 {
                continue;
            }
            let keep: Vec<bool> = (0..n).map(|i| pattern >> i & 1 == 0).collect();
            let ins: Vec<Option<Vec<u64>>> = xs
                .iter()
                .zip(&keep)
                .map(|(x, &k)| k.then(|| x.clone()))
                .collect();
            let (sum, view) = round(&mut cohort(n, pattern as u64), &ins, len, t);
            if drops <= n - t {
                assert_eq!(sum, Some(plain_sum(&xs, &keep)), "dropped {pattern:b}");
                assert_eq!(view.reveals.len(), n - drops);
            } else {
                assert_eq!(sum, None, "below threshold {pattern:b}");
                assert!(
                    view.reveals.is_empty(),
                    "nothing is revealed below the threshold"
                );
            }
        }
    }

    /// With neighbourhoods (k = 4 of 10 members, each neighbourhood of 5 rebuilding a secret
    /// from 4 shares) a round gives exactly the survivors' sum when every survivor and every
    /// dropped member keeps 4 surviving members in its neighbourhood and the survivors stay
    /// connected, and nothing otherwise, for every dropout pattern within the round's bound.
    #[test]
    fn neighbourhoods_give_the_survivors_sum_exactly_when_each_neighbourhood_holds() {
        let (n, len, t) = (10, 3, 7);
        let xs = inputs(n, len);
        let ids: Vec<usize> = (0..n).map(|i| 3 * i + 1).collect();
        let around = Neighbourhoods {
            graph: Graph::harary(&ids, 4, [11; 32]),
            threshold: 4,
        };
        let (mut exact, mut lost) = (0, 0);
        for pattern in 0u32..(1 << n) {
            if pattern.count_ones() as usize > n - t {
                continue;
            }
            let keep: Vec<bool> = (0..n).map(|i| pattern >> i & 1 == 0).collect();
            let survivors: Vec<usize> = (0..n).filter(|&i| keep[i]).map(|i| ids[i]).collect();
            let holds = ids.iter().all(|&u| {
                let alive = around
                    .graph
                    .around(u)
                    .iter()
                    .filter(|v| survivors.contains(v))
                    .count();
                alive >= around.threshold
            }) && around.graph.connected(&survivors);
            let ins: Vec<Option<Vec<u64>>> = xs
                .iter()
                .zip(&keep)
                .map(|(x, &k)| k.then(|| x.clone()))
                .collect();
            let (sum, _) = round_among(&mut cohort(n, pattern as u64), &ins, len, t, &around);
            if holds {
                assert_eq!(sum, Some(plain_sum(&xs, &keep)), "dropped {pattern:b}");
                exact += 1;
            } else {
                assert_eq!(sum, None, "dropped {pattern:b}");
                lost += 1;
            }
        }
        // No dropout and every single one always hold (a neighbourhood of 5 loses one
        // member at most, and a 4-regular cycle stays connected without any one member).
        assert!(exact > n && lost > 0, "{exact} exact, {lost} lost");
    }

    /// A member's masked input carries pairwise masks with its neighbours only: with every
    /// other member's input zero and no dropout, the sum is exact, and the plain round's
    /// masked input of the same member differs (its masks come from all nine others).
    #[test]
    fn a_member_masks_with_its_neighbours_only() {
        let (n, len) = (10, 4);
        let ids: Vec<usize> = (0..n).map(|i| 3 * i + 1).collect();
        let xs = inputs(n, len);
        let ins: Vec<Option<Vec<u64>>> = xs.iter().cloned().map(Some).collect();
        let around = Neighbourhoods {
            graph: Graph::harary(&ids, 2, [5; 32]),
            threshold: 2,
        };
        let (sum, view) = round_among(&mut cohort(n, 1), &ins, len, 7, &around);
        assert_eq!(sum, Some(plain_sum(&xs, &vec![true; n])));
        let (_, plain) = round(&mut cohort(n, 1), &ins, len, 7);
        assert_eq!(
            view.adverts, plain.adverts,
            "the same keys from the same streams"
        );
        assert_ne!(view.masked[0], plain.masked[0]);
    }

    /// Pearson's chi-square of the bytes of `words` against uniform on 256 values (255 d.f.;
    /// the 99.9% quantile is 330.5).
    fn byte_chi_square(words: &[u64]) -> f64 {
        let mut counts = [0f64; 256];
        for w in words {
            for b in w.to_le_bytes() {
                counts[b as usize] += 1.0;
            }
        }
        let expect = words.len() as f64 * 8.0 / 256.0;
        counts.iter().map(|c| (c - expect).powi(2) / expect).sum()
    }

    #[test]
    fn masked_inputs_look_uniform() {
        // Members whose inputs are all zero: each masked word must be uniform on 2^64, so every
        // byte uniform on 256 values; 6 members x 2000 words x 8 bytes. A constant input would
        // give a chi-square near 24 million.
        let (n, len) = (6, 2000);
        let zeros = vec![Some(vec![0u64; len]); n];
        let (sum, view) = round(&mut cohort(n, 5), &zeros, len, 4);
        assert_eq!(sum, Some(vec![0; len]));
        let all: Vec<u64> = view.masked.iter().flat_map(|(_, y)| y.clone()).collect();
        let chi2 = byte_chi_square(&all);
        assert!(chi2 < 330.5, "chi-square {chi2}");
        assert!(byte_chi_square(&vec![0u64; 100]) > 1e4, "the test can fail");
    }

    #[test]
    fn without_one_members_mask_nothing_is_revealed() {
        // The server with every self-mask seed but member 0's: the sum is the true sum plus
        // member 0's self mask, uniform; and member 0's upload with its self mask removed is
        // still covered by its pairwise masks, uniform too. Inputs all zero, so any leak would
        // show as zero bytes.
        let (n, len, t) = (5, 4000, 3);
        let zeros = vec![Some(vec![0u64; len]); n];
        let (sum, view) = round(&mut cohort(n, 9), &zeros, len, t);
        assert_eq!(sum, Some(vec![0; len]));
        let seed_of = |u: usize, reveals: &[Reveal]| -> Option<[u8; 32]> {
            let shares: Vec<Share> = reveals
                .iter()
                .map(|r| r.self_seeds.iter().find(|(v, _)| *v == u).unwrap().1)
                .collect();
            shamir::combine(&shares)
        };
        let mut partial = vec![0u64; len];
        for (_, y) in &view.masked {
            add_into(&mut partial, y, true);
        }
        for a in &view.adverts[1..] {
            add_into(
                &mut partial,
                &expand(&seed_of(a.id, &view.reveals).unwrap(), len),
                false,
            );
        }
        let chi2 = byte_chi_square(&partial);
        assert!(
            chi2 < 330.5,
            "sum without member 0's self mask: chi-square {chi2}"
        );
        // t - 1 shares of member 0's seed do not rebuild it.
        let id0 = view.adverts[0].id;
        let seed0 = seed_of(id0, &view.reveals).unwrap();
        assert_ne!(seed_of(id0, &view.reveals[..t - 1]), Some(seed0));
        let mut own = view.masked[0].1.clone();
        add_into(&mut own, &expand(&seed0, len), false);
        let chi2 = byte_chi_square(&own);
        assert!(
            chi2 < 330.5,
            "upload without its self mask: chi-square {chi2}"
        );
    }

    #[test]
    fn a_survivor_never_reveals_both_shares_of_one_member() {
        let err = reveal(1, &[], &[1, 2], &[2]).unwrap_err();
        assert!(err.contains("member 2"), "{err}");
    }
}
