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
        };
        let text = serde_json::to_string(&ins).unwrap();
        assert!(!text.contains("unanswered"), "{text}");
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
}
