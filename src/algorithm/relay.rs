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

/// Senders agreeing on the shared model across machines (FTS, RGPE, TAF with `shared =
/// "agreed"`): a sender's message is its fit (D + 2 log hyperparameters), the server's
/// question the median of the fits that arrived (as one process agrees), a sender's answer its
/// message on the features redrawn for that agreement, and each target receives the agreement
/// (D + 2 numbers) before the relayed answers.
#[derive(Default)]
pub struct SenderAgreement {
    /// The last agreed log hyperparameters: the server's, or those a site's features are
    /// drawn for.
    pub log: Option<Vec<f64>>,
    /// At the server: the senders' answers of this round, by agent.
    answered: Vec<Option<Array1<f64>>>,
}

impl SenderAgreement {
    /// The server's question before round t's broadcast (`Federated::question`): the median
    /// of the fits that arrived, then, once answered, none (the answers of `answer_len`
    /// numbers kept for the broadcast; another length counts as not arrived).
    pub fn question(
        &mut self,
        fits: &[Option<Array1<f64>>],
        answers: &[Vec<Option<Vec<f64>>>],
        answer_len: usize,
    ) -> Option<Vec<f64>> {
        if let Some(round) = answers.first() {
            self.answered = round
                .iter()
                .map(|a| a.as_ref().filter(|v| v.len() == answer_len))
                .map(|a| a.map(|v| Array1::from(v.clone())))
                .collect();
            return None;
        }
        self.answered = vec![None; fits.len()];
        let fits: Vec<Vec<f64>> = fits.iter().flatten().map(|f| f.to_vec()).collect();
        if fits.is_empty() {
            return None;
        }
        let log = crate::surrogate::agreement::median(&fits);
        self.log = Some(log.clone());
        Some(log)
    }

    /// The round's broadcast: to each of `targets` the agreement, then the others' answers
    /// (`to_targets`), among `n` agents.
    pub fn broadcast(&mut self, n: usize, targets: &[usize]) -> Broadcast {
        let mut answered = std::mem::take(&mut self.answered);
        answered.resize(n, None);
        let mut b = to_targets(&answered, targets);
        if let Some(log) = &self.log {
            for &k in targets {
                let to = &mut b.to_each[k];
                to.shared = log.iter().copied().chain(to.shared.drain(..)).collect();
            }
        }
        b
    }

    /// What a target received, split into the agreement (`dim` + 2 numbers, checked finite;
    /// None when nothing was ever agreed) and the relayed blocks after it.
    pub fn split(shared: &[f64], dim: usize) -> Result<(Option<&[f64]>, &[f64])> {
        if shared.is_empty() {
            return Ok((None, shared));
        }
        let (log, rest) = shared.split_at((dim + 2).min(shared.len()));
        Self::check(log, dim)?;
        Ok((Some(log), rest))
    }

    /// `log` checked as an agreement: `dim` + 2 finite log hyperparameters.
    pub fn check(log: &[f64], dim: usize) -> Result<()> {
        if log.len() != dim + 2 || log.iter().any(|v| !v.is_finite()) {
            return Err(FboError::Run(format!(
                "an agreement on the shared model is {} finite log hyperparameters (got {} numbers)",
                dim + 2,
                log.len()
            )));
        }
        Ok(())
    }

    /// Whether `log` is not the agreement the site's features are drawn for; if so, it is
    /// from now on (the caller redraws them).
    pub fn is_new(&mut self, log: &[f64]) -> bool {
        if self.log.as_deref() == Some(log) {
            return false;
        }
        self.log = Some(log.to_vec());
        true
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

    #[test]
    fn an_agreement_asks_the_median_and_relays_the_answers_after_it() {
        // Three senders' fits of D + 2 = 3 numbers (D = 1); agent 1's did not arrive.
        let fit = |v: [f64; 3]| Some(Array1::from(v.to_vec()));
        let fits = vec![
            fit([1.0, 0.0, -2.0]),
            None,
            fit([3.0, 2.0, -4.0]),
            fit([2.0, 7.0, -3.0]),
        ];
        let mut ag = SenderAgreement::default();
        let ask = ag.question(&fits, &[], 2).unwrap();
        assert_eq!(ask, vec![2.0, 2.0, -3.0]);
        // Answers of M = 2 numbers; agent 3's of the wrong length counts as not arrived.
        let answers = vec![vec![
            Some(vec![5.0, 6.0]),
            None,
            Some(vec![7.0, 8.0]),
            Some(vec![9.0]),
        ]];
        assert_eq!(ag.question(&fits, &answers, 2), None);
        let b = ag.broadcast(4, &[0, 3]);
        assert_eq!(b.for_agent(0).shared, vec![2.0, 2.0, -3.0, 2.0, 7.0, 8.0]);
        assert_eq!(
            b.for_agent(3).shared,
            vec![2.0, 2.0, -3.0, 0.0, 5.0, 6.0, 2.0, 7.0, 8.0]
        );
        assert!(b.for_agent(1).shared.is_empty());
        // A target splits it back; a short or non-finite agreement is refused.
        let shared = &b.for_agent(0).shared;
        let (log, rest) = SenderAgreement::split(shared, 1).unwrap();
        assert_eq!(
            (log.unwrap(), rest),
            (&[2.0, 2.0, -3.0][..], &[2.0, 7.0, 8.0][..])
        );
        assert_eq!(SenderAgreement::split(&[], 1).unwrap().0, None);
        assert!(SenderAgreement::split(&[1.0, 2.0], 1).is_err());
        assert!(SenderAgreement::split(&[1.0, f64::NAN, 0.0, 4.0], 1).is_err());
        assert!(ag.is_new(&[1.0, 1.0, 1.0]) && !ag.is_new(&[1.0, 1.0, 1.0]));
    }
}
