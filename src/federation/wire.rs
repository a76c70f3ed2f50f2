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
}
