//! Pending evaluations (`parallel = k`): each agent keeps k evaluations running and chooses
//! its next query as soon as its oldest returns.

mod common;
use common::*;
use fbo::run::output::TraceRow;
use fbo::run::unit::run_one;
use fbo::spec::Spec;
use std::path::{Path, PathBuf};

/// Two agents on Branin, TS, log-EI and random search; `{extra}` adds top-level keys.
fn spec_text(extra: &str) -> String {
    format!(
        r#"
name = "pending"
seed = 5
runs = 1
iterations = 8
initial_points = 4
{extra}

[objective]
kind = "function"
function = "branin"
noise_var = 0.01

[federation]
agents = 2

[acquisition]
candidates = 200
starts = 3

[[algorithm]]
kind = "ts"

[[algorithm]]
kind = "ei"
ei = "log"

[[algorithm]]
kind = "random"
"#
    )
}

fn spec(text: &str) -> Spec {
    Spec::parse(text, Path::new("pending.toml")).unwrap()
}

fn rows(s: &Spec, alg: usize) -> Vec<TraceRow> {
    let land = s.landscapes().unwrap()[0].clone();
    run_one(s, alg, 0, land).unwrap().rows
}

/// An agent's rows after its initial points, in iteration order.
fn iterations(rows: &[TraceRow], agent: usize) -> Vec<&TraceRow> {
    let mut out: Vec<&TraceRow> = rows
        .iter()
        .filter(|r| r.agent == agent && r.iteration > 0)
        .collect();
    out.sort_by_key(|r| r.iteration);
    out
}

/// A spec of Branin's box with `objective` lines (a command's, or an external one's) and,
/// beside it, the same spec on the built-in function: (spec, built-in spec).
fn on_branin(
    dir: &Path,
    name: &str,
    head: &str,
    objective: &str,
    tail: &str,
) -> (PathBuf, PathBuf) {
    let spec = write(
        dir,
        &format!("{name}.toml"),
        &format!("{head}\n[objective]\n{objective}\ndirection = \"maximize\"\n{BRANIN_BOX}{tail}"),
    );
    let builtin = write(
        dir,
        &format!("{name}-fn.toml"),
        &format!("{head}\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n{tail}"),
    );
    (spec, builtin)
}

/// What a trace says was queried and seen: its first 12 columns, row by row.
fn queried(out: &Path) -> Vec<String> {
    trace_columns(out, 12)
}

#[test]
fn the_first_k_queries_are_a_batch_and_the_rest_are_chosen_as_results_return() {
    let k = 3;
    let pending = spec(&spec_text(&format!("parallel = {k}")));
    let batch = spec(&spec_text(&format!("batch = {k}")));
    let alone = spec(&spec_text(""));
    for alg in 0..3 {
        let (p, b, a) = (rows(&pending, alg), rows(&batch, alg), rows(&alone, alg));
        // Same initial points, then every agent's eight iterations, each traced once.
        assert_eq!(p.len(), 2 * (4 + 8));
        for agent in 0..2 {
            let (p, b, a) = (
                iterations(&p, agent),
                iterations(&b, agent),
                iterations(&a, agent),
            );
            assert_eq!(
                p.iter().map(|r| r.iteration).collect::<Vec<_>>(),
                (1..=8).collect::<Vec<_>>()
            );
            // Before any result returns the agent fills its k workers exactly as a batch of
            // k chooses its first round: the same points, the same y.
            for t in 0..k {
                assert_eq!(p[t].x, b[t].x, "algorithm {alg} agent {agent} query {t}");
                assert_eq!(p[t].y, b[t].y);
            }
            // Its first query is the one-at-a-time agent's; from query k + 1 on it has seen
            // only the first results, so the queries part from both.
            assert_eq!(p[0].x, a[0].x);
            if alg < 2 {
                assert_ne!(p[k].x, a[k].x, "algorithm {alg} agent {agent}");
                assert_ne!(p[k].x, b[k].x, "algorithm {alg} agent {agent}");
            }
        }
    }
}

#[test]
fn pending_queries_are_the_same_bytes_on_one_thread_or_two_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "p.toml",
        &spec_text("parallel = 4").replace("runs = 1", "runs = 3"),
    );
    let one =
        assert_same_bytes_on_one_and_two_threads(&spec, dir.path(), &["trace.csv", "summary.csv"]);
    assert_trace_of_a_fresh_run(&spec, &one, &dir.path().join("fresh"));
    assert_shards_merge_to_a_fresh_run(&spec, &one, &dir.path().join("shards"), 3);
}

/// With a clock, query t starts when query t - k has been observed (results are observed in
/// the order they were issued), and costs what the agent's t-th evaluation costs alone.
#[test]
fn on_the_clock_a_query_starts_when_the_one_k_before_it_is_observed() {
    let clock = "\n[clock]\nmedian_s = 10\nspread = 0.8\nsite_spread = 0.5\n";
    let k = 3;
    let alone = spec(&(spec_text("") + clock));
    let pending = spec(&(spec_text(&format!("parallel = {k}")) + clock));
    for alg in 0..2 {
        let (a, p) = (rows(&alone, alg), rows(&pending, alg));
        for agent in 0..2 {
            let init_end = a
                .iter()
                .filter(|r| r.agent == agent && r.iteration == 0)
                .map(|r| r.clock_s.unwrap())
                .next()
                .unwrap();
            let finish =
                |rs: &[&TraceRow]| rs.iter().map(|r| r.clock_s.unwrap()).collect::<Vec<_>>();
            let fa = finish(&iterations(&a, agent));
            let fp = finish(&iterations(&p, agent));
            // Alone, the agent's t-th cost is the gap between its finishes.
            let cost = |t: usize| fa[t] - if t == 0 { init_end } else { fa[t - 1] };
            let mut observed = init_end;
            for t in 0..8 {
                if t >= k {
                    observed = observed.max(fp[t - k]);
                }
                let want = observed + cost(t);
                assert!(
                    (fp[t] - want).abs() < 1e-9,
                    "algorithm {alg} agent {agent} query {}: {} against {want}",
                    t + 1,
                    fp[t]
                );
            }
            // Three workers finish the same eight evaluations sooner.
            assert!(fp[7] < fa[7], "{} against {}", fp[7], fa[7]);
        }
    }
}

#[test]
fn parallel_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |name: &str, text: String, want: &str| {
        assert_refused(&write(dir.path(), name, &text), want);
    };
    refused(
        "range.toml",
        spec_text("parallel = 0"),
        "key `parallel`: must be an integer in [1, 64], got 0",
    );
    refused(
        "both.toml",
        spec_text("parallel = 2\nbatch = 2"),
        "parallel = 2 proposes as each returns; set one of them to 1",
    );
    refused(
        "fts.toml",
        spec_text("parallel = 2") + "\n[[algorithm]]\nkind = \"fts\"\nfeatures = 20\n",
        "applies to kinds ts, random, ei and ucb; algorithm[3] (FTS",
    );
}

/// A command with parallel = 3: three evaluations of the agent run at once, never more, and
/// the queries are those of the built-in function; a rerun starts nothing.
#[test]
fn a_command_keeps_k_evaluations_running() {
    let dir = tempfile::tempdir().unwrap();
    let head = "name = \"cmd\"\nseed = 5\nruns = 1\niterations = 7\ninitial_points = 3\nparallel = 3\n\n[acquisition]\ncandidates = 200\nstarts = 3\n";
    let tail = "\n[federation]\nagents = 1\n\n[[algorithm]]\nkind = \"ei\"\nei = \"log\"\n";
    let objective = format!(
        "kind = \"command\"\ncommand = [{:?}]\nconcurrency = 8",
        toy().display().to_string()
    );
    let (cmd, builtin) = on_branin(dir.path(), "cmd", head, &objective, tail);
    let events = dir.path().join("events");
    let count = dir.path().join("count");
    let run = || {
        fbo()
            .arg("run")
            .arg(&cmd)
            .arg("--out")
            .arg(dir.path().join("cmd"))
            .args(["--quiet", "--no-timing"])
            .env("TOY_SLEEP_MS", "200")
            .env("TOY_EVENTS", &events)
            .env("TOY_COUNT", &count)
            .output()
            .unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    fbo_ok("run", &builtin, &dir.path().join("fn"), &["--no-timing"]);
    let log = std::fs::read_to_string(&events).unwrap();
    assert_eq!(log.len(), 2 * (3 + 7), "{log}");
    // The three initial points together, then the first three queries, and three at once
    // until the last ones: never more than the agent's workers, though 8 are allowed.
    let (mut now, mut most) = (0i32, 0i32);
    for c in log.chars() {
        now += if c == '+' { 1 } else { -1 };
        most = most.max(now);
    }
    assert_eq!(most, 3, "{log}");
    assert_eq!(
        queried(&dir.path().join("cmd")),
        queried(&dir.path().join("fn"))
    );
    // The journal replays: nothing runs again and the trace is the same.
    std::fs::remove_file(&count).unwrap();
    let before = queried(&dir.path().join("cmd"));
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!count.exists() || std::fs::read_to_string(&count).unwrap().is_empty());
    assert_eq!(queried(&dir.path().join("cmd")), before);
}

/// Run by hand (`kind = "external"`): `fbo ask` hands out an agent's k pending queries at
/// once, k more once they are told, and the finished run is the built-in function's.
#[test]
fn ask_hands_out_k_queries_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let head = "name = \"ext\"\nseed = 5\nruns = 1\niterations = 7\ninitial_points = 3\nparallel = 3\n\n[acquisition]\ncandidates = 200\nstarts = 3\n";
    let tail = "\n[federation]\nagents = 2\n\n[[algorithm]]\nkind = \"ts\"\n";
    let (ext, builtin) = on_branin(dir.path(), "ext", head, "kind = \"external\"", tail);
    let state = dir.path().join("state");
    let mut told = Vec::new();
    loop {
        let n = tell_branin(&ext, &state, dir.path()).expect("the state folder is free");
        if n == 0 {
            break;
        }
        told.push(n);
        assert!(told.len() < 20, "ask/tell does not finish: {told:?}");
    }
    // Two agents: their initial points, then 3, 3 and the last 1 query each.
    assert_eq!(told, vec![6, 6, 6, 2]);
    fbo_ok("run", &ext, &state, &["--no-timing"]);
    fbo_ok("run", &builtin, &dir.path().join("fn"), &["--no-timing"]);
    assert_eq!(queried(&state), queried(&dir.path().join("fn")));
}
