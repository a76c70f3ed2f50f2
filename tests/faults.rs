//! The fault catalogue of issue 23, as tests: nothing completed is lost (damaged parts,
//! journals), no number is other than it says (a journal replayed at other points, one
//! evaluation told twice), no process outlives its limit, and bad input is refused with
//! exit 2 before anything is written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{
    Csv, SMALL, assert_exit, assert_says, fbo, fbo_ok, fbo_out, stderr, tell_branin,
    tell_branin_cut, toy, write,
};

/// A shell script `name` in `dir`, executable.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = write(dir, name, &format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A one-agent TS spec whose objective is the program `argv`, with `extra` objective lines
/// and the hyperparameter `a` on [low, high].
fn command_spec(dir: &Path, name: &str, argv: &str, extra: &str, bounds: (f64, f64)) -> PathBuf {
    let text = format!(
        "name = \"{name}\"\nseed = 1\nruns = 1\niterations = 2\ninitial_points = 2\n\n[acquisition]\ncandidates = 50\nstarts = 1\n\n[objective]\nkind = \"command\"\ncommand = [{argv:?}]\ndirection = \"maximize\"\n{extra}\n\n[[objective.hyperparameters]]\nname = \"a\"\nlow = {:?}\nhigh = {:?}\n\n[federation]\nagents = 1\n\n[[algorithm]]\nkind = \"ts\"\n",
        bounds.0, bounds.1
    );
    write(dir, &format!("{name}.toml"), &text)
}

/// A one-agent TS spec `name` whose objective is the shell script `body` (written as
/// `name.sh`), with `extra` objective lines and `a` on [0, 1].
fn script_spec(dir: &Path, name: &str, body: &str, extra: &str) -> PathBuf {
    let program = script(dir, &format!("{name}.sh"), body);
    command_spec(dir, name, &program.display().to_string(), extra, (0.0, 1.0))
}

/// A program reporting metric = a (so a trace's metric must equal its raw `a`), counting its
/// calls in `count`.
fn echo_program(dir: &Path, count: &Path) -> PathBuf {
    script(
        dir,
        "echo-a.sh",
        &format!(
            "echo x >> {}\necho \"{{\\\"metric\\\": $FBO_PARAM_A}}\"",
            count.display()
        ),
    )
}

fn calls(count: &Path) -> usize {
    std::fs::read_to_string(count)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// (raw a, metric) of every row of a trace.
fn raw_and_metric(out: &Path) -> Vec<(f64, f64)> {
    Csv::read(&out.join("trace.csv"))
        .records()
        .map(|r| (r.num("a"), r.num("metric")))
        .collect()
}

/// Whether every process matching `pattern` is gone within 5 s (a SIGKILL is delivered
/// asynchronously: a killed process may still be listed for a moment).
fn all_gone(pattern: &str) -> bool {
    let t0 = Instant::now();
    while processes_matching(pattern) > 0 {
        if t0.elapsed() > Duration::from_secs(5) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn processes_matching(pattern: &str) -> usize {
    let o = Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).lines().count()
}

#[test]
fn a_damaged_part_is_named_set_aside_and_its_run_redone() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let whole = dir.path().join("whole");
    fbo_ok("run", &spec, &whole, &["--no-timing"]);
    for damage in ["empty", "truncated", "foreign rows"] {
        let out = dir.path().join(damage.replace(' ', "-"));
        common::run_every_shard("run", &spec, &out, 2);
        let part = out.join("parts/a001-r00002.csv");
        let text = std::fs::read_to_string(&part).unwrap();
        match damage {
            "empty" => std::fs::write(&part, "").unwrap(),
            "truncated" => std::fs::write(&part, &text[..text.len() * 2 / 3]).unwrap(),
            _ => std::fs::write(&part, text.replace("M=20,2,", "M=20,3,")).unwrap(),
        }
        let o = fbo_out("run", &spec, &out, &["--no-timing", "--merge"]);
        assert!(!o.status.success(), "{damage}: a merge with a damaged part");
        let e = stderr(&o);
        assert!(
            e.contains("a001-r00002.csv") && e.contains("FTS M=20 run 2"),
            "{e}"
        );
        assert!(!e.contains("CSV error"), "{e}");
        // Nothing merged, nothing removed but the damaged part, moved aside.
        assert!(!out.join("trace.csv").exists());
        assert!(out.join("parts/a000-r00002.csv").exists());
        assert!(out.join("damaged-parts/a001-r00002.csv").exists());
        let st = fbo_ok("run", &spec, &out, &["--status", "--no-timing"]);
        let st = String::from_utf8_lossy(&st.stdout).to_string();
        assert!(st.contains("7 done, 0 running, 1 missing"), "{st}");
        // The next shard redoes it, and the merge equals an undisturbed run.
        fbo_ok("run", &spec, &out, &["--no-timing", "--shard", "1/2"]);
        fbo_ok("run", &spec, &out, &["--no-timing", "--merge"]);
        for f in ["trace.csv", "summary.csv"] {
            assert_eq!(
                std::fs::read(out.join(f)).unwrap(),
                std::fs::read(whole.join(f)).unwrap(),
                "{damage}: {f}"
            );
        }
    }
    // A plain rerun checks what it resumes too.
    let out = dir.path().join("resume");
    fbo_ok("run", &spec, &out, &["--no-timing", "--shard", "0/2"]);
    std::fs::write(out.join("parts/a000-r00000.csv"), "").unwrap();
    let o = fbo_ok("run", &spec, &out, &["--no-timing"]);
    assert_says(&o, "damaged part");
    assert_eq!(
        std::fs::read(out.join("trace.csv")).unwrap(),
        std::fs::read(whole.join("trace.csv")).unwrap()
    );
}

#[test]
fn a_journal_is_replayed_only_at_the_raw_values_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let prog = echo_program(dir.path(), &count);
    let argv = prog.display().to_string();
    let out = dir.path().join("out");
    let spec = command_spec(dir.path(), "c", &argv, "", (0.0, 1.0));
    fbo_ok("run", &spec, &out, &[]);
    let first = calls(&count);
    assert_eq!(first, 4);
    for (a, m) in raw_and_metric(&out) {
        assert_eq!(a, m);
    }
    // Same spec file, other bounds: the same unit points are other raw values.
    command_spec(dir.path(), "c", &argv, "", (10.0, 20.0));
    fbo_ok("run", &spec, &out, &[]);
    assert_eq!(calls(&count), 2 * first, "every evaluation is new");
    for (a, m) in raw_and_metric(&out) {
        assert!((10.0..=20.0).contains(&a));
        assert_eq!(a, m, "a traced metric measured at another point");
    }
    // Another objective's journal, copied in, is refused saying what changed...
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let journal = std::fs::read_to_string(out.join("evaluations.jsonl")).unwrap();
    std::fs::write(
        other.join("evaluations.jsonl"),
        journal.replace(&argv, "/bin/elsewhere"),
    )
    .unwrap();
    let o = fbo_out("run", &spec, &other, &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // ... and --overwrite set it aside (kept, renamed) instead of replaying it.
    assert!(other.join("evaluations.jsonl.set-aside-1").exists());
    assert_eq!(calls(&count), 3 * first);
    // In a folder of ours, a journal edited to another objective is refused (exit 2).
    let edited = std::fs::read_to_string(out.join("evaluations.jsonl"))
        .unwrap()
        .replace(&argv, "/bin/elsewhere");
    std::fs::write(out.join("evaluations.jsonl"), edited).unwrap();
    let o = fbo_out("run", &spec, &out, &[]);
    assert_exit(&o, 2, "the command was [\"/bin/elsewhere\"]");
}

#[test]
fn journal_lines_are_whole_entries_and_one_evaluation_has_one_value() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let prog = echo_program(dir.path(), &count);
    let spec = command_spec(dir.path(), "c", &prog.display().to_string(), "", (0.0, 1.0));
    let out = dir.path().join("out");
    fbo_ok("run", &spec, &out, &[]);
    let journal = out.join("evaluations.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    // The last line without its newline is still a whole entry: nothing is run again.
    std::fs::write(&journal, text.trim_end()).unwrap();
    std::fs::remove_file(out.join("trace.csv")).unwrap();
    fbo_ok("run", &spec, &out, &[]);
    assert_eq!(calls(&count), 4);
    // One evaluation recorded twice with two values is refused, naming file and lines.
    let text = std::fs::read_to_string(&journal).unwrap();
    let last = text.lines().last().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    let changed = last.replace(&format!("\"metric\":{}", v["metric"]), "\"metric\":123.5");
    assert_ne!(changed, last);
    std::fs::write(&journal, format!("{text}{changed}\n")).unwrap();
    let o = fbo_out("run", &spec, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("evaluations.jsonl") && e.contains("line 6") && e.contains("123.5"),
        "{e}"
    );
}

/// An external (ask/tell) spec: two agents, two initial points each.
fn external_spec(dir: &Path) -> PathBuf {
    write(
        dir,
        "ext.toml",
        "name = \"ext\"\nseed = 2\nruns = 1\niterations = 1\ninitial_points = 2\n\n[acquisition]\ncandidates = 50\nstarts = 1\n\n[objective]\nkind = \"external\"\ndirection = \"maximize\"\n\n[[objective.hyperparameters]]\nname = \"a\"\nlow = 0.0\nhigh = 3.0\n\n[federation]\nagents = 2\n\n[[algorithm]]\nkind = \"ts\"\n",
    )
}

fn tell(spec: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    fbo()
        .arg("tell")
        .arg(spec)
        .arg("--state")
        .arg(state)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn tell_refuses_what_it_would_coerce_or_keep_silently() {
    let dir = tempfile::tempdir().unwrap();
    let spec = external_spec(dir.path());
    let state = dir.path().join("state");
    let o = fbo()
        .arg("ask")
        .arg(&spec)
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let asked = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<&str> = asked.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{asked}");
    let journal = state.join("evaluations.jsonl");
    let before = std::fs::read(&journal).unwrap();
    let refused = |args: &[&str], says: &str| {
        let o = tell(&spec, &state, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read(&journal).unwrap(), before, "{args:?} wrote");
    };
    refused(&["--agent", "0", "--value", "1", "--cost", "nan"], "--cost");
    refused(&["--agent", "0", "--value", "1", "--cost", "-1"], "--cost");
    // Agent 0 waits on two initial points of one run and scope: --iteration tells them apart.
    refused(&["--agent", "0", "--value", "1"], "--iteration");
    let results = |name: &str, body: &str| {
        let p = write(
            dir.path(),
            name,
            &format!("scope,run,agent,iteration,a,metric\n{body}"),
        );
        p.display().to_string()
    };
    let field = |row: &str, i: usize| row.split(',').nth(i).unwrap().to_string();
    let r0 = rows[0];
    let bad_run = results(
        "neg.csv",
        &format!(
            "init,-1,{},{},{},0.5\n",
            field(r0, 2),
            field(r0, 3),
            field(r0, 4)
        ),
    );
    refused(&["--results", &bad_run], "whole number");
    let frac_run = results(
        "frac.csv",
        &format!(
            "init,0.7,{},{},{},0.5\n",
            field(r0, 2),
            field(r0, 3),
            field(r0, 4)
        ),
    );
    refused(&["--results", &frac_run], "whole number");
    let twice = results("twice.csv", &format!("{r0},0.5\n{r0},0.25\n"));
    refused(&["--results", &twice], "lines 2 and 3");
    // A spreadsheet's copy: x rounded to 15 significant digits still names its query.
    let a: f64 = field(r0, 4).parse().unwrap();
    let rounded = format!("{:.14e}", a).parse::<f64>().unwrap();
    // Saved by a spreadsheet: a byte-order mark, CRLF line ends.
    let sheet = write(
        dir.path(),
        "sheet.csv",
        &format!(
            "\u{feff}scope,run,agent,iteration,a,metric\r\n{},{},{},{},{rounded},0.5\r\n",
            field(r0, 0),
            field(r0, 1),
            field(r0, 2),
            field(r0, 3)
        ),
    );
    let sheet = sheet.to_str().unwrap();
    let o = tell(&spec, &state, &["--results", sheet]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The other initial point of agent 0, by its iteration.
    let r1 = rows
        .iter()
        .find(|r| field(r, 2) == "0" && **r != r0)
        .unwrap();
    let o = tell(
        &spec,
        &state,
        &[
            "--agent",
            "0",
            "--iteration",
            &field(r1, 3),
            "--value",
            "0.75",
            "--cost",
            "2",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn status_does_not_call_another_experiments_folder_done() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let other = write(
        dir.path(),
        "other.toml",
        &SMALL.replace("seed = 3", "seed = 4"),
    );
    let out = dir.path().join("out");
    fbo_ok("run", &other, &out, &["--no-timing"]);
    let o = fbo_out("run", &spec, &out, &["--status"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_says(&o, "another experiment");
    // The same spec file edited after its run: its merged results are not this spec's.
    fbo_ok("run", &spec, &out, &["--no-timing", "--overwrite"]);
    let st = fbo_ok("run", &spec, &out, &["--status"]);
    assert!(String::from_utf8_lossy(&st.stdout).contains("(merged)"));
    write(
        dir.path(),
        "small.toml",
        &SMALL.replace("iterations = 12", "iterations = 9"),
    );
    let st = fbo_ok("run", &spec, &out, &["--status"]);
    let st = String::from_utf8_lossy(&st.stdout).to_string();
    assert!(st.contains("0 done") && !st.contains("merged"), "{st}");
    // A user's own trace.csv is not results of this spec either.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("trace.csv"), "my own\n").unwrap();
    let o = fbo_out("run", &spec, &mine, &["--status"]);
    assert_exit(&o, 2, "no .fbo-manifest");
}

#[test]
fn a_command_ends_with_its_process_group_and_its_output_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // Exits at once but leaves a background child holding stdout open.
    let tag = format!("fbo-fault-{}", std::process::id());
    let spec = script_spec(
        dir.path(),
        "bg",
        &format!("sh -c 'sleep 30; echo {tag}' &\necho '{{\"metric\": 0.5}}'"),
        "timeout_s = 20",
    );
    let t0 = Instant::now();
    fbo_ok("run", &spec, &dir.path().join("bg"), &[]);
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "waited for the background child"
    );
    assert!(all_gone(&tag), "a background child outlived fbo");
    // Prints without end: killed at its timeout, with a bounded message.
    let spec = script_spec(
        dir.path(),
        "forever",
        "yes 0123456789abcdef",
        "timeout_s = 1",
    );
    let o = fbo_out("run", &spec, &dir.path().join("forever"), &[]);
    assert_exit(&o, 1, "timed out after 1 s");
    // A 5 MB stderr line is quoted by its end, a few hundred characters.
    let spec = script_spec(
        dir.path(),
        "loud",
        "head -c 5000000 /dev/zero | tr '\\0' e >&2\nexit 3",
        "",
    );
    let o = fbo_out("run", &spec, &dir.path().join("loud"), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stderr.len() < 8000, "{} bytes of error", o.stderr.len());
}

#[test]
fn an_interrupt_stops_the_running_evaluation_and_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("fbo-interrupt-{}", std::process::id());
    let spec = script_spec(
        dir.path(),
        "slow",
        &format!(
            "if [ \"$FBO_ITERATION\" = -1 ]; then echo '{{\"metric\": 1}}'; exit 0; fi\nsh -c 'sleep 60; echo {tag}' &\nsh -c 'sleep 60; echo {tag}'\necho '{{\"metric\": 1}}'"
        ),
        "timeout_s = 100\nconcurrency = 2",
    );
    // fbo started, once the first initial point's evaluation is journaled (the header and
    // one entry) and the second one is running.
    let out = dir.path().join("slow");
    let start = || {
        let child = fbo()
            .arg("run")
            .arg(&spec)
            .arg("--out")
            .arg(&out)
            .arg("--quiet")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while processes_matching(&tag) < 2
            || std::fs::read_to_string(out.join("evaluations.jsonl"))
                .map_or(0, |t| t.lines().count())
                < 2
        {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the command did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    };
    let child = start();
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    // The finished evaluation is safe, and the interrupt says so.
    assert_says(&o, "1 finished evaluations are kept");
    // Counted in evaluations (a command objective's unit of progress), not runs.
    assert!(
        stderr(&o).contains("interrupted: 1 of ") && stderr(&o).contains(" evaluations saved in "),
        "{}",
        stderr(&o)
    );
    assert!(all_gone(&tag), "an evaluation outlived fbo");
    // Killed with SIGKILL, fbo runs no handler: the watchdog in the command's group stops it.
    let mut child = start();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        all_gone(&tag),
        "an evaluation outlived fbo killed with SIGKILL"
    );
}

/// Random sequences of run, kill -9, tell (whole or cut short and told again), shards (killed
/// or not), merge and rerun on one command objective's folder, with a privacy budget that
/// stops DP-FTS-DE's server before the last round, always end with the outputs of an
/// undisturbed run: nothing finished is lost, nothing is replayed at the wrong point, and no
/// value is told twice.
#[test]
fn any_sequence_of_kills_tells_merges_and_reruns_ends_with_the_undisturbed_trace() {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "prop.toml",
        &format!(
            "name = \"prop\"\nseed = 5\nruns = 2\niterations = 4\ninitial_points = 2\n\n[acquisition]\ncandidates = 100\nstarts = 2\n\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\n\n[[objective.hyperparameters]]\nname = \"x1\"\nlow = -5.0\nhigh = 10.0\n\n[[objective.hyperparameters]]\nname = \"x2\"\nlow = 0.0\nhigh = 15.0\n\n[federation]\nagents = 3\nobservations = 3\n\n[[algorithm]]\nkind = \"ts\"\n\n[[algorithm]]\nkind = \"fts\"\nfeatures = 20\n\n[[algorithm]]\nkind = \"dp-fts-de\"\nfeatures = 20\nserver = {{ subregions = 2, dp = true, q = 0.5, z = 1.0, max_epsilon = 0.2 }}\n",
            toy().display().to_string()
        ),
    );
    let run = |out: &Path, extra: &[&str]| {
        let mut c = fbo();
        c.arg("run")
            .arg(&spec)
            .arg("--out")
            .arg(out)
            .args(["--quiet", "--no-timing"])
            .args(extra)
            .env("TOY_SLEEP_MS", "3");
        c
    };
    let whole = dir.path().join("whole");
    let o = run(&whole, &[]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The budget stops the server after round 3 of 4: parts of such runs are whole too.
    assert_says(&o, "allows 3 of 4 rounds");
    const OUTPUTS: [&str; 4] = ["trace.csv", "summary.csv", "server.csv", "privacy.csv"];
    let want: Vec<Vec<u8>> = OUTPUTS
        .iter()
        .map(|f| std::fs::read(whole.join(f)).unwrap())
        .collect();
    for seed in 0..8u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let out = dir.path().join(format!("seq{seed}"));
        let mut log = Vec::new();
        for _ in 0..7 {
            match rng.random_range(0..6) {
                0 => {
                    // run, killed with SIGKILL after a random moment
                    let ms = rng.random_range(0..400);
                    log.push(format!("kill after {ms} ms"));
                    let mut child = run(&out, &[]).spawn().unwrap();
                    std::thread::sleep(Duration::from_millis(ms));
                    let _ = child.kill();
                    child.wait().unwrap();
                }
                1 => {
                    let n = tell_branin(&spec, &out, dir.path()).unwrap_or(0);
                    log.push(format!("tell {n}"));
                }
                4 => {
                    let k = rng.random_range(0..4);
                    let n = tell_branin_cut(&spec, &out, dir.path(), Some(k)).unwrap_or(0);
                    log.push(format!("tell {n}, cut after {k} and told again"));
                }
                5 => {
                    // One shard of two, killed after a random moment or left to finish.
                    let (i, ms) = (rng.random_range(0..2), rng.random_range(0..600));
                    log.push(format!("shard {i}/2, kill after {ms} ms"));
                    let mut child = run(&out, &["--shard", &format!("{i}/2")]).spawn().unwrap();
                    std::thread::sleep(Duration::from_millis(ms));
                    let _ = child.kill();
                    child.wait().unwrap();
                }
                2 => {
                    // A merge before every run is there is refused and changes nothing.
                    let o = run(&out, &["--merge"]).output().unwrap();
                    log.push(format!("merge: {:?}", o.status.code()));
                    assert!(
                        o.status.success() || stderr(&o).contains("cannot merge"),
                        "{log:?}: {}",
                        stderr(&o)
                    );
                }
                _ => {
                    let o = run(&out, &[]).output().unwrap();
                    log.push("rerun".into());
                    assert!(o.status.success(), "{log:?}: {}", stderr(&o));
                }
            }
        }
        let o = run(&out, &[]).output().unwrap();
        assert!(o.status.success(), "{log:?}: {}", stderr(&o));
        eprintln!("sequence {seed}: {log:?}");
        for (f, want) in OUTPUTS.iter().zip(&want) {
            assert!(
                std::fs::read(out.join(f)).unwrap() == *want,
                "sequence {seed} ({log:?}) ended with another {f}"
            );
        }
        assert!(
            !out.join("damaged-parts").exists(),
            "sequence {seed} ({log:?}) judged a part damaged"
        );
    }
}

#[test]
fn skipped_failures_are_reported_even_when_every_evaluation_fails() {
    let dir = tempfile::tempdir().unwrap();
    let spec = script_spec(
        dir.path(),
        "fail",
        "echo broken >&2\nexit 1",
        "on_failure = \"skip\"",
    );
    let o = fbo_out("run", &spec, &dir.path().join("fail"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_says(&o, "warning: 4 of 4 evaluations failed and were skipped");
    // Nothing finite to draw: refused, not an empty figure.
    let png = dir.path().join("fail.png");
    let o = fbo()
        .args(["plot", "iterations", "--y", "best-metric", "--input"])
        .arg(dir.path().join("fail/summary.csv"))
        .arg("--out")
        .arg(&png)
        .output()
        .unwrap();
    assert_exit(&o, 2, "not finite");
    assert!(!png.exists());
    // A program that does not exist is no failure to skip: refused before anything runs.
    let spec = command_spec(
        dir.path(),
        "missing",
        "./no-such-program",
        "on_failure = \"skip\"",
        (0.0, 1.0),
    );
    let o = fbo_out("run", &spec, &dir.path().join("missing"), &[]);
    assert_exit(&o, 2, "does not exist");
    assert!(!dir.path().join("missing").exists());
}

#[test]
fn statistics_of_nothing_are_refused_by_compare_and_plot_alike() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("out");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let head = trace.lines().next().unwrap();
    let cols: Vec<&str> = head.split(',').collect();
    let col = |n: &str| cols.iter().position(|c| *c == n).unwrap();
    let (c_alg, c_it, c_best) = (col("algorithm"), col("iteration"), col("best_metric"));
    let edit = |name: &str, f: &dyn Fn(&[&str]) -> Option<String>| -> PathBuf {
        let mut text = format!("{head}\n");
        for l in trace.lines().skip(1) {
            let fields: Vec<&str> = l.split(',').collect();
            if let Some(row) = f(&fields) {
                text += &row;
                text.push('\n');
            }
        }
        write(dir.path(), name, &text)
    };
    let refused = |args: &[&str], says: &str| {
        let o = fbo().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    };
    // One algorithm: nothing to compare with.
    let one = edit("one.csv", &|f| (f[c_alg] == "TS").then(|| f.join(",")));
    refused(&["compare", one.to_str().unwrap()], "nothing to compare");
    // An agent with no finite value (every evaluation failed): no NaN statistics.
    let last = "12";
    let nan = edit("nan.csv", &|f| {
        let mut g: Vec<String> = f.iter().map(|s| s.to_string()).collect();
        if f[c_alg] == "TS" && f[1] == "0" && f[c_it] == last {
            g[c_best] = "-inf".into();
        }
        Some(g.join(","))
    });
    refused(&["compare", nan.to_str().unwrap()], "no finite value");
    // A unit one algorithm lacks: ranks refuse it as compare does.
    let unpaired = edit("unpaired.csv", &|f| {
        (!(f[c_alg] == "TS" && f[1] == "3")).then(|| f.join(","))
    });
    refused(&["compare", unpaired.to_str().unwrap()], "unpaired input");
    let png = dir.path().join("ranks.png");
    refused(
        &[
            "plot",
            "ranks",
            "--input",
            unpaired.to_str().unwrap(),
            "--out",
            png.to_str().unwrap(),
        ],
        "unpaired input",
    );
    assert!(!png.exists());
}
