//! Messages a server relays from senders to targets (FTS, RGPE, TAF across machines): each
//! target receives the messages of the other agents that arrived, as (agent, message) blocks
//! in agent order, and reads them back checked.

use super::{Broadcast, Received};
use crate::error::{FboError, Result};
use ndarray::Array1;

/// Whether `agent` sends messages to the targets `ids`: it is not the only target.
pub fn is_sender(ids: &[usize], agent: usize) -> bool {
    ids.iter().any(|&t| t != agent)
}

/// Target `agent`'s index among the targets `ids` (the order the algorithm keeps them in).
pub fn target_index(ids: &[usize], agent: usize) -> Result<usize> {
    ids.iter()
        .position(|&t| t == agent)
        .ok_or_else(|| FboError::Run(format!("agent {agent} is no target of this algorithm")))
}

/// The agents that take part across machines, of `n`: the targets and every sender.
pub fn members(n: usize, ids: &[usize]) -> Vec<usize> {
    (0..n)
        .filter(|&a| ids.contains(&a) || is_sender(ids, a))
        .collect()
}

/// To each of `targets` the others' messages that arrived (`blocks`); nothing to the others.
pub fn to_targets(messages: &[Option<Array1<f64>>], targets: &[usize]) -> Broadcast {
    let to_each = (0..messages.len())
        .map(|k| Received {
            point: None,
            shared: match targets.contains(&k) {
                true => blocks(messages, k),
                false => Vec::new(),
            },
        })
        .collect();
    Broadcast {
        all: Received::default(),
        to_each,
    }
}

/// Target `me`'s relayed messages read back: (agent, message) blocks of 1 + `m` numbers, each
/// naming another of the `n` agents and finite, or an error saying what is wrong.
pub fn parse(shared: &[f64], m: usize, n: usize, me: usize) -> Result<Vec<(usize, Array1<f64>)>> {
    if !shared.len().is_multiple_of(m + 1) {
        return Err(FboError::Run(format!(
            "agent {me}: the relayed messages are {} numbers, not blocks of 1 + {m} = {}",
            shared.len(),
            m + 1
        )));
    }
    shared
        .chunks(m + 1)
        .map(|block| {
            let a = block[0];
            let sender = a as usize;
            if a.fract() != 0.0 || a < 0.0 || sender >= n || sender == me {
                return Err(FboError::Run(format!(
                    "agent {me}: a relayed message names agent {a}, not another agent"
                )));
            }
            if block[1..].iter().any(|v| !v.is_finite()) {
                return Err(FboError::Run(format!(
                    "agent {me}: agent {sender}'s relayed message is not finite"
                )));
            }
            Ok((sender, Array1::from(block[1..].to_vec())))
        })
        .collect()
}

/// The messages that arrived from agents other than `k`, each as (agent, message) in agent
/// order.
fn blocks(messages: &[Option<Array1<f64>>], k: usize) -> Vec<f64> {
    messages
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != k)
        .filter_map(|(j, m)| m.as_ref().map(|m| (j, m)))
        .flat_map(|(j, m)| std::iter::once(j as f64).chain(m.iter().copied()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayed_messages_round_trip_and_malformed_ones_are_refused() {
        let msgs = vec![
            Some(Array1::from(vec![1.0, 2.0])),
            None,
            Some(Array1::from(vec![3.0, 4.0])),
            Some(Array1::from(vec![5.0, 6.0])),
        ];
        let wire = blocks(&msgs, 0);
        assert_eq!(wire, vec![2.0, 3.0, 4.0, 3.0, 5.0, 6.0]);
        let back = parse(&wire, 2, 4, 0).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].0, back[0].1.to_vec()), (2, vec![3.0, 4.0]));
        assert_eq!((back[1].0, back[1].1.to_vec()), (3, vec![5.0, 6.0]));
        let err = |w: &[f64]| parse(w, 2, 4, 0).unwrap_err().to_string();
        assert!(err(&wire[..5]).contains("not blocks of 1 + 2 = 3"));
        assert!(err(&[0.0, 1.0, 1.0]).contains("names agent 0"));
        assert!(err(&[4.0, 1.0, 1.0]).contains("names agent 4"));
        assert!(err(&[1.5, 1.0, 1.0]).contains("names agent 1.5"));
        assert!(err(&[1.0, f64::NAN, 1.0]).contains("not finite"));
    }
}
