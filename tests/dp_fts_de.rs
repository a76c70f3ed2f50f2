//! The DP-FTS-DE family end to end.

mod common;
use common::*;
use fbo::runner::run_one;
use fbo::spec::Spec;
use std::collections::HashMap;
use std::fs;
use std::path::Path;

fn spec(text: &str) -> Spec {
    Spec::parse(text, Path::new("dp.toml")).unwrap()
}

fn landscape(s: &Spec) -> std::sync::Arc<fbo::objective::Landscape> {
    fbo::objective::synthetic::landscapes(&s.objective, s.total_agents(), s.seed).unwrap()[0]
        .clone()
}

#[test]
fn every_agent_is_traced_and_starts_in_its_sub_region() {
    let s = spec(SMALL_DP);
    let out = run_one(&s, 1, 0, landscape(&s)).unwrap();
    let mut per_agent: HashMap<usize, usize> = HashMap::new();
    for r in &out.rows {
        *per_agent.entry(r.agent).or_default() += 1;
        if r.source == "init" {
            // Agent n explores sub-region n mod 2: [0, 0.5] or (0.5, 1].
            let x = r.x[0];
            if r.agent % 2 == 0 {
                assert!(x <= 0.5, "agent {} init at {x}", r.agent);
            } else {
                assert!(x > 0.5, "agent {} init at {x}", r.agent);
            }
        }
    }
    assert_eq!(per_agent.len(), 12);
    assert!(per_agent.values().all(|&c| c == 3 + 8));
    assert_eq!(out.server.len(), 8, "one server round per iteration");
}

#[test]
fn domain_init_and_p_equal_one_reproduce_ts_for_every_agent() {
    // With p_t = 1 nobody uses the server, and with initial points from the whole domain the
    // agents are TS agents on the same streams.
    let text = SMALL_DP
        .replace("p_t = \"1-1/sqrt(t)\"", "p_t = 1.0")
        .replace("clip = 3.0", "clip = 3.0\ninit = \"domain\"");
    let s = spec(&text);
    let ts = run_one(&s, 0, 1, landscape(&s)).unwrap().rows;
    let dp = run_one(&s, 1, 1, landscape(&s)).unwrap().rows;
    let key = |rows: &[fbo::output::TraceRow]| {
        let mut v: Vec<(usize, i64, usize)> = rows
            .iter()
            .map(|r| (r.agent, r.iteration, r.x_index))
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&ts), key(&dp));
}

#[test]
fn agents_using_the_server_in_a_round_query_the_same_point() {
    let text = SMALL_DP.replace("p_t = \"1-1/sqrt(t)\"", "p_t = 0.1");
    let s = spec(&text);
    let rows = run_one(&s, 1, 2, landscape(&s)).unwrap().rows;
    let mut by_iter: HashMap<i64, Vec<usize>> = HashMap::new();
    for r in rows.iter().filter(|r| r.source == "server") {
        by_iter.entry(r.iteration).or_default().push(r.x_index);
    }
    assert!(
        by_iter.len() >= 6,
        "most iterations use the server at p_t = 0.1"
    );
    for (t, xs) in by_iter {
        assert!(xs.windows(2).all(|w| w[0] == w[1]), "iteration {t}: {xs:?}");
    }
}

#[test]
fn run_writes_server_and_privacy_files_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let spec_path = write(dir.path(), "dp.toml", SMALL_DP);
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.path().join(format!("t{threads}"));
        fbo_ok(
            "run",
            &spec_path,
            &out,
            &["--no-timing", "--threads", threads],
        );
        outs.push(out);
    }
    for f in ["trace.csv", "summary.csv", "server.csv", "privacy.csv"] {
        assert!(
            fs::read(outs[0].join(f)).unwrap() == fs::read(outs[1].join(f)).unwrap(),
            "{f}"
        );
    }
    // server.csv: 3 runs x 8 rounds for the one algorithm with a server.
    let server = fs::read_to_string(outs[0].join("server.csv")).unwrap();
    assert_eq!(server.lines().count(), 1 + 3 * 8);
    for line in server.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (sel, clipped): (usize, usize) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        assert!(sel <= 12 && clipped <= sel);
    }
    // privacy.csv: epsilon grows with iterations for each accountant; rdp <= rdp-int.
    let privacy = fs::read_to_string(outs[0].join("privacy.csv")).unwrap();
    let mut curves: HashMap<(String, String), Vec<f64>> = HashMap::new();
    for line in privacy.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] == "0" {
            curves
                .entry((f[0].into(), f[3].into()))
                .or_default()
                .push(f[5].parse().unwrap());
        }
    }
    let int = &curves[&("DP-FTS-DE P=2 q=0.5 z=1 S=3".into(), "rdp-int".into())];
    let rdp = &curves[&("DP-FTS-DE P=2 q=0.5 z=1 S=3".into(), "rdp".into())];
    assert_eq!(int.len(), 8);
    assert!(int.windows(2).all(|w| w[1] > w[0]));
    assert!(rdp.iter().zip(int).all(|(a, b)| a <= b));
}

#[test]
fn server_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, expect) in [
        (
            "q = 0.5",
            "q = 1.5",
            "key `algorithm[1].server.q`: must be a sampling rate in (0, 1], got 1.5",
        ),
        (
            "clip = 3.0",
            "clip = -1.0",
            "key `algorithm[1].server.clip`",
        ),
        (
            "subregions = 2",
            "subregions = 0",
            "key `algorithm[1].server.subregions`",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nserver = { dp = false, q = 0.3 }",
            "key `algorithm[1].server.q`: applies only with dp = true",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nweights = \"soft\"",
            "unknown weights \"soft\"",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nsampling = \"fixed\"",
            "fixed-size sampling has no PLD analysis",
        ),
        (
            "kind = \"ts\"",
            "kind = \"ts\"\nserver = { subregions = 2 }",
            "TS uses no federation",
        ),
    ] {
        let mut text = SMALL_DP.replace(from, to);
        if expect.contains("PLD") {
            text = text.replace(
                "accountants = [\"rdp-int\", \"rdp\"]",
                "accountants = [\"pld\"]",
            );
        }
        let p = write(dir.path(), "bad.toml", &text);
        let o = validate(&p);
        assert_eq!(o.status.code(), Some(2), "{expect}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(expect),
            "expected {expect:?} in {}",
            stderr(&o)
        );
    }
}
