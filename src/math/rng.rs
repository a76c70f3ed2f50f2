//! Independent random streams keyed by (seed, run, agent, purpose).
//!
//! Every consumer of randomness gets its own stream, so that (a) the output does not depend on
//! the order in which threads happen to run, and (b) two algorithms compared in one spec see the
//! same objective, initial points and observation noise: FTS with p_t = 1 makes exactly TS's
//! queries because the draws that decide "own sample or message" come from a stream TS never
//! touches.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub type Rng = ChaCha8Rng;

/// Agent id used for streams that belong to the whole federation (shared random features).
pub const SHARED: u64 = u64::MAX;

/// What a stream is used for. The discriminant is part of the key, so never reorder.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    Objective = 1,
    Init = 2,
    Noise = 3,
    OwnSample = 4,
    Mixing = 5,
    Message = 6,
    SharedFeatures = 7,
    HyperFit = 8,
    AgentData = 9,
    Server = 10,
    /// fbo compare's bootstrap resamples.
    Compare = 11,
    /// Quasi-random candidate sets of a search on a continuous box.
    Acquisition = 12,
    /// Each agent's shift and rotation of a benchmark function (`objective.heterogeneity`).
    Heterogeneity = 13,
    /// Which messages reach the server (`server.drop`, `latency`, `outage`).
    Participation = 14,
    /// Random search's queries.
    Random = 15,
    /// An agent's draws inside a federated framework's decision (CGP's rejection samples).
    Framework = 16,
    /// Points every agent of a run shares (FMTBO's ranking set).
    SharedPoints = 17,
    /// The noise of a private agreement on the shared model (`surrogate.shared = "agreed"`).
    Agreement = 18,
    /// Each agent's simulated evaluation costs (`[clock]`).
    Clock = 19,
    /// Each agent's keys, self-mask seeds and secret shares under `server.secure`.
    SecureAggregation = 20,
    /// Each agent's own privacy draws under `server.secure`: its self-sampling coin and its
    /// distributed-noise shares.
    AgentPrivacy = 21,
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stream for (seed, run, agent, purpose). `run` is whatever index identifies the
/// replicate for that purpose (objective instances use the function index).
pub fn stream(seed: u64, run: u64, agent: u64, purpose: Purpose) -> Rng {
    let mut h = splitmix64(seed);
    h = splitmix64(h ^ run);
    h = splitmix64(h ^ agent);
    h = splitmix64(h ^ purpose as u64);
    let mut key = [0u8; 32];
    for (i, chunk) in key.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&splitmix64(h.wrapping_add(i as u64)).to_le_bytes());
    }
    ChaCha8Rng::from_seed(key)
}

/// The `index`-th of a family of streams for (seed, run, agent, purpose), each a pure
/// function of its key: a draw that must come out the same whenever it is made (an FTS
/// sender's message of round `index`, which a site restarted from its journal draws again
/// without replaying the draws before it).
pub fn stream_at(seed: u64, run: u64, agent: u64, purpose: Purpose, index: u64) -> Rng {
    stream(
        splitmix64(seed) ^ splitmix64(index.wrapping_add(1)),
        run,
        agent,
        purpose,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    #[test]
    fn streams_differ_by_every_key_component() {
        let base: u64 = stream(1, 2, 3, Purpose::Noise).random();
        assert_ne!(base, stream(0, 2, 3, Purpose::Noise).random::<u64>());
        assert_ne!(base, stream(1, 0, 3, Purpose::Noise).random::<u64>());
        assert_ne!(base, stream(1, 2, 0, Purpose::Noise).random::<u64>());
        assert_ne!(base, stream(1, 2, 3, Purpose::Init).random::<u64>());
        assert_eq!(base, stream(1, 2, 3, Purpose::Noise).random::<u64>());
    }

    #[test]
    fn indexed_streams_differ_by_index_and_from_the_plain_one() {
        let at = |i| stream_at(1, 2, 3, Purpose::Message, i).random::<u64>();
        assert_eq!(at(4), at(4));
        assert_ne!(at(4), at(5));
        assert_ne!(at(0), stream(1, 2, 3, Purpose::Message).random::<u64>());
        assert_ne!(
            at(0),
            stream_at(1, 2, 4, Purpose::Message, 0).random::<u64>()
        );
    }
}
