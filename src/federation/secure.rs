//! Secure aggregation across machines: the four steps of `crate::server::secagg` as rounds
//! of instructions and replies, so that the server never holds an agent's vector
//! (docs/algorithms.md "Secure aggregation across machines").
//!
//! After an evaluation round whose messages the server sums (DP-FTS-DE with `server.secure`),
//! each agent holds its message and answers `Ready`; the server plans the round (weights,
//! selection: `crate::server::Server::plan`) and runs, among the cohort members whose
//! message is ready:
//! 1. Advertise: each sends its two public keys.
//! 2. Share: each deals Shamir shares of its self-mask seed and mask key to every advertiser,
//!    sealed to the recipient (`secagg::seal`), through the server.
//! 3. Mask: the members whose shares were all dealt (the participants) each send their
//!    clipped, weighted vector in fixed point, masked (pairwise masks with participants only).
//! 4. Reveal: the server names survivors (masked input arrived) and dropped participants;
//!    each survivor opens the shares sealed to it and reveals the ones asked for.
//!
//! The server then holds the survivors' sum, as `secagg::round` gives it in one process, and
//! releases it as `fbo run` does. A member's key material for a round is drawn from its own
//! stream's part for that round (`secagg::round_stream`), so a site restarted mid-round draws
//! the same keys again; each step's replies are journaled by the server.

use super::wire::{SecureAsk, SecureReply, WireAdvert, WirePart};
use crate::math::hex;
use crate::math::rng::Rng;
use crate::server::secagg::{self, Advert, Reveal, shamir::Share};
use crate::server::{Draw, MemberPart, RoundPlan, privacy_stream};
use ndarray::Array1;

fn key32(text: &str) -> Result<[u8; 32], String> {
    hex::parse_bytes(text)?
        .try_into()
        .map_err(|_| "a key that is not 32 bytes".to_string())
}

fn wire_advert(a: &Advert) -> WireAdvert {
    WireAdvert {
        agent: a.id,
        public: hex::bytes(&a.public),
        cipher: hex::bytes(&a.cipher),
    }
}

fn advert_of(w: &WireAdvert) -> Result<Advert, String> {
    Ok(Advert {
        id: w.agent,
        public: key32(&w.public)?,
        cipher: key32(&w.cipher)?,
    })
}

fn share_hex(s: &Share) -> String {
    let mut words = vec![s.x];
    words.extend(s.y);
    hex::words(&words)
}

fn share_of_hex(text: &str) -> Result<Share, String> {
    let w = hex::parse_words(text, 6)?;
    Ok(Share {
        x: w[0],
        y: [w[1], w[2], w[3], w[4], w[5]],
    })
}

/// Where a secure round stands at the server.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Advertise,
    Share,
    Mask,
    Reveal,
    /// The survivors' sum in fixed point, or None when the round yielded none.
    Done(Option<Vec<u64>>),
}

/// The server's side of one secure round (the messages of server round `plan.round`).
pub struct SecurePhase {
    plan: RoundPlan,
    threshold: usize,
    /// Words per member: P sub-regions of M features.
    len: usize,
    /// The cohort members whose message is ready: those asked to advertise.
    asked: Vec<usize>,
    /// Who masks with whom (the plan's).
    around: secagg::Neighbourhoods,
    step: Step,
    /// Step 1's adverts, in agent order.
    adverts: Vec<Advert>,
    /// Step 2: (from, to, sealed pair of shares).
    sealed: Vec<(usize, usize, String)>,
    /// The advertisers that dealt to every advertiser.
    participants: Vec<usize>,
    /// Step 3: the survivors' masked inputs, in agent order.
    masked: Vec<(usize, Vec<u64>)>,
    /// Step 4's answers.
    reveals: Vec<Reveal>,
    /// What went wrong, for the operator (one line each).
    pub notes: Vec<String>,
}

impl SecurePhase {
    /// A round among the cohort members of `plan` whose message `ready` says is held.
    pub fn new(plan: RoundPlan, threshold: usize, len: usize, ready: &[bool]) -> Self {
        let asked: Vec<usize> = plan
            .members
            .iter()
            .copied()
            .filter(|&a| ready[a] && plan.arrived(a))
            .collect();
        // An empty cohort sums to zero, as in one process.
        let step = if plan.members.is_empty() {
            Step::Done(Some(vec![0; len]))
        } else {
            Step::Advertise
        };
        let around = plan
            .around
            .clone()
            .expect("a secure server's plan has its neighbourhoods (`Server::plan`)");
        SecurePhase {
            plan,
            threshold,
            len,
            asked,
            around,
            step,
            adverts: Vec::new(),
            sealed: Vec::new(),
            participants: Vec::new(),
            masked: Vec::new(),
            reveals: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The server round whose messages this phase sums.
    pub fn round(&self) -> usize {
        self.plan.round
    }

    /// Which step is next, 1-4 (for the journal and the operator), or None when done.
    pub fn step_number(&self) -> Option<usize> {
        match self.step {
            Step::Advertise => Some(1),
            Step::Share => Some(2),
            Step::Mask => Some(3),
            Step::Reveal => Some(4),
            Step::Done(_) => None,
        }
    }

    pub fn plan(&self) -> &RoundPlan {
        &self.plan
    }

    /// The sum and the cohort members whose vector is not in it, once the round is done.
    pub fn outcome(&self) -> Option<(Option<&[u64]>, Vec<usize>)> {
        let Step::Done(sum) = &self.step else {
            return None;
        };
        let missing = match sum {
            Some(_) => self
                .plan
                .members
                .iter()
                .copied()
                .filter(|a| !self.masked.iter().any(|(s, _)| s == a))
                .collect(),
            None => self.plan.members.clone(),
        };
        Some((sum.as_deref(), missing))
    }

    /// The adverts of `who` in `agent`'s neighbourhood, `agent`'s own included.
    fn wire_adverts(&self, agent: usize, who: &[usize]) -> Vec<WireAdvert> {
        let mine: Vec<Advert> = self
            .adverts
            .iter()
            .filter(|a| who.contains(&a.id))
            .copied()
            .collect();
        self.around
            .of(agent, &mine)
            .iter()
            .map(wire_advert)
            .collect()
    }

    /// The participants whose masked input arrived.
    fn survivors(&self) -> Vec<usize> {
        self.masked.iter().map(|(a, _)| *a).collect()
    }

    /// The participants whose masked input did not arrive (their masks are removed by
    /// reconstructing their keys).
    fn dropped(&self) -> Vec<usize> {
        let survivors = self.survivors();
        self.participants
            .iter()
            .copied()
            .filter(|p| !survivors.contains(p))
            .collect()
    }

    /// What agent `agent` is asked this step.
    pub fn ask(&self, agent: usize) -> SecureAsk {
        let round = self.plan.round;
        let idle = SecureAsk::Idle { round };
        let advertisers: Vec<usize> = self.adverts.iter().map(|a| a.id).collect();
        match &self.step {
            Step::Advertise if self.asked.contains(&agent) => SecureAsk::Advertise { round },
            Step::Share if advertisers.contains(&agent) => SecureAsk::Share {
                round,
                adverts: self.wire_adverts(agent, &advertisers),
                threshold: self.around.threshold,
            },
            Step::Mask if self.participants.contains(&agent) => {
                let part = self.plan.member_part(agent);
                SecureAsk::Mask {
                    round,
                    participants: self.wire_adverts(agent, &self.participants),
                    part: WirePart {
                        weights: part.weights,
                        dp: part.dp,
                        selected: part.selected,
                        cohort: part.cohort,
                        shares: part.share_sd.map(|sd| (sd, self.threshold)),
                        coin: part.coin,
                    },
                }
            }
            Step::Reveal if self.survivors().contains(&agent) => {
                let survivors = self.survivors();
                SecureAsk::Reveal {
                    round,
                    participants: self.wire_adverts(agent, &self.participants),
                    inbox: self
                        .sealed
                        .iter()
                        .filter(|(from, to, _)| *to == agent && self.participants.contains(from))
                        .map(|(from, _, s)| (*from, s.clone()))
                        .collect(),
                    dropped: self.dropped(),
                    survivors,
                }
            }
            _ => idle,
        }
    }

    /// Takes this step's answers (agent, answer), in agent order; an answer that does not
    /// fit the step is left out and noted, as an agent that dropped. Moves to the next step,
    /// or to the end when fewer than the threshold remain.
    pub fn take(&mut self, answers: &[(usize, SecureReply)]) {
        let round = self.plan.round;
        let note = |agent: usize, why: String| {
            format!("secure round {round}: agent {agent}'s answer left out: {why}")
        };
        let mut notes = Vec::new();
        match self.step.clone() {
            Step::Advertise => {
                for (a, r) in answers {
                    let SecureReply::Advertise { public, cipher } = r else {
                        continue;
                    };
                    if !self.asked.contains(a) {
                        continue;
                    }
                    let w = WireAdvert {
                        agent: *a,
                        public: public.clone(),
                        cipher: cipher.clone(),
                    };
                    match advert_of(&w) {
                        Ok(ad) => self.adverts.push(ad),
                        Err(e) => notes.push(note(*a, e)),
                    }
                }
                self.advance(self.adverts.len(), Step::Share);
            }
            Step::Share => {
                let advertisers: Vec<usize> = self.adverts.iter().map(|a| a.id).collect();
                for (a, r) in answers {
                    let SecureReply::Share { sealed } = r else {
                        continue;
                    };
                    let to: Vec<usize> = sealed.iter().map(|(t, _)| *t).collect();
                    let mine: Vec<usize> = self
                        .around
                        .of(*a, &self.adverts)
                        .iter()
                        .map(|x| x.id)
                        .collect();
                    let whole = to == mine
                        && sealed
                            .iter()
                            .all(|(_, s)| s.len() == 2 * secagg::SEALED_LEN);
                    if !advertisers.contains(a) {
                        continue;
                    }
                    if !whole {
                        notes.push(note(*a, "not one sealed share per advertiser".into()));
                        continue;
                    }
                    self.participants.push(*a);
                    self.sealed
                        .extend(sealed.iter().map(|(t, s)| (*a, *t, s.clone())));
                }
                self.advance(self.participants.len(), Step::Mask);
            }
            Step::Mask => {
                for (a, r) in answers {
                    let SecureReply::Mask { masked } = r else {
                        continue;
                    };
                    if !self.participants.contains(a) {
                        continue;
                    }
                    match hex::parse_words(masked, self.len) {
                        Ok(w) => self.masked.push((*a, w)),
                        Err(e) => notes.push(note(*a, e)),
                    }
                }
                self.advance(self.masked.len(), Step::Reveal);
            }
            Step::Reveal => {
                for (a, r) in answers {
                    let SecureReply::Reveal { seeds, keys } = r else {
                        continue;
                    };
                    if !self.survivors().contains(a) {
                        continue;
                    }
                    let parse = |v: &[(usize, String)]| -> Result<Vec<(usize, Share)>, String> {
                        v.iter().map(|(u, s)| Ok((*u, share_of_hex(s)?))).collect()
                    };
                    match (parse(seeds), parse(keys)) {
                        (Ok(self_seeds), Ok(secrets)) => self.reveals.push(Reveal {
                            from: *a,
                            self_seeds,
                            secrets,
                        }),
                        (Err(e), _) | (_, Err(e)) => notes.push(note(*a, e)),
                    }
                }
                self.step = Step::Done(self.unmask(&mut notes));
            }
            Step::Done(_) => {}
        }
        self.notes.extend(notes);
    }

    /// To `next`, or to the end without a sum when fewer than the threshold are left.
    fn advance(&mut self, left: usize, next: Step) {
        self.step = if left < self.threshold {
            self.notes.push(format!(
                "secure round {}: {left} members left, the threshold is {}: the round yields no sum (every cohort vector missing)",
                self.plan.round, self.threshold
            ));
            Step::Done(None)
        } else {
            next
        };
    }

    fn unmask(&self, notes: &mut Vec<String>) -> Option<Vec<u64>> {
        let mut total = vec![0u64; self.len];
        for (_, y) in &self.masked {
            secagg::add_into(&mut total, y, true);
        }
        let (survivors, dropped) = (self.survivors(), self.dropped());
        let adverts: Vec<Advert> = self
            .adverts
            .iter()
            .filter(|a| self.participants.contains(&a.id))
            .copied()
            .collect();
        match secagg::unmask(
            &adverts,
            &total,
            (&survivors, &dropped),
            &self.reveals,
            self.threshold,
            &self.around,
        ) {
            Ok(sum) => Some(sum),
            Err(e) => {
                notes.push(format!(
                    "secure round {}: the sum could not be recovered ({e}): every cohort vector missing",
                    self.plan.round
                ));
                None
            }
        }
    }
}

/// An agent's own streams for secure aggregation, held at its site: `keys` for its key
/// material, `privacy` for its self-sampling coin and distributed-noise shares (each drawn
/// per round: `secagg::round_stream`, `crate::server::privacy_stream`).
pub struct MemberStreams {
    pub keys: Rng,
    pub privacy: Rng,
}

/// An agent's answer to a step of secure aggregation: `agent`'s keys, coin and noise shares
/// for the round come from its own streams' parts for it; `vector` is its message of the
/// round the step sums (None: it holds none, and answers only the steps that need none).
pub fn answer(
    ask: &SecureAsk,
    agent: usize,
    own: &MemberStreams,
    vector: Option<&Array1<f64>>,
) -> Result<SecureReply, String> {
    let base = &own.keys;
    let member = |round: usize| {
        let mut rng = secagg::round_stream(base, round);
        let (m, advert) = secagg::advertise(agent, &mut rng);
        (m, advert, rng)
    };
    let adverts =
        |w: &[WireAdvert]| -> Result<Vec<Advert>, String> { w.iter().map(advert_of).collect() };
    Ok(match ask {
        SecureAsk::Idle { .. } => SecureReply::Idle,
        SecureAsk::Advertise { round } => {
            let (_, a, _) = member(*round);
            SecureReply::Advertise {
                public: hex::bytes(&a.public),
                cipher: hex::bytes(&a.cipher),
            }
        }
        SecureAsk::Share {
            round,
            adverts: w,
            threshold,
        } => {
            let all = adverts(w)?;
            let (m, _, mut rng) = member(*round);
            let dealt = secagg::deal(&m, &all, *threshold, &mut rng);
            let sealed = dealt
                .iter()
                .zip(&all)
                .map(|((to, d), a)| (*to, hex::bytes(&secagg::seal(&m, a, *round, d))))
                .collect();
            SecureReply::Share { sealed }
        }
        SecureAsk::Mask {
            round,
            participants,
            part,
        } => {
            let omega = vector.ok_or("asked to mask a vector it does not hold")?;
            let (m, _, _) = member(*round);
            let (share_sd, threshold) = part.shares.map_or((None, 1), |(sd, t)| (Some(sd), t));
            let part = MemberPart {
                weights: part.weights.clone(),
                dp: part.dp,
                selected: part.selected,
                cohort: part.cohort,
                share_sd,
                coin: part.coin,
            }
            .decide(&own.privacy, *round);
            let (coef, _) = crate::server::coefficients(Some(omega), &part);
            let mut shares = privacy_stream(&own.privacy, *round, Draw::Shares);
            let input =
                crate::server::member_input(agent, &coef, omega, &part, threshold, &mut shares)?;
            SecureReply::Mask {
                masked: hex::words(&secagg::mask(&m, &adverts(participants)?, &input)),
            }
        }
        SecureAsk::Reveal {
            round,
            participants,
            inbox,
            survivors,
            dropped,
        } => {
            let all = adverts(participants)?;
            let (m, _, _) = member(*round);
            let dealt = inbox
                .iter()
                .map(|(from, s)| {
                    let a = all
                        .iter()
                        .find(|a| a.id == *from)
                        .ok_or(format!("a share from {from}, who is no participant"))?;
                    secagg::open(&m, a, *round, &hex::parse_bytes(s)?)
                })
                .collect::<Result<Vec<_>, String>>()?;
            let r = secagg::reveal(agent, &dealt, survivors, dropped)?;
            let hexed = |v: &[(usize, Share)]| v.iter().map(|(u, s)| (*u, share_hex(s))).collect();
            SecureReply::Reveal {
                seeds: hexed(&r.self_seeds),
                keys: hexed(&r.secrets),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{Purpose, stream};
    use crate::server::Server;
    use crate::spec::{InitRegion, Participation, SecureSpec, ServerSpec, WeightMode};

    /// A secure round among `n` agents without DP (every agent a member, threshold n -
    /// floor(n / 3)), run step by step through `answer` with the answers of `silent` (step,
    /// agent) left out: the sum the server recovers, decoded, and the members missing.
    fn secure_round(
        n: usize,
        silent: &[(usize, usize)],
    ) -> (Option<Vec<f64>>, Vec<usize>, Vec<Array1<f64>>) {
        let spec = ServerSpec {
            subregions: 2,
            dp: None,
            weights: WeightMode::Adaptive,
            a: 15.0,
            t_const: 5,
            t_decay: 5,
            init: InitRegion::Subregion,
            participation: Participation::default(),
            secure: Some(SecureSpec::plain(SecureSpec::DEFAULT_DROPOUT)),
        };
        let assignment: Vec<usize> = (0..n).map(|a| a % 2).collect();
        let mut server = Server::new(
            spec.clone(),
            assignment,
            stream(1, 0, 0, Purpose::Server),
            stream(1, 0, 0, Purpose::Participation),
        );
        let omegas: Vec<Array1<f64>> = (0..n)
            .map(|a| Array1::from_iter((0..3).map(|j| (a * 3 + j) as f64 * 0.37 - 2.0)))
            .collect();
        let bases: Vec<MemberStreams> = (0..n as u64)
            .map(|a| MemberStreams {
                keys: stream(9, 0, a, Purpose::SecureAggregation),
                privacy: stream(9, 0, a, Purpose::AgentPrivacy),
            })
            .collect();
        let plan = server.plan(4, &vec![true; n]);
        let threshold = spec.secure.unwrap().threshold(n);
        let mut phase = SecurePhase::new(plan, threshold, 2 * 3, &vec![true; n]);
        while let Some(step) = phase.step_number() {
            let answers: Vec<(usize, SecureReply)> = (0..n)
                .filter(|a| !silent.contains(&(step, *a)))
                .map(|a| {
                    (
                        a,
                        answer(&phase.ask(a), a, &bases[a], Some(&omegas[a])).unwrap(),
                    )
                })
                .collect();
            phase.take(&answers);
        }
        let (sum, missing) = phase.outcome().unwrap();
        let decoded = sum.map(|s| s.iter().map(|&w| crate::math::fixed::decode(w)).collect());
        // What the plain server would add: coef_i omega over the members given.
        let plan = phase.plan().clone();
        let expected: Vec<Array1<f64>> = (0..2)
            .map(|i| {
                let mut o = Array1::zeros(3);
                for a in (0..n).filter(|a| !missing.contains(a)) {
                    o.scaled_add(plan.member_part(a).weights[i], &omegas[a]);
                }
                o
            })
            .collect();
        (decoded, missing, expected)
    }

    fn assert_close(sum: &[f64], expected: &[Array1<f64>]) {
        let flat: Vec<f64> = expected.iter().flat_map(|o| o.iter().copied()).collect();
        assert_eq!(sum.len(), flat.len());
        for (u, v) in sum.iter().zip(&flat) {
            assert!((u - v).abs() < 1e-8, "{u} vs {v}");
        }
    }

    #[test]
    fn the_steps_give_the_members_sum_and_nothing_is_missing_without_faults() {
        let (sum, missing, expected) = secure_round(6, &[]);
        assert!(missing.is_empty());
        assert_close(&sum.unwrap(), &expected);
    }

    /// Agent 2 dealt its shares and then went silent: the survivors reveal its key, its
    /// pairwise masks come off, the sum is the other five's.
    #[test]
    fn a_member_that_drops_after_dealing_is_left_out_of_an_exact_sum() {
        let (sum, missing, expected) = secure_round(6, &[(3, 2)]);
        assert_eq!(missing, vec![2]);
        assert_close(&sum.unwrap(), &expected);
    }

    /// Agent 4 advertised and never dealt: the others mask without it, and it is not asked
    /// to mask; the sum is the other five's.
    #[test]
    fn a_member_that_never_deals_is_out_of_the_masks() {
        let (sum, missing, expected) = secure_round(6, &[(2, 4)]);
        assert_eq!(missing, vec![4]);
        assert_close(&sum.unwrap(), &expected);
    }

    /// Three of six drop after dealing (the threshold is 4): no sum, every member missing;
    /// and a survivor silent at the reveal is tolerated while the threshold holds.
    #[test]
    fn below_the_threshold_the_round_yields_nothing() {
        let (sum, missing, _) = secure_round(6, &[(3, 0), (3, 1), (3, 5)]);
        assert!(sum.is_none());
        assert_eq!(missing, (0..6).collect::<Vec<_>>());
        let (sum, missing, expected) = secure_round(6, &[(3, 1), (4, 3)]);
        assert_eq!(missing, vec![1]);
        assert_close(&sum.unwrap(), &expected);
    }

    /// What an agent uploads at step 3 looks nothing like its vector, and a share sealed to
    /// one member cannot be opened by another.
    #[test]
    fn uploads_are_masked_and_shares_sealed_to_their_recipient() {
        let base = |a: u64| stream(3, 0, a, Purpose::SecureAggregation);
        let mut r0 = secagg::round_stream(&base(0), 1);
        let mut r1 = secagg::round_stream(&base(1), 1);
        let mut r2 = secagg::round_stream(&base(2), 1);
        let (m0, a0) = secagg::advertise(0, &mut r0);
        let (m1, a1) = secagg::advertise(1, &mut r1);
        let (m2, _) = secagg::advertise(2, &mut r2);
        let dealt = secagg::deal(&m0, &[a0, a1], 2, &mut r0);
        let sealed = secagg::seal(&m0, &a1, 1, &dealt[1].1);
        assert_eq!(secagg::open(&m1, &a0, 1, &sealed).unwrap(), dealt[1].1);
        assert_ne!(secagg::open(&m2, &a0, 1, &sealed).unwrap(), dealt[1].1);
        assert_ne!(
            secagg::open(&m1, &a0, 2, &sealed).unwrap(),
            dealt[1].1,
            "another round's key"
        );
        let input = vec![5u64; 8];
        let y = secagg::mask(&m0, &[a0, a1], &input);
        assert!(y.iter().zip(&input).all(|(a, b)| a != b));
    }
}
