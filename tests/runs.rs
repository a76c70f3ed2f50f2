//! End-to-end behaviour of `fbo run`: output files, determinism, crash safety and resume.

mod common;
use common::*;
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

fn run(spec: &Path, out: &Path, extra: &[&str]) {
    fbo_ok("run", spec, out, extra);
}

#[test]
fn output_is_byte_identical_across_thread_counts() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let (a, b) = (dir.path().join("t1"), dir.path().join("t2"));
    run(&spec, &a, &["--threads", "1", "--no-timing"]);
    run(&spec, &b, &["--threads", "2", "--no-timing"]);
    for f in ["trace.csv", "summary.csv", "spec.toml"] {
        let (x, y) = (fs::read(a.join(f)).unwrap(), fs::read(b.join(f)).unwrap());
        assert!(!x.is_empty());
        assert!(x == y, "{f} differs between 1 and 2 threads");
    }
    assert!(
        !a.join("parts").exists(),
        "part files are removed after a complete run"
    );
}

#[test]
fn trace_has_one_row_per_query_with_consistent_regret() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("o");
    run(&spec, &out, &[]);
    let trace = Csv::read(&out.join("trace.csv"));
    let mut count: HashMap<(&str, &str), usize> = HashMap::new();
    for r in trace.records() {
        *count.entry((r.get("algorithm"), r.get("run"))).or_default() += 1;
        let (best, f, sr) = (r.num("best_f"), r.num("f"), r.num("simple_regret"));
        assert!(best >= f && (-1e-12..=1.0 + 1e-12).contains(&sr));
        assert!(!r.get("elapsed_s").is_empty(), "timing is on by default");
        let src = r.get("source");
        assert!(
            src == "init"
                || src == "own"
                || src.parse::<usize>().is_ok_and(|a| (1..=3).contains(&a))
        );
    }
    // 2 algorithms x 4 runs, each 2 initial points + 12 iterations.
    assert_eq!(count.len(), 8);
    assert!(count.values().all(|&c| c == 14), "{count:?}");
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary.lines().any(|l| l.starts_with("FTS M=20,12,4,")),
        "{summary}"
    );
}

#[test]
fn a_killed_run_leaves_only_whole_csv_files_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    // Long enough that it is still running when killed.
    let text = SMALL
        .replace("runs = 4", "runs = 40")
        .replace("iterations = 12", "iterations = 40")
        .replace(
            "observations = 10",
            "observations = 10\nmessages = \"every-iteration\"",
        );
    let spec = write(dir.path(), "long.toml", &text);
    let out = dir.path().join("o");
    let mut child = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--threads", "2", "--no-timing"])
        .spawn()
        .unwrap();
    // Kill once a few runs have finished.
    let parts = out.join("parts");
    let t0 = Instant::now();
    loop {
        let done = finished_parts(&parts);
        if done >= 3 || t0.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the run finished before it could be killed; make it longer"
    );
    assert!(
        !out.join("trace.csv").exists(),
        "no merged trace from a killed run"
    );

    // Every CSV present parses whole: same field count on every row, newline-terminated.
    let mut seen = 0;
    for entry in fs::read_dir(&parts).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "csv") {
            let bytes = fs::read(&p).unwrap();
            assert_eq!(bytes.last(), Some(&b'\n'), "{} is cut off", p.display());
            let mut rdr = csv::Reader::from_reader(bytes.as_slice());
            let width = rdr.headers().unwrap().len();
            let rows: Vec<_> = rdr.records().map(|r| r.unwrap()).collect();
            assert_eq!(rows.len(), 42, "{}", p.display());
            assert!(rows.iter().all(|r| r.len() == width));
            seen += 1;
        }
    }
    assert!(seen >= 3);

    // Rerun: resumes, says so, and ends with the same bytes as an uninterrupted run.
    let o = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .args(["--no-timing"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_says(&o, "resuming:");
    assert_trace_of_a_fresh_run(&spec, &out, dir.path());
}

#[test]
fn parts_fbo_did_not_write_are_refused_and_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let parts = out.join("parts");
    fs::create_dir_all(&parts).unwrap();
    fs::write(parts.join("fingerprint"), "some other spec").unwrap();
    fs::write(parts.join("a000-r00000.csv"), "garbage\n").unwrap();
    let spec = write(dir.path(), "small.toml", SMALL);
    let o = fbo_output([
        "run".as_ref(),
        spec.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("parts/a000-r00000.csv") && stderr(&o).contains("--overwrite"),
        "{}",
        stderr(&o)
    );
    assert!(!out.join("trace.csv").exists());
    run(&spec, &out, &["--overwrite"]);
    let trace = fs::read_to_string(out.join("trace.csv")).unwrap();
    assert!(!trace.contains("garbage"));
}
