//! The output folder is the user's: one fbo at a time, only fbo's own files replaced or
//! removed, another experiment's results kept unless --overwrite, nothing left behind by
//! invalid input, and a spec copy that runs again from where it lies.

mod common;
use common::*;
use std::fs;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

fn run_out(spec: &Path, out: &Path, extra: &[&str]) -> Output {
    fbo_out("run", spec, out, extra)
}

#[test]
fn a_second_process_on_the_same_folder_is_refused_and_the_first_finishes_whole() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL
        .replace("runs = 4", "runs = 24")
        .replace("iterations = 12", "iterations = 40");
    let spec = write(dir.path(), "long.toml", &text);
    let out = dir.path().join("o");
    let mut first = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--threads", "1", "--no-timing"])
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !out.join(".fbo-manifest").exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = run_out(&spec, &out, &["--no-timing"]);
    let still_running = first.try_wait().unwrap().is_none();
    assert_exit(&second, 2, "in use by another fbo process");
    assert!(
        still_running,
        "the first run ended before the second started; make it longer"
    );
    assert!(first.wait().unwrap().success());
    assert_trace_of_a_fresh_run(&spec, &out, dir.path());
}

#[test]
fn files_of_the_user_survive_and_another_experiments_results_need_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    fs::create_dir_all(out.join("parts")).unwrap();
    fs::write(out.join("parts/notes.txt"), "mine").unwrap();
    fs::write(out.join("README"), "mine too").unwrap();
    let dp = write(dir.path(), "dp.toml", SMALL_DP);
    fbo_ok("run", &dp, &out, &[]);
    assert!(out.join("privacy.csv").exists() && out.join("server.csv").exists());
    assert_eq!(
        fs::read_to_string(out.join("parts/notes.txt")).unwrap(),
        "mine"
    );

    // Another spec into the same folder: refused, nothing changed.
    let small = write(dir.path(), "small.toml", SMALL);
    let before = fs::read(out.join("trace.csv")).unwrap();
    let o = run_out(&small, &out, &[]);
    assert_exit(&o, 2, "another experiment");
    assert_eq!(fs::read(out.join("trace.csv")).unwrap(), before);

    // With --overwrite: the old spec's privacy.csv and server.csv go, the user's files stay.
    fbo_ok("run", &small, &out, &["--overwrite"]);
    assert!(!out.join("privacy.csv").exists());
    assert!(!out.join("server.csv").exists());
    assert_eq!(
        fs::read_to_string(out.join("parts/notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(fs::read_to_string(out.join("README")).unwrap(), "mine too");
    let trace = fs::read_to_string(out.join("trace.csv")).unwrap();
    assert!(trace.lines().nth(1).unwrap().starts_with("TS,"), "{trace}");

    // The same spec again (edited in place) is not another experiment.
    fs::write(&small, SMALL.replace("runs = 4", "runs = 2")).unwrap();
    fbo_ok("run", &small, &out, &[]);
}

#[test]
fn invalid_input_leaves_no_folder_behind() {
    let dir = tempfile::tempdir().unwrap();
    let bad_table = SMALL.replace(
        "kind = \"synthetic-fts\"\ngrid = 200\nfunctions = 2",
        "kind = \"table\"\ntable = \"missing/table.toml\"",
    );
    let spec = write(dir.path(), "bad.toml", &bad_table);
    let out = dir.path().join("o");
    let o = run_out(&spec, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.exists(), "an invalid spec created {}", out.display());

    // Too many sub-regions for the grid: refused by validate, as by run.
    let many = SMALL_DP.replace("subregions = 2", "subregions = 100");
    let spec = write(dir.path(), "many.toml", &many);
    let v = validate(&spec);
    assert_exit(&v, 2, "server.subregions");
    let o = run_out(&spec, &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
}

#[test]
fn a_name_that_is_not_a_plain_folder_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["..", ".", "a/b", ".hidden", "x y"] {
        let spec = write(
            dir.path(),
            "n.toml",
            &SMALL.replace("name = \"small\"", &format!("name = \"{name}\"")),
        );
        let v = validate(&spec);
        assert_eq!(v.status.code(), Some(2), "{name}: {}", stderr(&v));
        assert_says(&v, "key `name`");
    }
}

#[test]
fn the_spec_copied_beside_a_table_run_runs_again_from_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let spec = root.join("configs/landmine.toml");
    let a = dir.path().join("a");
    fbo_ok("run", &spec, &a, &["--runs", "1", "--no-timing"]);
    let copy = a.join("spec.toml");
    let text = fs::read_to_string(&copy).unwrap();
    assert!(text.contains("table = \""), "{text}");
    // Rerun the copy from another working folder, into another folder: same trace.
    let b = dir.path().join("b");
    let o = fbo()
        .current_dir(dir.path())
        .arg("run")
        .arg(&copy)
        .arg("--out")
        .arg(&b)
        .args(["--quiet", "--runs", "1", "--no-timing"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        fs::read(a.join("trace.csv")).unwrap(),
        fs::read(b.join("trace.csv")).unwrap()
    );
    // And into its own folder: the same experiment, accepted without --overwrite.
    fbo_ok("run", &copy, &a, &["--runs", "1", "--no-timing"]);
}

#[test]
fn runs_beyond_the_specs_range_are_refused_on_the_command_line_too() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let o = run_out(&spec, &dir.path().join("o"), &["--runs", "1000001"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!dir.path().join("o").exists());
}

#[test]
fn progress_is_logged_without_a_terminal_and_an_interrupt_says_what_was_saved() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL
        .replace("runs = 4", "runs = 400")
        .replace("iterations = 12", "iterations = 40");
    let spec = write(dir.path(), "long.toml", &text);
    let out = dir.path().join("o");
    let child = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .args(["--threads", "1", "--no-timing"])
        .env("FBO_LOG_SECONDS", "0.3")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while finished_parts(&out.join("parts")) < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(700));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("units done,"), "no progress line in: {err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("interrupted: "))
        .unwrap_or_else(|| panic!("no interrupt line in: {err}"));
    assert!(
        line.contains("of 800 units saved in") && line.contains("rerun the same command to resume"),
        "{line}"
    );
    let saved: usize = line["interrupted: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        saved >= 3 && saved <= finished_parts(&out.join("parts")),
        "{line}"
    );
}

#[test]
fn a_failed_merge_says_how_many_runs_are_saved_and_a_rerun_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("o");
    // trace.csv cannot be written (a folder is in the way), as on a full disk at merge time.
    fs::create_dir_all(out.join("trace.csv")).unwrap();
    let o = run_out(&spec, &out, &["--overwrite", "--no-timing"]);
    assert_exit(&o, 1, "8 of 8 units (seed, algorithm) are saved in");
    fs::remove_dir(out.join("trace.csv")).unwrap();
    let o = run_out(&spec, &out, &["--no-timing"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_trace_of_a_fresh_run(&spec, &out, dir.path());
}

#[test]
fn compare_csv_belongs_to_the_results_it_describes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let small = write(dir.path(), "small.toml", SMALL);
    fbo_ok("run", &small, &out, &["--no-timing"]);
    let o = fbo_output(["compare".as_ref(), out.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("compare.csv").exists());
    // Another spec's results replace these: the old comparison goes with them.
    let dp = write(dir.path(), "dp.toml", SMALL_DP);
    fbo_ok("run", &dp, &out, &["--overwrite", "--no-timing"]);
    assert!(!out.join("compare.csv").exists());
}
