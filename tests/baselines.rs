//! The single-agent baselines (random, ei, ucb), through the library and the CLI.

use fbo::run::runner::run_one;
use fbo::spec::{Fantasy, Spec};
use std::path::Path;

mod common;
use common::*;

fn spec(text: &str) -> Spec {
    Spec::parse(text, Path::new("test.toml")).unwrap()
}

const BRANIN: &str = include_str!("fixtures/specs/baselines-branin.toml");

/// On a grid, random search queries every point once before it repeats one.
#[test]
fn random_search_on_a_grid_draws_without_replacement() {
    let s = spec(
        "name = \"r\"\nruns = 3\niterations = 18\ninitial_points = 2\n[objective]\nkind = \"synthetic-dp\"\ngrid = 20\nlength_scale = 0.1\n[federation]\nagents = 2\n[[algorithm]]\nkind = \"random\"\n",
    );
    let lands =
        fbo::objective::synthetic::landscapes(&s.objective, s.total_agents(), s.seed).unwrap();
    for run in 0..3 {
        let rows = run_one(&s, 0, run, lands[run % lands.len()].clone())
            .unwrap()
            .rows;
        for agent in 0..2 {
            let mut seen: Vec<usize> = rows
                .iter()
                .filter(|r| r.agent == agent)
                .map(|r| r.x_index.unwrap())
                .collect();
            assert_eq!(seen.len(), 20);
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), 20, "run {run} agent {agent} repeated a point");
        }
        assert!(
            rows.iter()
                .all(|r| r.source == "random" || r.source == "init")
        );
    }
}

/// On Branin (a box), EI and UCB beat random search by far, every run; UCB with a tiny beta
/// is pure exploitation of the posterior mean, and still ends near an optimum from 5 points.
#[test]
fn ei_and_ucb_optimise_where_random_search_does_not() {
    let s = spec(BRANIN);
    let lands = s.landscapes().unwrap();
    let mut finals = vec![Vec::new(); 4];
    for run in 0..10 {
        for (a, f) in finals.iter_mut().enumerate() {
            let rows = run_one(&s, a, run, lands[run % lands.len()].clone())
                .unwrap()
                .rows;
            let last = rows.iter().rfind(|r| r.iteration == 30).unwrap();
            f.push(last.simple_regret.unwrap());
            if a > 0 {
                assert!(
                    rows.iter()
                        .all(|r| r.source == "acquisition" || r.source == "init")
                );
            }
        }
    }
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let (random, ei, ucb) = (mean(&finals[0]), mean(&finals[1]), mean(&finals[2]));
    assert!(ei < 0.05 && ucb < 0.2, "EI {ei}, UCB {ucb}");
    assert!(random > 10.0 * ucb.max(ei), "random {random}");
    for ((r, e), u) in finals[0].iter().zip(&finals[1]).zip(&finals[2]) {
        assert!(e < r && u < r, "random {r}, EI {e}, UCB {u}");
    }
}

#[test]
fn baseline_keys_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, want) in [
        (
            "[[algorithm]]\nkind = \"ei\"\nbeta = 2.0\n",
            "key `algorithm[4].beta`: applies only to kind = ucb, consensus, cgp, design-density or fedgp",
        ),
        (
            "[[algorithm]]\nkind = \"ucb\"\nlabel = \"u\"\nbeta = -1.0\n",
            "key `algorithm[4].beta`: must be in (0, 1e6], got -1",
        ),
        (
            "[[algorithm]]\nkind = \"random\"\nlabel = \"r\"\nown_sample = \"rff\"\n",
            "key `algorithm[4].own_sample`: random, ei and ucb draw no Thompson sample",
        ),
        (
            "[[algorithm]]\nkind = \"ei\"\nlabel = \"e\"\nfeatures = 10\n",
            "key `algorithm[4].kind`: EI uses no federation",
        ),
        (
            "[[algorithm]]\nkind = \"ei\"\nlabel = \"e\"\nei = \"exp\"\n",
            "key `algorithm[4].ei`: unknown EI form \"exp\"; allowed: \"log\", \"log-noisy\", \"plain\"",
        ),
        (
            "[[algorithm]]\nkind = \"ucb\"\nlabel = \"u\"\nei = \"log\"\n",
            "key `algorithm[4].ei`: applies only to kind = ei, consensus, fedgp, fmtbo or design-density",
        ),
        (
            "[[algorithm]]\nkind = \"fmtbo\"\nei = \"log-noisy\"\n",
            "key `algorithm[4].ei`: allowed here: \"plain\" (the default), \"log\"; \"log-noisy\" applies to kind = ei, consensus and fedgp",
        ),
        (
            "[[algorithm]]\nkind = \"consensus\"\nei = \"log\"\n",
            "key `algorithm[4].ei`: applies only with acquisition = \"ei\"",
        ),
    ] {
        let s = write(dir.path(), "s.toml", &format!("{BRANIN}{extra}"));
        assert_refused(&s, want);
    }
    let forms = "[[algorithm]]\nkind = \"ei\"\nei = \"log-noisy\"\n[[algorithm]]\nkind = \"consensus\"\nacquisition = \"ei\"\nei = \"log\"\n";
    let s = write(dir.path(), "ok.toml", &format!("{BRANIN}{forms}"));
    let o = validate(&s);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Random, EI, UCB, UCB beta=1e-9, EI log-noisy"),
        "{out}"
    );
    assert!(
        out.contains("Consensus EI,") || out.contains("Consensus EI\n"),
        "{out}"
    );
}

/// EI's batch believes the model by default (`fantasy = "kriging-believer"`): its later batch
/// points are chosen with the earlier ones at the posterior mean, not the worst value, as
/// with `fantasy = "constant-liar"`. A round's first point sees no pending point, so round 1
/// opens on the same point under either rule; the rest of the round differs, stays distinct,
/// and the label names the rule where it is not the kind's default (UCB's is the liar).
/// Other kinds refuse the key.
#[test]
fn a_batch_can_believe_the_model_instead_of_lying() {
    let text = BRANIN
        .replace("iterations = 30", "iterations = 2\nbatch = 3")
        .replace(
            "[[algorithm]]\nkind = \"ucb\"\n[[algorithm]]\nkind = \"ucb\"\nbeta = 1e-9\n",
            "[[algorithm]]\nkind = \"ei\"\nfantasy = \"constant-liar\"\n\
             [[algorithm]]\nkind = \"ucb\"\nfantasy = \"kriging-believer\"\n",
        );
    let s = spec(&text);
    let labels: Vec<&str> = s.algorithms.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(labels, ["Random", "EI", "EI liar", "UCB believer"]);
    let fantasies: Vec<Fantasy> = s.algorithms[1..].iter().map(|a| a.fantasy).collect();
    assert_eq!(
        fantasies,
        [
            Fantasy::KrigingBeliever,
            Fantasy::ConstantLiar,
            Fantasy::KrigingBeliever
        ]
    );
    let ucb = spec(&BRANIN.replace("iterations = 30", "iterations = 2\nbatch = 3"));
    assert_eq!(ucb.algorithms[2].label, "UCB");
    assert_eq!(ucb.algorithms[2].fantasy, Fantasy::ConstantLiar);
    let land = s.landscapes().unwrap()[0].clone();
    let round1 = |a: usize| -> Vec<Vec<f64>> {
        let rows = run_one(&s, a, 0, land.clone()).unwrap().rows;
        rows.iter()
            .filter(|r| (1..=3).contains(&r.iteration))
            .map(|r| r.x.clone())
            .collect()
    };
    let (believer, liar) = (round1(1), round1(2));
    assert_eq!(
        liar[0], believer[0],
        "a round's first point has nothing pending"
    );
    assert_ne!(
        liar[1..],
        believer[1..],
        "later points see a different fantasy"
    );
    for (i, p) in believer.iter().enumerate() {
        for q in &believer[i + 1..] {
            let gap = p
                .iter()
                .zip(q)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(gap > 1e-3, "{p:?} and {q:?} in one round");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let ts = write(
        dir.path(),
        "ts.toml",
        &format!("{text}[[algorithm]]\nkind = \"ts\"\nfantasy = \"kriging-believer\"\n"),
    );
    assert_refused(
        &ts,
        "key `algorithm[4].fantasy`: applies only to kind = ei or ucb",
    );
    let bad = write(
        dir.path(),
        "bad.toml",
        &text.replace("\"constant-liar\"", "\"kriging\""),
    );
    assert_refused(
        &bad,
        "unknown fantasy \"kriging\"; allowed: \"constant-liar\", \"kriging-believer\"",
    );
}

/// `batch = k`: k evaluations per agent per round, numbered as evaluations in the trace
/// (round t holds iterations (t - 1) k + 1 ..= t k); EI's and UCB's constant liar and TS's
/// independent samples give k distinct points per round (EI's default believer need not: a
/// believed point keeps the model's noise variance, so a batch may nearly replicate it);
/// random search on a grid draws without replacement across the batch; the federated kinds
/// refuse the key.
#[test]
fn batches_of_evaluations_per_round() {
    let text = BRANIN
        .replace("iterations = 30", "iterations = 4\nbatch = 3")
        .replace(
            "kind = \"ei\"\n",
            "kind = \"ei\"\nfantasy = \"constant-liar\"\n",
        );
    let s = spec(&text);
    assert_eq!((s.batch, s.evaluations()), (3, 12));
    let land = s.landscapes().unwrap()[0].clone();
    for a in 0..s.algorithms.len() {
        let out = run_one(&s, a, 0, land.clone()).unwrap();
        let its: Vec<i64> = out.rows.iter().map(|r| r.iteration).collect();
        assert_eq!(
            its,
            (-4..=12).collect::<Vec<i64>>(),
            "{}",
            s.algorithms[a].label
        );
        for round in out.rows[5..].chunks(3) {
            for (i, p) in round.iter().enumerate() {
                for q in &round[i + 1..] {
                    let gap =
                        p.x.iter()
                            .zip(&q.x)
                            .map(|(a, b)| (a - b).abs())
                            .fold(0.0, f64::max);
                    assert!(
                        gap > 1e-3,
                        "{}: {:?} and {:?} in one round",
                        s.algorithms[a].label,
                        p.x,
                        q.x
                    );
                }
            }
        }
        // Deterministic: the same spec and seed give the same batch.
        let again = run_one(&s, a, 0, land.clone()).unwrap();
        let xy = |rows: &[fbo::run::output::TraceRow]| -> Vec<(Vec<f64>, f64)> {
            rows.iter().map(|r| (r.x.clone(), r.y)).collect()
        };
        assert_eq!(xy(&out.rows), xy(&again.rows));
    }
    let dir = tempfile::tempdir().unwrap();
    // With refit_every = 5 and batch = 10, 5 initial points refit every round (5 + 10 t); 4
    // never would (4 + 10 t), and are refused.
    let never = write(
        dir.path(),
        "never.toml",
        &text
            .replace("batch = 3", "batch = 10")
            .replace("initial_points = 5", "initial_points = 4"),
    );
    assert_refused(
        &never,
        "the observation count 4 + 10 t is never a multiple of 5",
    );
    let every = write(
        dir.path(),
        "every.toml",
        &text.replace("batch = 3", "batch = 10"),
    );
    assert!(validate(&every).status.success());
    let fts = format!("{text}[[algorithm]]\nkind = \"fts\"\n");
    let f = write(
        dir.path(),
        "fts.toml",
        &fts.replace("agents = 1", "agents = 3"),
    );
    assert_refused(
        &f,
        "key `batch`: applies to kinds ts, random, ei, ucb and dp-fts-de in rounds; algorithm[4] (FTS M=100) evaluates one point",
    );
}
