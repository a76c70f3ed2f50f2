//! Command objectives, the evaluations journal, and ask/tell, driven through the binary with
//! the toy command in examples/toy_objective.rs (fbo's own Branin behind the protocol).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;
use common::{BRANIN_BOX, assert_exit, assert_says, fbo, stderr, tell_branin, toy, write};

const ALGORITHMS: &str = include_str!("fixtures/specs/command-algorithms.toml");

fn head(name: &str, runs: usize, iterations: usize) -> String {
    format!(
        "name = \"{name}\"\nseed = 4\nruns = {runs}\niterations = {iterations}\ninitial_points = 2\n\n[acquisition]\ncandidates = 200\nstarts = 3\n"
    )
}

/// A command spec running the toy, with `objective` lines added.
fn command_spec(dir: &Path, name: &str, objective: &str, runs: usize, iters: usize) -> PathBuf {
    let text = format!(
        "{}\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\n{objective}\n{BRANIN_BOX}\n{ALGORITHMS}",
        head(name, runs, iters),
        toy().display().to_string()
    );
    write(dir, &format!("{name}.toml"), &text)
}

/// Branin's box as an experiment run by hand (ask/tell): 1 run of 4 iterations.
fn external_spec(dir: &Path) -> PathBuf {
    write(
        dir,
        "ext.toml",
        &format!(
            "{}\n[objective]\nkind = \"external\"\ndirection = \"maximize\"\n{BRANIN_BOX}\n{ALGORITHMS}",
            head("ext", 1, 4)
        ),
    )
}

fn run(spec: &Path, out: &Path, count: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = fbo();
    c.arg("run")
        .arg(spec)
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--no-timing"])
        .env("TOY_COUNT", count);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The columns of a trace that say what was queried and seen (not timings).
fn queries(out: &Path) -> Vec<String> {
    common::trace_columns(out, 14)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// The evaluations of a journal: its lines less the header naming the objective.
fn entries(path: &Path) -> Vec<String> {
    let all = lines(path);
    assert!(
        all.first()
            .is_none_or(|h| h.starts_with("{\"fbo_journal\":1,")),
        "a journal begins with its header: {:?}",
        all.first()
    );
    all.into_iter().skip(1).collect()
}

#[test]
fn a_command_makes_the_builtin_objectives_queries_and_a_rerun_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = command_spec(dir.path(), "cmd", "concurrency = 3", 2, 5);
    let builtin = write(
        dir.path(),
        "fn.toml",
        &format!(
            "{}\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n{ALGORITHMS}",
            head("fn", 2, 5)
        ),
    );
    let count = dir.path().join("count");
    let o = run(&spec, &dir.path().join("cmd"), &count, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    common::fbo_ok("run", &builtin, &dir.path().join("fn"), &["--no-timing"]);
    // Same x, y and f in every row (the metric columns differ only in regret, which the
    // command's objective does not know).
    let cmd_q = queries(&dir.path().join("cmd"));
    let fn_q = queries(&dir.path().join("fn"));
    assert_eq!(cmd_q.len(), fn_q.len());
    for (a, b) in cmd_q.iter().zip(&fn_q) {
        let cut = |s: &str| s.split(',').take(12).collect::<Vec<_>>().join(",");
        assert_eq!(cut(a), cut(b));
    }
    // Each finished evaluation ran once and is in the journal: initial points shared by TS
    // and FTS, senders' histories shared likewise.
    let journal = entries(&dir.path().join("cmd/evaluations.jsonl"));
    let invoked = lines(&count);
    assert_eq!(invoked.len(), journal.len());
    assert_eq!(invoked.iter().collect::<HashSet<_>>().len(), invoked.len());
    // Per run: initial points 3 x 2 (TS and FTS share them), TS and FTS iterations 3 x 5
    // each, the senders' 3 x 4 observations, DP-FTS-DE 3 x (2 + 5) in its sub-regions.
    assert_eq!(journal.len(), 2 * (3 * 2 + 3 * 5 + 3 * 5 + 3 * 4 + 3 * 7));
    // `fbo validate` counts them beforehand, by who asks.
    let v = common::validate(&spec);
    let said = String::from_utf8_lossy(&v.stdout).into_owned();
    assert!(
        said.contains(
            "evaluations of the objective: 69 per run (init 6, senders 12, TS 15, FTS M=20 15, DP-FTS-DE P=2 q=0.5 z=1 S=11 follow=signal 21), 138 for 2 runs"
        ),
        "{said}"
    );
    // Rerunning replays the journal: the command is not started again.
    std::fs::remove_file(&count).unwrap();
    let o = run(&spec, &dir.path().join("cmd"), &count, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lines(&count).len(), 0);
    assert_eq!(queries(&dir.path().join("cmd")), cmd_q);
}

#[test]
fn a_killed_run_resumes_without_repeating_a_finished_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let spec = command_spec(dir.path(), "slow", "", 1, 8);
    let out = dir.path().join("slow");
    let count = dir.path().join("count");
    let mut child = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--no-timing", "--threads", "1"])
        .env("TOY_COUNT", &count)
        .env("TOY_SLEEP_MS", "20")
        .spawn()
        .unwrap();
    let start = Instant::now();
    while lines(&count).len() < 30 {
        assert!(start.elapsed() < Duration::from_secs(120), "too slow");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Let a command already started finish writing its line.
    std::thread::sleep(Duration::from_millis(200));
    let before = lines(&count);
    let finished: HashSet<String> = entries(&out.join("evaluations.jsonl"))
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {} {} {}",
                v["scope"].as_str().unwrap(),
                v["run"],
                v["agent"],
                v["iteration"]
            )
        })
        .collect();
    assert!(finished.len() >= 25, "{} finished", finished.len());
    let o = run(&spec, &out, &count, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after: Vec<String> = lines(&count)[before.len()..].to_vec();
    let repeated: Vec<&String> = after.iter().filter(|l| finished.contains(*l)).collect();
    assert!(repeated.is_empty(), "started again: {repeated:?}");
    // And the result is the undisturbed run's.
    let fresh = dir.path().join("fresh");
    let o = run(&spec, &fresh, &dir.path().join("count2"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(queries(&out), queries(&fresh));
}

#[test]
fn failures_name_the_agent_the_point_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "crash",
            "",
            &[
                "command evaluation failed for agent 1 at x1 = ",
                "ended with exit status 3",
                "error: out of memory in layer 3",
            ],
        ),
        (
            "garbage",
            "",
            &[
                "agent 1 at x1 = ",
                "its last line of stdout is not JSON: \"accuracy: great\"",
                "it wrote nothing on stderr",
            ],
        ),
        ("nan", "", &["its \"metric\" is not a number"]),
        (
            "hang",
            "timeout_s = 0.5",
            &["timed out after 0.5 s (objective.timeout_s) and was killed"],
        ),
    ];
    for (mode, objective, wanted) in cases {
        let spec = command_spec(dir.path(), mode, objective, 1, 2);
        let start = Instant::now();
        let o = run(
            &spec,
            &dir.path().join(mode),
            &count,
            &[("TOY_MODE", mode), ("TOY_FAIL_AGENT", "1")],
        );
        assert_eq!(o.status.code(), Some(1), "{mode}: {}", stderr(&o));
        let err = stderr(&o);
        for w in wanted {
            assert!(err.contains(w), "{mode}: {w:?} not in\n{err}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{mode} took too long"
        );
    }
}

#[test]
fn skipped_failures_are_traced_not_observed_and_retries_retry() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let spec = command_spec(dir.path(), "skip", "on_failure = \"skip\"", 1, 3);
    let out = dir.path().join("skip");
    let o = run(
        &spec,
        &out,
        &count,
        &[("TOY_MODE", "crash"), ("TOY_FAIL_AGENT", "1")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let rows: Vec<&str> = trace.lines().skip(1).collect();
    let failed: Vec<&&str> = rows.iter().filter(|r| r.contains(",failed,")).collect();
    // Agent 1's every evaluation in TS, FTS and DP-FTS-DE (2 initial + 3 each).
    assert_eq!(failed.len(), 3 * 5, "{trace}");
    assert!(failed.iter().all(|r| r.split(',').nth(2) == Some("1")));
    let journal = std::fs::read_to_string(out.join("evaluations.jsonl")).unwrap();
    assert!(journal.contains("\"status\":\"failed\""));
    // retries = 1: a command failing on its first try per request succeeds on the second.
    let spec = command_spec(dir.path(), "flaky", "retries = 1", 1, 2);
    let count = dir.path().join("count-flaky");
    let o = run(
        &spec,
        &dir.path().join("flaky"),
        &count,
        &[("TOY_MODE", "flaky")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = entries(&dir.path().join("flaky/evaluations.jsonl")).len();
    assert_eq!(lines(&count).len(), 2 * j);
}

#[test]
fn ask_and_tell_make_a_command_runs_queries() {
    let dir = tempfile::tempdir().unwrap();
    let spec = command_spec(dir.path(), "cmd", "", 1, 4);
    let count = dir.path().join("count");
    let o = run(&spec, &dir.path().join("cmd"), &count, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let external = external_spec(dir.path());
    let state = dir.path().join("state");
    // Before any result, a run says what is missing.
    let o = common::fbo_out("run", &external, &state, &[]);
    assert_exit(&o, 1, "no result has been reported yet");
    let mut rounds = 0;
    while tell_branin(&external, &state, dir.path()).expect("the state folder is free") > 0 {
        rounds += 1;
        assert!(rounds < 50, "ask/tell does not finish");
    }
    // Rounds go by steps, not by agents. Round 1: every agent's initial points (TS's, which
    // FTS shares, and DP-FTS-DE's own) and the senders' first observations; rounds 2-4: the
    // senders' next three, TS and DP-FTS-DE iterations 1-3; round 5: their iteration 4 and
    // FTS's first; rounds 6-8: FTS iterations 2-4.
    assert_eq!(rounds, 8);
    common::fbo_ok("run", &external, &state, &["--no-timing"]);
    assert_eq!(queries(&state), queries(&dir.path().join("cmd")));
    // Telling an agent with nothing outstanding is refused with the reason.
    let o = fbo()
        .arg("tell")
        .arg(&external)
        .arg("--state")
        .arg(&state)
        .args(["--agent", "1", "--value", "0.5"])
        .output()
        .unwrap();
    assert_exit(&o, 2, "agent 1 has no outstanding query");
}

/// A `fbo tell --results` cut short (killed after some rows were journaled) is finished by
/// the same command: rows already recorded with the same value are acknowledged, a row whose
/// value differs from the journal's is refused naming the line and the journal's line.
#[test]
fn a_tell_cut_short_is_finished_by_the_same_command() {
    let dir = tempfile::tempdir().unwrap();
    let external = external_spec(dir.path());
    let state = dir.path().join("state");
    let o = fbo()
        .arg("ask")
        .arg(&external)
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut rows = text.lines();
    let header = rows.next().unwrap();
    let told: Vec<String> = rows
        .map(|row| {
            let x: Vec<f64> = row.split(',').skip(4).map(|v| v.parse().unwrap()).collect();
            format!(
                "{row},{}",
                fbo::objective::function::Function::Branin.value(&x)
            )
        })
        .collect();
    assert!(told.len() >= 4, "{text}");
    let tell = |name: &str, rows: &[String]| {
        let file = write(
            dir.path(),
            name,
            &format!("{header},metric\n{}\n", rows.join("\n")),
        );
        fbo()
            .arg("tell")
            .arg(&external)
            .arg("--state")
            .arg(&state)
            .arg("--results")
            .arg(file)
            .output()
            .unwrap()
    };
    // What the journal holds after a kill part-way: the first rows.
    let o = tell("part.csv", &told[..2]);
    assert!(o.status.success(), "{}", stderr(&o));
    let journal = std::fs::read_to_string(state.join("evaluations.jsonl")).unwrap();
    // The whole file again: the two told rows are acknowledged, the rest recorded.
    let o = tell("all.csv", &told);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_says(&o, "2 results already recorded with the same value");
    let after = std::fs::read_to_string(state.join("evaluations.jsonl")).unwrap();
    assert_eq!(
        after.lines().count(),
        journal.lines().count() + told.len() - 2,
        "each result journaled once"
    );
    // Told again with another value: a conflict naming the file's line and the journal's.
    let mut changed = told.clone();
    changed[1] = format!("{},0.125", told[1].rsplit_once(',').unwrap().0);
    let o = tell("changed.csv", &changed);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("changed.csv")
            && err.contains("line 3 reports 0.125")
            && err.contains("evaluations.jsonl (line "),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(state.join("evaluations.jsonl")).unwrap(),
        after,
        "a refused tell writes nothing"
    );
}

#[test]
fn ask_reports_privacy_spent_and_tell_takes_one_value() {
    let dir = tempfile::tempdir().unwrap();
    let external = write(
        dir.path(),
        "ext.toml",
        &format!(
            "{}\n[objective]\nkind = \"external\"\ndirection = \"minimize\"\n{BRANIN_BOX}\n[federation]\nagents = 2\n\n[[algorithm]]\nkind = \"dp-fts-de\"\nfeatures = 20\nserver = {{ subregions = 2, dp = true, q = 0.5, z = 1.0 }}\n",
            head("ext", 1, 3)
        ),
    );
    let state = dir.path().join("state");
    let ask = || {
        fbo()
            .arg("ask")
            .arg(&external)
            .arg("--state")
            .arg(&state)
            .args(["--format", "json"])
            .output()
            .unwrap()
    };
    let o = ask();
    assert!(o.status.success(), "{}", stderr(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        4,
        "2 agents x 2 initial points"
    );
    assert_says(&o, "after 0 server rounds released");
    // A second ask hands out nothing new while those are outstanding.
    let o = ask();
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again.as_array().unwrap().len(), 0);
    assert_says(&o, "4 still waiting");
    // Agent 0 has two outstanding queries: --value alone is ambiguous.
    let tell = |args: &[&str]| {
        fbo()
            .arg("tell")
            .arg(&external)
            .arg("--state")
            .arg(&state)
            .args(args)
            .output()
            .unwrap()
    };
    let o = tell(&["--agent", "0", "--value", "1.5"]);
    assert_exit(&o, 2, "2 outstanding queries");
    for item in list.as_array().unwrap() {
        let (agent, iteration) = (
            item["agent"].to_string(),
            item["iteration"].as_i64().unwrap(),
        );
        let csv = format!(
            "scope,run,agent,iteration,metric\n{},0,{agent},{iteration},{}\n",
            item["scope"].as_str().unwrap(),
            -1.0 - iteration as f64
        );
        let file = write(dir.path(), "r.csv", &csv);
        let o = tell(&["--results", file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = ask();
    assert!(o.status.success(), "{}", stderr(&o));
    let next: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        next.as_array().unwrap().len(),
        2,
        "both agents' iteration 1"
    );
    assert_says(&o, "after 1 server rounds");
    for agent in ["0", "1"] {
        let o = tell(&["--agent", agent, "--value", "-2.5"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = ask();
    assert_says(&o, "after 2 server rounds");
}

#[test]
fn command_specs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!(
        "{}\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\n{BRANIN_BOX}\n[federation]\nagents = 2\n\n[[algorithm]]\nkind = \"ts\"\n",
        head("c", 1, 2),
        toy().display().to_string()
    );
    let toy_argv = format!("command = [{:?}]\n", toy().display().to_string());
    let cases = [
        (
            "direction = \"maximize\"\n",
            "",
            "key `objective.direction`: missing",
        ),
        (toy_argv.as_str(), "", "key `objective.command`: missing"),
        (
            toy_argv.as_str(),
            "command = []\n",
            "key `objective.command`: must name a program",
        ),
        ("name = \"x2\"", "name = \"X1\"", "\"X1\" is used twice"),
        (
            "name = \"x2\"",
            "name = \"x-2\"",
            "key `objective.hyperparameters[1].name`",
        ),
        ("agents = 2\n", "", "key `federation.agents`: missing"),
        (
            "direction = \"maximize\"\n",
            "direction = \"maximize\"\nnoise_var = 0.1\n",
            "key `objective.noise_var`",
        ),
        (
            "direction = \"maximize\"\n",
            "direction = \"maximize\"\ntimeout_s = 0\n",
            "key `objective.timeout_s`",
        ),
        (
            "direction = \"maximize\"\n",
            "direction = \"maximize\"\non_failure = \"retry\"\n",
            "key `objective.on_failure`",
        ),
        (
            "kind = \"command\"",
            "kind = \"external\"",
            "kind = \"external\" has no command",
        ),
    ];
    for (from, to, wanted) in cases {
        let text = base.replacen(from, to, 1);
        let spec = write(dir.path(), "c.toml", &text);
        let o = common::validate(&spec);
        assert_eq!(o.status.code(), Some(2), "{wanted}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(wanted),
            "{wanted:?} not in {}",
            stderr(&o)
        );
    }
    // The spec copied beside the results runs the command from where the spec said.
    let spec = write(dir.path(), "c.toml", &base);
    let out = dir.path().join("elsewhere/out");
    common::fbo_ok("run", &spec, &out, &[]);
    let copy = std::fs::read_to_string(out.join("spec.toml")).unwrap();
    assert!(copy.contains("workdir = \"../..\""), "{copy}");
}

#[test]
fn the_example_tunes_its_training_program_with_three_agents() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/federated-tuning/spec.toml");
    let out = dir.path().join("example");
    common::fbo_ok("run", &spec, &out, &["--runs", "1", "--no-timing"]);
    let trace = common::Csv::read(&out.join("trace.csv"));
    // 2 algorithms x 3 agents x (3 initial points + 15 iterations), every one trained.
    assert_eq!(trace.rows.len(), 2 * 3 * 18);
    for r in trace.records() {
        let m = r.num("metric");
        assert!(m > 0.0 && m < 5.0, "a validation log-loss: {m}");
        assert!(r.num("best_metric") <= m);
    }
    // Tuning helps every agent: its best loss after 15 iterations is below its best of the
    // 3 initial points, in at least 4 of the 6 (algorithm, agent) traces.
    let unit = ["algorithm", "agent"];
    let improved = trace
        .records()
        .filter(|r| r.get("iteration") == "15")
        .filter(|end| {
            let start = trace
                .records()
                .find(|r| r.get("iteration") == "0" && r.key(unit) == end.key(unit))
                .unwrap();
            end.num("best_metric") < start.num("best_metric")
        })
        .count();
    assert!(improved >= 4, "{improved} of 6 improved");
    // The initial points are the same for both (FTS has one sub-region, the whole space):
    // measured once. The journal holds 3 x 3 of them and 2 x 3 x 15 iterations.
    let journal = std::fs::read_to_string(out.join("evaluations.jsonl")).unwrap();
    let init = journal
        .lines()
        .filter(|l| l.contains("\"scope\":\"init"))
        .count();
    assert_eq!(init, 9, "{journal}");
    assert_eq!(journal.lines().count(), 1 + 9 + 2 * 3 * 15);
}

#[test]
fn a_relative_command_runs_from_the_specs_folder_whatever_the_current_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("project");
    std::fs::create_dir(&sub).unwrap();
    let script = write(
        &sub,
        "train.sh",
        &format!("#!/bin/sh\nexec {:?}\n", toy().display().to_string()),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = format!(
        "{}\n[objective]\nkind = \"command\"\ncommand = [\"./train.sh\"]\ndirection = \"maximize\"\n{BRANIN_BOX}\n[federation]\nagents = 2\n\n[[algorithm]]\nkind = \"ts\"\n",
        head("rel", 1, 2)
    );
    write(&sub, "rel.toml", &text);
    // Spec given relative to a current folder that is not the spec's.
    let o = fbo()
        .current_dir(dir.path())
        .args(["run", "project/rel.toml", "--out", "out", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        entries(&dir.path().join("out/evaluations.jsonl")).len(),
        2 * (2 + 2)
    );
}

#[test]
fn evaluations_run_in_parallel_up_to_the_concurrency_limit() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    // Six agents in DP-FTS-DE rounds; at most 3 commands at once, each taking 150 ms.
    let text = std::fs::read_to_string(command_spec(dir.path(), "par", "concurrency = 3", 1, 2))
        .unwrap()
        .replace("agents = 3", "agents = 6");
    let only_dp = text[..text.find("[[algorithm]]").unwrap()].to_string()
        + "[[algorithm]]\nkind = \"dp-fts-de\"\nfeatures = 20\nserver = { subregions = 2 }\n";
    let spec = write(dir.path(), "par.toml", &only_dp);
    let events = dir.path().join("events");
    let events_s = events.to_str().unwrap().to_string();
    let o = run(
        &spec,
        &dir.path().join("par"),
        &count,
        &[("TOY_SLEEP_MS", "150"), ("TOY_EVENTS", &events_s)],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let log = std::fs::read_to_string(&events).unwrap();
    let (mut now, mut most) = (0i32, 0i32);
    for c in log.chars() {
        now += if c == '+' { 1 } else { -1 };
        most = most.max(now);
    }
    assert_eq!(log.len(), 2 * 6 * (2 + 2), "{log}");
    assert_eq!(
        most, 3,
        "at most 3 at once, and a round of 6 fills them: {log}"
    );
}

/// The survey's frameworks (issue 27) through a command, and by ask/tell: the same queries
/// as on the built-in function, and ask/tell's rounds advance every agent together.
#[test]
fn the_frameworks_run_commands_and_ask_tell_with_the_builtins_queries() {
    let frameworks = "[federation]\nagents = 3\n\n[[algorithm]]\nkind = \"consensus\"\n[[algorithm]]\nkind = \"cgp\"\n[[algorithm]]\nkind = \"design-density\"\n[[algorithm]]\nkind = \"fedgp\"\nrounds = 2\n[[algorithm]]\nkind = \"fmtbo\"\n";
    let dir = tempfile::tempdir().unwrap();
    let cmd = write(
        dir.path(),
        "cmd.toml",
        &format!(
            "{}\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\n{BRANIN_BOX}\n{frameworks}",
            head("cmd", 1, 3),
            toy().display().to_string()
        ),
    );
    let builtin = write(
        dir.path(),
        "fn.toml",
        &format!(
            "{}\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n{frameworks}",
            head("fn", 1, 3)
        ),
    );
    let count = dir.path().join("count");
    let o = run(&cmd, &dir.path().join("cmd"), &count, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    common::fbo_ok("run", &builtin, &dir.path().join("fn"), &["--no-timing"]);
    let cmd_q = queries(&dir.path().join("cmd"));
    let fn_q = queries(&dir.path().join("fn"));
    // 5 algorithms x 3 agents x (2 initial + 3 iterations), and the header.
    assert_eq!(cmd_q.len(), 5 * 3 * 5 + 1);
    let cut = |s: &str| s.split(',').take(12).collect::<Vec<_>>().join(",");
    for (a, b) in cmd_q.iter().zip(&fn_q) {
        assert_eq!(cut(a), cut(b));
    }
    let external = write(
        dir.path(),
        "ext.toml",
        &format!(
            "{}\n[objective]\nkind = \"external\"\ndirection = \"maximize\"\n{BRANIN_BOX}\n{frameworks}",
            head("ext", 1, 3)
        ),
    );
    let state = dir.path().join("state");
    let mut rounds = 0;
    while tell_branin(&external, &state, dir.path()).expect("the state folder is free") > 0 {
        rounds += 1;
        assert!(rounds < 50, "ask/tell does not finish");
    }
    // The initial points, then one round per iteration.
    assert_eq!(rounds, 4);
    common::fbo_ok("run", &external, &state, &["--no-timing"]);
    assert_eq!(queries(&state), cmd_q);
}

#[test]
fn shards_of_a_command_split_whole_runs_each_with_its_own_journal() {
    let dir = tempfile::tempdir().unwrap();
    let spec = command_spec(dir.path(), "sh", "concurrency = 2", 3, 4);
    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    let o = run(&spec, &whole, &dir.path().join("count-whole"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Four shards at once over 3 runs x 3 algorithms: blocks move to whole runs, so the
    // evaluations a run's algorithms share (initial points, senders) are made by one shard.
    let count = dir.path().join("count");
    let shards: Vec<_> = (0..4)
        .map(|i| {
            fbo()
                .arg("run")
                .arg(&spec)
                .arg("--out")
                .arg(&sharded)
                .args(["--quiet", "--no-timing", "--shard", &format!("{i}/4")])
                .env("TOY_COUNT", &count)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut s in shards {
        assert!(s.wait().unwrap().success());
    }
    let started = lines(&count);
    assert_eq!(started.len(), lines(&dir.path().join("count-whole")).len());
    assert_eq!(started.iter().collect::<HashSet<_>>().len(), started.len());
    let journals = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&sharded)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("evaluations."))
            .collect();
        v.sort();
        v
    };
    let before = journals();
    assert!(before.len() >= 3, "{before:?}");
    let kept: usize = before.iter().map(|j| entries(&sharded.join(j)).len()).sum();
    assert_eq!(kept, started.len());
    // The merge gives the unsharded bytes and keeps every journal; a rerun starts nothing.
    let o = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&sharded)
        .args(["--quiet", "--no-timing", "--merge"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(sharded.join("trace.csv")).unwrap(),
        std::fs::read_to_string(whole.join("trace.csv")).unwrap()
    );
    assert!(
        journals()
            .iter()
            .all(|j| before.contains(j) || j == "evaluations.jsonl")
    );
    assert!(before.iter().all(|j| journals().contains(j)));
    let o = run(&spec, &sharded, &count, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lines(&count).len(), started.len());
}
