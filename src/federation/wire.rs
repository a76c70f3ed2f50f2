//! What crosses the network between the server and the agents of a real federation: plain
//! data (numbers, strings), checked on arrival. The transport (Flower, through the Python
//! package) carries these as they are; nothing here depends on it.

use serde::{Deserialize, Serialize};

/// A point of the search space: unit coordinates, and the grid index on a grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WirePoint {
    pub x: Vec<f64>,
    pub index: Option<usize>,
}

/// What the server sends every agent of a unit (algorithm, run) at round t: round 0 asks
/// for the initial points, round t >= 1 for iteration t's query, with the server's point where
/// the algorithm broadcasts one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instruction {
    /// The spec's fingerprint: a server and an agent of different specs refuse each other.
    pub spec: String,
    pub algorithm: usize,
    pub run: usize,
    pub round: usize,
    pub point: Option<WirePoint>,
    /// Numbers the method shares with this agent (design densities: the others' centres);
    /// empty, and then not written, for the methods that share none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<f64>,
    /// Per agent (agent, rounds), the earlier rounds the server holds no reply of: a site
    /// whose reply was lost in transit re-sends it from its journal with its next reply
    /// (`Reply::late`). Empty without faults, and then not written: the wire is as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<(usize, Vec<usize>)>,
    /// Under secure aggregation, a step of the masking protocol on the messages of the round
    /// before (`SecureAsk`) instead of an evaluation; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<SecureAsk>,
    /// Before the server's broadcast of this round, a question of the method to the agents
    /// (FedGP: one communication round of its solver) instead of an evaluation; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<WireQuestion>,
}

/// The server's `step`-th question of a round (`Federated::question`): the numbers the method
/// asks about, or none for an agent not asked this time (its message did not arrive).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireQuestion {
    pub step: usize,
    pub ask: Vec<f64>,
}

impl Instruction {
    /// The earlier rounds the server asks agent `agent` to re-send (see `unanswered`).
    pub fn unanswered_by(&self, agent: usize) -> &[usize] {
        self.unanswered
            .iter()
            .find(|(a, _)| *a == agent)
            .map_or(&[], |(_, rounds)| rounds.as_slice())
    }
}

/// An agent's answer to an instruction: the trace rows of its queries of that round (CSV
/// lines in the trace's columns; the agent knows its own regret, the server does not compute
/// it) and the message it sends for the next round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub spec: String,
    pub algorithm: usize,
    pub run: usize,
    pub round: usize,
    pub agent: usize,
    pub rows: String,
    /// A value that is not finite crosses JSON as null (JSON has no NaN), and is read back as
    /// NaN so that the server can reject the message and keep the rest of the reply.
    #[serde(default, deserialize_with = "nulls_as_nan")]
    pub message: Option<Vec<f64>>,
    /// The site's replies to earlier rounds the instruction named as unanswered (lost in
    /// transit; the site's journal kept them), re-sent with this one: their trace rows are
    /// kept, their messages are not aggregated (those rounds' aggregates have gone out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub late: Vec<Reply>,
    /// Under secure aggregation: `Ready` beside an evaluation whose message the agent holds
    /// (it travels only masked), or the agent's answer to a protocol step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<SecureReply>,
    /// The agent's answer to the instruction's question (empty: not asked this time). A value
    /// that is not finite crosses as null and is read back as NaN, as a message's.
    #[serde(
        default,
        deserialize_with = "nulls_as_nan",
        skip_serializing_if = "Option::is_none"
    )]
    pub answer: Option<Vec<f64>>,
}

/// A member's public keys (hex): for its masks and for the shares sealed to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireAdvert {
    pub agent: usize,
    pub public: String,
    pub cipher: String,
}

/// What a member needs to compute its contribution (`crate::server::MemberPart`): its
/// weight per sub-region, under DP (sampling rate, clip bound), whether it was selected, the
/// cohort's size, under distributed noise the total s.d. its shares add to with the round's
/// threshold, and under self-sampling the rate of its own coin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WirePart {
    pub weights: Vec<f64>,
    pub dp: Option<(f64, f64)>,
    pub selected: bool,
    pub cohort: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares: Option<(f64, usize)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coin: Option<f64>,
}

/// The server's ask in a step of secure aggregation (docs/algorithms.md "Secure aggregation
/// across machines"), for the messages of server round `round`. Bytes travel as hex.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum SecureAsk {
    /// Nothing of this agent this step (not in the cohort, or out of the protocol).
    Idle { round: usize },
    /// Step 1: send your public keys.
    Advertise { round: usize },
    /// Step 2: the advertisers' keys; deal Shamir shares (threshold) of your self-mask seed
    /// and mask key to each of them, sealed to each.
    Share {
        round: usize,
        adverts: Vec<WireAdvert>,
        threshold: usize,
    },
    /// Step 3: the members whose shares were dealt (mask with them alone) and your part of
    /// the plan; send your masked input.
    Mask {
        round: usize,
        participants: Vec<WireAdvert>,
        part: WirePart,
    },
    /// Step 4: the shares sealed to you, and who survived and who dropped after masking;
    /// reveal your shares of the survivors' seeds and the dropped members' keys.
    Reveal {
        round: usize,
        participants: Vec<WireAdvert>,
        inbox: Vec<(usize, String)>,
        survivors: Vec<usize>,
        dropped: Vec<usize>,
    },
}

/// An agent's answer to a `SecureAsk` (or `Ready` beside an evaluation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum SecureReply {
    Ready,
    Idle,
    Advertise {
        public: String,
        cipher: String,
    },
    /// Per recipient, the sealed pair of shares.
    Share {
        sealed: Vec<(usize, String)>,
    },
    /// The masked input: P M words of 16 hex digits.
    Mask {
        masked: String,
    },
    /// Per member asked about, the share revealed (x and five limbs, hex).
    Reveal {
        seeds: Vec<(usize, String)>,
        keys: Vec<(usize, String)>,
    },
}

fn nulls_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<f64>>, D::Error> {
    let v: Option<Vec<Option<f64>>> = Option::deserialize(d)?;
    Ok(v.map(|v| v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect()))
}

/// Why a message cannot be aggregated (wrong length, a value that is not finite), or None.
pub fn message_fault(message: &[f64], m: usize) -> Option<String> {
    if message.len() != m {
        return Some(format!(
            "has {} values where the algorithm's messages have {m}",
            message.len()
        ));
    }
    message
        .iter()
        .position(|v| !v.is_finite())
        .map(|i| format!("value {i} is {} (not finite)", message[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_the_wrong_length_or_not_finite_are_named() {
        assert_eq!(message_fault(&[1.0, 2.0], 2), None);
        assert!(message_fault(&[1.0], 2).unwrap().contains("has 1 values"));
        assert!(
            message_fault(&[1.0, f64::NAN], 2)
                .unwrap()
                .contains("value 1 is NaN")
        );
        assert!(
            message_fault(&[f64::INFINITY, 0.0], 2)
                .unwrap()
                .contains("value 0 is inf")
        );
    }

    #[test]
    fn a_reply_crosses_json_unchanged() {
        let r = Reply {
            spec: "abc".into(),
            algorithm: 1,
            run: 2,
            round: 3,
            agent: 4,
            rows: "DP,2,4,3,,0.1\n".into(),
            message: Some(vec![0.1 + 0.2, -1e-300, 123456.789]),
            late: Vec::new(),
            secure: None,
            answer: None,
        };
        let back: Reply = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        // Not finite: null on the wire, NaN again on arrival, and named by message_fault.
        let bad = Reply {
            message: Some(vec![1.0, f64::INFINITY]),
            ..r
        };
        let text = serde_json::to_string(&bad).unwrap();
        assert!(text.contains("[1.0,null]"), "{text}");
        let back: Reply = serde_json::from_str(&text).unwrap();
        assert!(back.message.as_ref().unwrap()[1].is_nan());
        assert!(message_fault(back.message.as_ref().unwrap(), 2).is_some());
    }

    #[test]
    fn late_replies_and_unanswered_rounds_cross_json_and_are_absent_without_faults() {
        let ins = Instruction {
            spec: "abc".into(),
            algorithm: 0,
            run: 1,
            round: 4,
            point: None,
            shared: Vec::new(),
            unanswered: Vec::new(),
            secure: None,
            question: None,
        };
        let text = serde_json::to_string(&ins).unwrap();
        assert!(
            !text.contains("unanswered") && !text.contains("secure"),
            "{text}"
        );
        let asked = Instruction {
            unanswered: vec![(2, vec![1, 3])],
            ..ins
        };
        let back: Instruction =
            serde_json::from_str(&serde_json::to_string(&asked).unwrap()).unwrap();
        assert_eq!(back, asked);
        assert_eq!(back.unanswered_by(2), &[1, 3]);
        assert!(back.unanswered_by(0).is_empty());
        let late = Reply {
            spec: "abc".into(),
            algorithm: 0,
            run: 1,
            round: 3,
            agent: 2,
            rows: "TS,1,2,3\n".into(),
            message: None,
            late: Vec::new(),
            secure: None,
            answer: None,
        };
        assert!(!serde_json::to_string(&late).unwrap().contains("late"));
        let r = Reply {
            round: 4,
            late: vec![late.clone()],
            ..late
        };
        let back: Reply = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    /// The steps of secure aggregation cross JSON tagged by step, bytes as hex strings.
    #[test]
    fn secure_steps_cross_json_tagged_by_step() {
        let ask = SecureAsk::Mask {
            round: 3,
            participants: vec![WireAdvert {
                agent: 1,
                public: "ab".repeat(32),
                cipher: "cd".repeat(32),
            }],
            part: WirePart {
                weights: vec![0.25, 0.75],
                dp: Some((0.5, 2.0)),
                selected: true,
                cohort: 4,
                shares: Some((3.5, 3)),
                coin: None,
            },
        };
        let text = serde_json::to_string(&ask).unwrap();
        assert!(text.starts_with("{\"step\":\"mask\",\"round\":3"), "{text}");
        assert_eq!(serde_json::from_str::<SecureAsk>(&text).unwrap(), ask);
        let ready = serde_json::to_string(&SecureReply::Ready).unwrap();
        assert_eq!(ready, "{\"step\":\"ready\"}");
        let reveal = SecureReply::Reveal {
            seeds: vec![(2, "00".repeat(48))],
            keys: Vec::new(),
        };
        let back: SecureReply =
            serde_json::from_str(&serde_json::to_string(&reveal).unwrap()).unwrap();
        assert_eq!(back, reveal);
    }
}
