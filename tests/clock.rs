//! The simulated clock (`[clock]`) and agents at their own pace (`pace = "asynchronous"`).

mod common;
use common::*;
use fbo::run::output::TraceRow;
use fbo::run::unit::run_one;
use fbo::spec::Spec;
use std::collections::BTreeMap;
use std::path::Path;

/// Six agents of a DP-family objective in rounds and at their own pace, and TS alone, on one
/// clock whose sites differ about e^2 in speed.
const CLOCKED: &str = include_str!("fixtures/specs/clock-clocked.toml");

fn spec(text: &str) -> Spec {
    Spec::parse(text, Path::new("clocked.toml")).unwrap()
}

/// (agent, iteration) -> simulated finish time, of one algorithm's run.
fn finish_times(rows: &[TraceRow]) -> BTreeMap<(usize, i64), f64> {
    rows.iter()
        .map(|r| ((r.agent, r.iteration), r.clock_s.expect("a [clock] run")))
        .collect()
}

/// Each cost is the difference of the lone agent's consecutive finish times (positive); in
/// rounds every agent starts iteration t when the slowest has finished t - 1.
fn assert_rounds_wait_for_the_slowest(
    rounds: &BTreeMap<(usize, i64), f64>,
    alone: &BTreeMap<(usize, i64), f64>,
    n: usize,
    t_max: i64,
) {
    for t in 1..=t_max {
        let start = (0..n)
            .map(|a| rounds[&(a, t - 1)])
            .fold(f64::NEG_INFINITY, f64::max);
        for a in 0..n {
            let cost = alone[&(a, t)] - alone[&(a, t - 1)];
            assert!(cost > 0.0);
            let want = start + cost;
            assert!(
                (rounds[&(a, t)] - want).abs() <= 1e-9 * want,
                "agent {a} iteration {t}: {} vs {want}",
                rounds[&(a, t)]
            );
        }
    }
}

#[test]
fn rounds_wait_for_the_slowest_site_and_agents_alone_or_asynchronous_never_wait() {
    let s = spec(CLOCKED);
    let land = s.landscapes().unwrap()[0].clone();
    let run = |a: usize| finish_times(&run_one(&s, a, 1, land.clone()).unwrap().rows);
    let (rounds, own, alone) = (run(0), run(1), run(2));
    let (n, t_max) = (6, 10i64);
    // Alone, agent a's clock is the running sum of its costs, and an agent at its own pace
    // waits for no one: its evaluations finish when the same costs say (the i-th evaluation
    // of an agent costs the same in every algorithm of the spec).
    assert_eq!(own.len(), alone.len());
    for (k, t) in &alone {
        assert!((own[k] - t).abs() <= 1e-9 * t, "{k:?}: {} vs {t}", own[k]);
    }
    assert_rounds_wait_for_the_slowest(&rounds, &alone, n, t_max);
    // Initial points run one after another from 0, the same in every algorithm.
    for a in 0..n {
        assert_eq!(rounds[&(a, -1)], alone[&(a, -1)]);
        assert!(rounds[&(a, -1)] < rounds[&(a, 0)]);
    }
    // Sites differ: the slowest agent's last finish in rounds is no earlier than alone, and
    // the other agents end far sooner at their own pace than in rounds.
    let last = |m: &BTreeMap<(usize, i64), f64>, a: usize| m[&(a, t_max)];
    let sum = |m: &BTreeMap<(usize, i64), f64>| (0..n).map(|a| last(m, a)).sum::<f64>();
    assert!(
        sum(&own) < 0.8 * sum(&rounds),
        "{} {}",
        sum(&own),
        sum(&rounds)
    );
}

/// The target-and-senders forms at their own pace (FTS with a fresh message every iteration,
/// RGPE): a target's messages come from senders, never from another target, so each target
/// keeps its own clock (its finish times are TS alone's: the running sums of the same costs),
/// where in rounds every target starts iteration t when the slowest has finished t - 1. The
/// queries and values are the same either way.
#[test]
fn targets_of_the_senders_forms_at_their_own_pace_wait_for_nobody() {
    let text = CLOCKED
        .replace(
            "[server]\nsubregions = 2\ndp = true\nq = 0.5\nz = 1.0\nclip = 3.0\n",
            "",
        )
        .replace("[privacy]\naccountants = [\"rdp-int\"]\n", "");
    let text = text.replace(
        "kind = \"dp-fts-de\"\nlabel = \"rounds\"\n",
        "kind = \"fts\"\nlabel = \"rounds\"\nmessages = \"every-iteration\"\n",
    );
    let text = text.replace(
        "kind = \"dp-fts-de\"\nlabel = \"own pace\"\n",
        "kind = \"fts\"\nlabel = \"own pace\"\nmessages = \"every-iteration\"\n",
    ) + "\n[[algorithm]]\nkind = \"rgpe\"\npace = \"asynchronous\"\n";
    let s = spec(&text);
    let land = s.landscapes().unwrap()[0].clone();
    let rows = |a: usize| run_one(&s, a, 1, land.clone()).unwrap().rows;
    let (rounds, own, alone, rgpe) = (rows(0), rows(1), rows(2), rows(3));
    let (n, t_max) = (6, 10i64);
    let values = |r: &[TraceRow]| -> Vec<_> {
        r.iter()
            .map(|r| (r.agent, r.iteration, r.x_index, r.y.to_bits()))
            .collect()
    };
    assert_eq!(values(&rounds), values(&own));
    let (rounds, own, alone, rgpe) = (
        finish_times(&rounds),
        finish_times(&own),
        finish_times(&alone),
        finish_times(&rgpe),
    );
    assert_eq!(own.len(), n * (t_max as usize + 2));
    for (k, t) in &alone {
        assert!((own[k] - t).abs() <= 1e-9 * t, "{k:?}: {} vs {t}", own[k]);
        assert!((rgpe[k] - t).abs() <= 1e-9 * t, "{k:?}: {} vs {t}", rgpe[k]);
    }
    assert_rounds_wait_for_the_slowest(&rounds, &alone, n, t_max);
}

#[test]
fn asynchronous_runs_are_byte_identical_across_threads_and_release_at_most_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "clocked.toml", CLOCKED);
    let files = ["trace.csv", "summary.csv", "server.csv", "privacy.csv"];
    let one = assert_same_bytes_on_one_and_two_threads(&path, dir.path(), &files);
    let server = std::fs::read_to_string(one.join("server.csv")).unwrap();
    for run in 0..3 {
        let count = |label: &str| {
            server
                .lines()
                .filter(|l| l.starts_with(&format!("{label},{run},")))
                .count()
        };
        assert_eq!(count("rounds"), 10);
        let releases = count("own pace");
        assert!((1..=10).contains(&releases), "{releases} releases");
    }
    // The server's point reaches agents at their own pace too, each release at most once per
    // agent.
    let trace = std::fs::read_to_string(one.join("trace.csv")).unwrap();
    let from_server = trace
        .lines()
        .filter(|l| l.starts_with("own pace,") && l.contains(",server,"))
        .count();
    assert!(from_server > 0);
    // Sharded and merged, an asynchronous spec gives the fresh run's bytes.
    let (shards, scratch) = (dir.path().join("shards"), dir.path().join("scratch"));
    assert_shards_merge_to_a_fresh_run(&path, &shards, &scratch, 3);
}

/// The frameworks with a server step at their own pace: consensus, CGP-UCB, design
/// densities, FMTBO and FedGP run on the clock like DP-FTS-DE, never wait (each agent's finish times
/// are the lone agent's), write the same bytes on one and two threads, and a fast agent queries
/// each consensus point at most once.
#[test]
fn frameworks_at_their_own_pace_never_wait_and_use_a_point_once() {
    let head = CLOCKED[..CLOCKED.find("[[algorithm]]").unwrap()].replace(
        "[server]\nsubregions = 2\ndp = true\nq = 0.5\nz = 1.0\nclip = 3.0\n\n[privacy]\naccountants = [\"rdp-int\"]\n\n",
        "",
    );
    assert!(!head.contains("[server]"));
    // A release every 40 s, so that counting releases before a query is plain arithmetic.
    let head = head.replace("spread = 0.5\n", "spread = 0.5\nperiod_s = 40\n");
    let text = format!(
        "{head}[[algorithm]]\nkind = \"ts\"\nlabel = \"alone\"\n\n\
         [[algorithm]]\nkind = \"consensus\"\nlabel = \"consensus\"\npace = \"asynchronous\"\n\n\
         [[algorithm]]\nkind = \"cgp\"\nlabel = \"cgp\"\npace = \"asynchronous\"\n\n\
         [[algorithm]]\nkind = \"design-density\"\nlabel = \"density\"\npace = \"asynchronous\"\n\n\
         [[algorithm]]\nkind = \"fmtbo\"\nlabel = \"fmtbo\"\npace = \"asynchronous\"\n\n\
         [[algorithm]]\nkind = \"fedgp\"\nlabel = \"fedgp\"\npace = \"asynchronous\"\n"
    );
    let s = spec(&text);
    let land = s.landscapes().unwrap()[0].clone();
    let alone = finish_times(&run_one(&s, 0, 1, land.clone()).unwrap().rows);
    for a in 1..6 {
        let own = finish_times(&run_one(&s, a, 1, land.clone()).unwrap().rows);
        assert_eq!(own.len(), alone.len(), "{}", s.algorithms[a].label);
        for (k, t) in &alone {
            assert!(
                (own[k] - t).abs() <= 1e-9 * t,
                "{} {k:?}: {} vs {t}",
                s.algorithms[a].label,
                own[k]
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "frameworks.toml", &text);
    let one =
        assert_same_bytes_on_one_and_two_threads(&path, dir.path(), &["trace.csv", "summary.csv"]);
    // Consensus points reach agents at their own pace, and no agent queries one twice: by
    // the time an agent starts a query (its previous evaluation's finish), it has queried at
    // most one server point per release made so far (one every 40 s).
    let trace = Csv::read(&one.join("trace.csv"));
    let mut last: BTreeMap<(&str, &str), (f64, usize)> = BTreeMap::new();
    let mut from_server = 0;
    for r in trace.records() {
        if r.get("algorithm") != "consensus" {
            continue;
        }
        let key = (r.get("run"), r.get("agent"));
        let (started, mut used) = last.get(&key).copied().unwrap_or((0.0, 0));
        if r.get("source") == "server" {
            used += 1;
            from_server += 1;
            let releases = (started / 40.0).floor() as usize;
            assert!(
                used <= releases,
                "{key:?}: {used} server points by {started} s"
            );
        }
        last.insert(key, (r.num("sim_clock_s"), used));
    }
    assert!(from_server > 0, "no consensus point was queried");
}

/// A server releasing on arrivals (`release = "arrivals"`, `release_after = 3` of six
/// agents): its agents still never wait, and consensus queries the server's point exactly
/// when a release has come since its last one that holds a point for it. Release k comes with
/// the 3k-th return of an evaluation (each return is the start of the agent's next query: its
/// message is sent then), at most `iterations` times; the agent whose return completes the
/// count chooses under the new release at once.
#[test]
fn a_server_releasing_on_arrivals_releases_at_every_third_return() {
    let head = CLOCKED[..CLOCKED.find("[server]").unwrap()].to_string();
    let text = head
        + "[clock]\nmedian_s = 10\nsite_spread = 1.0\nspread = 0.5\n\n\
           [[algorithm]]\nkind = \"ts\"\nlabel = \"alone\"\n\n\
           [[algorithm]]\nkind = \"consensus\"\nlabel = \"consensus\"\npace = \"asynchronous\"\n\
           release = \"arrivals\"\nrelease_after = 3\n";
    let s = spec(&text);
    let land = s.landscapes().unwrap()[0].clone();
    let alone = finish_times(&run_one(&s, 0, 1, land.clone()).unwrap().rows);
    let out = run_one(&s, 1, 1, land).unwrap();
    let own = finish_times(&out.rows);
    assert_eq!(own.len(), alone.len());
    for (k, t) in &alone {
        assert!((own[k] - t).abs() <= 1e-9 * t, "{k:?}: {} vs {t}", own[k]);
    }
    // Each query's start: its agent's previous finish (iteration 0: its last initial point).
    let (n, t_max) = (6usize, 10usize);
    let mut starts: Vec<(f64, usize, i64)> = Vec::new();
    for a in 0..n {
        for t in 1..=t_max as i64 {
            starts.push((own[&(a, t - 1)], a, t));
        }
    }
    // Events in the driver's order: by time, ties by agent.
    starts.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let source: BTreeMap<(usize, i64), bool> = out
        .rows
        .iter()
        .filter(|r| r.iteration >= 1)
        .map(|r| ((r.agent, r.iteration), r.source == "server"))
        .collect();
    // The driver by hand: each start sends the agent's message (sent before `releases`
    // releases); every third completes a release, which holds the messages sent within the
    // last 4 releases (clock.staleness); an agent with a release it has not used takes the
    // point the release has for it: one for each sender of at least two, none at the
    // release T, whose consensus weights are the identity.
    let (after, staleness) = (3, 4);
    let (mut releases, mut arrived) = (0usize, 0usize);
    let mut sent: Vec<Option<usize>> = vec![None; n];
    let mut senders: Vec<usize> = Vec::new();
    let mut used = vec![0usize; n];
    let mut from_server = 0;
    for &(_, a, t) in &starts {
        sent[a] = Some(releases);
        arrived += 1;
        if arrived % after == 0 && releases < t_max {
            releases += 1;
            senders = (0..n)
                .filter(|&b| sent[b].is_some_and(|r| releases - 1 - r < staleness))
                .collect();
        }
        let mut want = false;
        if releases > used[a] {
            used[a] = releases;
            want = senders.contains(&a) && senders.len() >= 2 && releases < t_max;
        }
        assert_eq!(
            source[&(a, t)],
            want,
            "agent {a} iteration {t}: {releases} releases"
        );
        from_server += usize::from(want);
    }
    assert!(from_server >= 10, "{from_server} server points");
    // The same bytes on one and two threads.
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "arrivals.toml", &text);
    assert_same_bytes_on_one_and_two_threads(&path, dir.path(), &["trace.csv"]);
}

/// FedGP at its own pace: each release is its solver's run among the agents fresh at that
/// time, and every agent decides under the latest release until the next. So the model behind
/// each query (beliefs.csv) is the agent's own fit before the first release (they differ
/// across agents) and afterwards the latest release's hyperparameters, exactly the same for
/// every query started between the same two releases (one every 40 s); what an agent has sent
/// is nothing before the first release and grows only as it answers releases.
#[test]
fn fedgp_at_its_own_pace_decides_under_the_latest_release() {
    let head = CLOCKED[..CLOCKED.find("[server]").unwrap()].to_string();
    let text = head
        + "[clock]\nmedian_s = 10\nsite_spread = 1.0\nspread = 0.5\nperiod_s = 40\n\n\
           [output]\nbeliefs = true\n\n\
           [[algorithm]]\nkind = \"fedgp\"\npace = \"asynchronous\"\n";
    let s = spec(&text);
    let land = s.landscapes().unwrap()[0].clone();
    let out = run_one(&s, 0, 1, land).unwrap();
    let finish = finish_times(&out.rows);
    let started = |agent: usize, it: usize| finish[&(agent, it as i64 - 1)];
    let releases_by = |time: f64| ((time / 40.0).floor() as usize).min(10);
    let mut by_release: BTreeMap<usize, Vec<(usize, &fbo::surrogate::gp::GpHyper)>> =
        BTreeMap::new();
    for b in &out.beliefs {
        let r = releases_by(started(b.agent, b.iteration));
        by_release
            .entry(r)
            .or_default()
            .push((b.agent, &b.belief.hyper));
    }
    assert_eq!(out.beliefs.len(), 6 * 10, "one belief per query");
    let own = &by_release[&0];
    assert!(
        own.iter().any(|(_, h)| h != &own[0].1),
        "before the first release every agent decides under its own fit"
    );
    let shared: Vec<_> = by_release.iter().filter(|(r, _)| **r > 0).collect();
    assert!(shared.len() >= 3, "{} releases used", shared.len());
    for (r, hypers) in &shared {
        for (agent, h) in hypers.iter() {
            assert_eq!(*h, hypers[0].1, "agent {agent} after release {r}");
        }
    }
    assert_ne!(shared[0].1[0].1, shared[shared.len() - 1].1[0].1);
    let mut last = vec![0u64; 6];
    for r in out.rows.iter().filter(|r| r.iteration >= 1) {
        let t = r.iteration as usize;
        if releases_by(started(r.agent, t)) == 0 {
            assert_eq!(r.params_sent, 0, "agent {} iteration {t}", r.agent);
        }
        assert!(r.params_sent >= last[r.agent]);
        last[r.agent] = r.params_sent;
    }
    assert!(last.iter().all(|&p| p > 0), "{last:?}");
}

#[test]
fn a_wall_clock_budget_stops_every_agent_at_the_horizon_and_resumes() {
    let text = CLOCKED.replace("spread = 0.5\n", "spread = 0.5\nhorizon_s = 150\n");
    let s = spec(&text);
    let land = s.landscapes().unwrap()[0].clone();
    let mut evaluated = Vec::new();
    for a in 0..3 {
        let rows = run_one(&s, a, 0, land.clone()).unwrap().rows;
        let t = finish_times(&rows);
        // Every evaluation started before the horizon: the agent's previous one (or, in
        // rounds, every agent's previous one) had finished by then.
        for (&(agent, it), _) in t.iter().filter(|((_, it), _)| *it >= 1) {
            let start = if a == 0 {
                (0..6).map(|b| t[&(b, it - 1)]).fold(0.0, f64::max)
            } else {
                t[&(agent, it - 1)]
            };
            assert!(
                start < 150.0,
                "{}: started at {start}",
                s.algorithms[a].label
            );
        }
        evaluated.push(rows.len());
    }
    // Fast agents at their own pace evaluate more than in rounds within the same budget.
    assert!(evaluated[1] > evaluated[0], "{evaluated:?}");
    assert!(evaluated[0] < 6 * 12, "{evaluated:?}");
    // A budgeted run's parts are judged whole: shards merge to the fresh run's bytes.
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "budget.toml", &text);
    let (shards, scratch) = (dir.path().join("shards"), dir.path().join("scratch"));
    assert_shards_merge_to_a_fresh_run(&path, &shards, &scratch, 2);
}

#[test]
fn compare_at_clock_pairs_what_each_agent_had_by_then() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "clocked.toml", CLOCKED);
    let out = dir.path().join("out");
    fbo_ok("run", &path, &out, &["--no-timing"]);
    let o = fbo_output([
        "compare",
        out.to_str().unwrap(),
        "--metric",
        "simple-regret",
        "--at-clock",
        "1000,1e6",
        "--allow-init-differences",
        "--csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = String::from_utf8(o.stdout).unwrap();
    assert!(csv.starts_with("metric,clock_s,algorithm,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
    // Past every finish, the comparison at a time is the one at the last iteration.
    let last = fbo_output([
        "compare",
        out.to_str().unwrap(),
        "--metric",
        "simple-regret",
        "--csv",
        "--allow-init-differences",
    ]);
    let last = String::from_utf8(last.stdout).unwrap();
    // algorithm, baseline, n, mean_diff, wins, ties, losses, p_value (the interval's
    // resamples and Holm's adjustment depend on what else is compared).
    let tail = |l: &str| -> Vec<String> {
        let f: Vec<&str> = l.split(',').collect();
        [2, 3, 4, 5, 8, 9, 10, 11]
            .iter()
            .map(|&i| f[i].to_string())
            .collect()
    };
    let at_end: Vec<Vec<String>> = csv.lines().skip(3).map(tail).collect();
    let at_last: Vec<Vec<String>> = last.lines().skip(1).map(tail).collect();
    assert_eq!(at_end, at_last);
    // Before an agent's first evaluation there is nothing to compare.
    let o = fbo_output(["compare", out.to_str().unwrap(), "--at-clock", "0.001"]);
    assert_exit(
        &o,
        2,
        "no agent has finished an evaluation in every algorithm by 0.001 s",
    );
}

/// A toy table's (metric, training seconds) for two agents of three points each.
const TOY_COSTS: [(f64, f64); 6] = [
    (0.1, 3.0),
    (0.2, 5.0),
    (0.3, 7.0),
    (0.9, 30.0),
    (0.0, 50.0),
    (0.5, 70.0),
];

#[test]
fn recorded_training_seconds_are_the_clock_of_a_table() {
    let dir = tempfile::tempdir().unwrap();
    write_toy_table(dir.path(), 2, &TOY_COSTS);
    let spec = write(
        dir.path(),
        "spec.toml",
        "name = \"costs\"\nseed = 5\nruns = 2\niterations = 4\ninitial_points = 1\n\
         [objective]\nkind = \"table\"\ntable = \"table.toml\"\n\
         [clock]\n\
         [[algorithm]]\nkind = \"ts\"\n",
    );
    let res = dir.path().join("res");
    fbo_ok("run", &spec, &res, &["--no-timing"]);
    for r in Csv::read(&res.join("trace.csv")).records() {
        // An agent alone: its clock is the sum of the recorded seconds it evaluated.
        assert_eq!(r.num("train_s"), r.num("sim_clock_s"), "{:?}", r.fields);
    }
}

#[test]
fn pace_and_clock_are_refused_where_they_do_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let no_clock = CLOCKED.replace("[clock]\nmedian_s = 10\n", "[output]\n");
    let no_clock = no_clock.replace("site_spread = 1.0\nspread = 0.5\n", "");
    let p = write(dir.path(), "a.toml", &no_clock);
    assert_refused(&p, "algorithm[1].pace");
    let ts = CLOCKED.replace(
        "kind = \"ts\"\n",
        "kind = \"ts\"\npace = \"asynchronous\"\n",
    );
    let p = write(dir.path(), "b.toml", &ts);
    assert_refused(
        &p,
        "applies to kinds whose server takes whatever messages are fresh (\"dp-fts-de\", \"consensus\", \"cgp\", \"design-density\", \"fmtbo\", \"fedgp\") and to the target-and-senders forms (\"fts\", \"rgpe\", \"taf\"); ts keeps synchronous rounds",
    );
    let p = write(
        dir.path(),
        "c.toml",
        &CLOCKED.replace("site_spread = 1.0", "site_spread = 6"),
    );
    assert_refused(&p, "clock.site_spread");
    let p = write(
        dir.path(),
        "d.toml",
        &CLOCKED.replace("spread = 0.5\n", "spread = 0.5\nperiod_s = -1\n"),
    );
    assert_refused(&p, "clock.period_s");
    let p = write(
        dir.path(),
        "e.toml",
        &CLOCKED.replace("pace = \"asynchronous\"", "pace = \"sometimes\""),
    );
    assert_refused(&p, "unknown pace \"sometimes\"");
    // The release rule's keys: only on an asynchronous server, `release_after` only with
    // "arrivals", an unknown rule by the list.
    let own = "pace = \"asynchronous\"\n";
    let release = |extra: &str| CLOCKED.replace(own, &format!("{own}{extra}"));
    for (name, text, want) in [
        (
            "f.toml",
            release("release_after = 3\n"),
            "algorithm[1].release_after",
        ),
        (
            "g.toml",
            release("release = \"arrivals\"\nrelease_after = 0\n"),
            "algorithm[1].release_after",
        ),
        (
            "h.toml",
            release("release = \"often\"\n"),
            "allowed: \"periodic\", \"arrivals\"",
        ),
        (
            "i.toml",
            CLOCKED.replace(
                "label = \"rounds\"\n",
                "label = \"rounds\"\nrelease = \"arrivals\"\n",
            ),
            "algorithm[0].release",
        ),
    ] {
        assert_refused(&write(dir.path(), name, &text), want);
    }
    // Both rules are valid on a synthetic clock, private or not.
    for extra in ["release = \"arrivals\"\n", "release = \"periodic\"\n"] {
        assert_valid(&write(dir.path(), "j.toml", &release(extra)));
    }
}

#[track_caller]
fn assert_valid(spec: &Path) {
    let o = validate(spec);
    assert!(o.status.success(), "{}: {}", spec.display(), stderr(&o));
}

/// A private server releasing on arrivals where a cost is the recorded training seconds of
/// the point evaluated: its release times would reveal which points the agents chose, so the
/// spec is refused, naming the algorithm's `release`; periodic releases and a non-private server are
/// accepted on the same table.
#[test]
fn a_private_server_on_arrivals_is_refused_where_costs_depend_on_the_point() {
    let dir = tempfile::tempdir().unwrap();
    write_toy_table(dir.path(), 2, &TOY_COSTS);
    let text = |release: &str, dp: bool| {
        let dp = if dp {
            "dp = true\nq = 1.0\nz = 1.0\nclip = 1.0"
        } else {
            "dp = false"
        };
        format!(
            "name = \"costs\"\nseed = 5\nruns = 1\niterations = 2\ninitial_points = 1\n\
             [objective]\nkind = \"table\"\ntable = \"table.toml\"\n\
             [server]\nsubregions = 1\n{dp}\n\
             [clock]\n\
             [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"own pace\"\npace = \"asynchronous\"\n\
             release = \"{release}\"\n"
        )
    };
    let p = write(dir.path(), "a.toml", &text("arrivals", true));
    assert_refused(&p, "algorithm[0].release");
    assert_refused(&p, "would let its release times reveal the agents' queries");
    assert_valid(&write(dir.path(), "b.toml", &text("periodic", true)));
    assert_valid(&write(dir.path(), "c.toml", &text("arrivals", false)));
}
