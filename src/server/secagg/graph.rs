//! Who masks with whom (SecAgg+, Bell, Bonawitz, Gascon, Lepoint and Raykova, CCS 2020): in
//! plain secure aggregation every member masks with, and deals its shares to, every other
//! member, N - 1 key agreements and N - 1 sealed shares each; with `server.secure_neighbours =
//! k` each member does so with its k neighbours on a random cycle (a Harary graph: the k/2
//! members on either side of it), so a round costs N k agreements instead of N (N - 1).
//!
//! What it changes (docs/algorithms.md "Neighbourhoods"): a member's self-mask seed and mask
//! key are shared among its neighbourhood (itself and its k neighbours) with the threshold of
//! that neighbourhood's size, so a round completes only if every survivor and every dropped
//! member keeps that many surviving neighbours; and the pairwise masks cancel only over a
//! connected set, so the server unmasks only when the survivors' graph is connected (else it
//! would learn the sums of its parts). Agents that collude with the server learn a member's
//! vector when they are all of its neighbours, where plain secure aggregation needs all other
//! members.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha20Rng;

/// A round's graph over its cohort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// The members in the random cycle's order (for the complete graph, as given).
    cycle: Vec<usize>,
    /// Neighbours on each side of the cycle; None: every other member (plain secure
    /// aggregation).
    half: Option<usize>,
}

impl Graph {
    /// Every member a neighbour of every other.
    pub fn complete(members: &[usize]) -> Self {
        Graph {
            cycle: members.to_vec(),
            half: None,
        }
    }

    /// The members on a cycle shuffled by `seed` (the server's public draw), each adjacent to
    /// the `k / 2` on either side (`k` even); the complete graph when that is everyone.
    pub fn harary(members: &[usize], k: usize, seed: [u8; 32]) -> Self {
        if k + 1 >= members.len() {
            return Self::complete(members);
        }
        let mut cycle = members.to_vec();
        cycle.sort_unstable();
        cycle.shuffle(&mut ChaCha20Rng::from_seed(seed));
        Graph {
            cycle,
            half: Some(k / 2),
        }
    }

    /// How many members one neighbourhood holds (a member and its neighbours): the size its
    /// shares are dealt over, whose threshold applies.
    pub fn neighbourhood_size(&self) -> usize {
        match self.half {
            None => self.cycle.len(),
            Some(h) => 2 * h + 1,
        }
    }

    /// Member `u`'s neighbourhood, `u` included, in increasing order; empty if `u` is no
    /// member.
    pub fn around(&self, u: usize) -> Vec<usize> {
        let Some(p) = self.cycle.iter().position(|&v| v == u) else {
            return Vec::new();
        };
        let mut out: Vec<usize> = match self.half {
            None => self.cycle.clone(),
            Some(h) => {
                let n = self.cycle.len();
                (0..=2 * h)
                    .map(|d| self.cycle[(p + n + d - h) % n])
                    .collect()
            }
        };
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `u` and `v` (two members) mask with each other.
    pub fn adjacent(&self, u: usize, v: usize) -> bool {
        u != v && self.around(u).binary_search(&v).is_ok()
    }

    /// Whether the members `among` form a connected graph by the edges between them (the
    /// pairwise masks of a set cancel in its sum only; over parts that do not touch, the
    /// server would learn each part's sum).
    pub fn connected(&self, among: &[usize]) -> bool {
        let Some(&first) = among.first() else {
            return true;
        };
        if self.half.is_none() {
            return true;
        }
        let mut seen = vec![first];
        let mut todo = vec![first];
        while let Some(u) = todo.pop() {
            for v in self.around(u) {
                if among.contains(&v) && !seen.contains(&v) {
                    seen.push(v);
                    todo.push(v);
                }
            }
        }
        seen.len() == among.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harary_graph_has_k_neighbours_each_and_is_symmetric() {
        let members: Vec<usize> = (0..20).map(|a| a * 3).collect();
        let g = Graph::harary(&members, 4, [7; 32]);
        assert_eq!(g.neighbourhood_size(), 5);
        for &u in &members {
            let nb = g.around(u);
            assert_eq!(nb.len(), 5, "{u}: {nb:?}");
            assert!(nb.contains(&u));
            for &v in nb.iter().filter(|&&v| v != u) {
                assert!(g.adjacent(v, u), "{u} ~ {v} one way only");
            }
        }
        assert!(g.connected(&members));
        // Another seed, another cycle; the same seed, the same.
        assert_ne!(g, Graph::harary(&members, 4, [8; 32]));
        assert_eq!(g, Graph::harary(&members, 4, [7; 32]));
    }

    #[test]
    fn a_graph_as_wide_as_the_cohort_is_complete() {
        let members = [1, 4, 6, 9];
        let g = Graph::harary(&members, 4, [1; 32]);
        assert_eq!(g, Graph::complete(&members));
        assert_eq!(g.around(6), vec![1, 4, 6, 9]);
        assert!(g.connected(&[1, 9]));
    }

    /// On a cycle (k = 2) two members that are not adjacent, with every member between them
    /// gone, are two parts: the server must not unmask them.
    #[test]
    fn survivors_split_by_dropouts_are_not_connected() {
        let members: Vec<usize> = (0..8).collect();
        let g = Graph::harary(&members, 2, [3; 32]);
        let u = 0;
        let far = *members
            .iter()
            .find(|&&v| v != u && !g.adjacent(u, v))
            .expect("a non-neighbour on a cycle of 8");
        assert!(!g.connected(&[u, far]));
        assert!(g.connected(&members));
        assert!(g.connected(&[u]));
    }
}
