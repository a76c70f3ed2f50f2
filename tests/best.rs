//! `fbo best RUN`: the best configuration of every algorithm and agent, checked against the
//! trace it is read from; and the table at the end of `fbo run`.

mod common;
use common::*;

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

/// `fbo best OUT --csv`, asserted to succeed, as rows of fields.
fn best_csv(out: &std::path::Path) -> Vec<Vec<String>> {
    let o = fbo_output([
        std::ffi::OsStr::new("best"),
        out.as_os_str(),
        std::ffi::OsStr::new("--csv"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    csv_rows(&String::from_utf8(o.stdout).unwrap())
}

const ALGORITHMS: &str = include_str!("fixtures/specs/best-algorithms.toml");

#[test]
fn best_is_the_highest_observation_of_each_algorithm_and_agent() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "fn.toml",
        "name = \"fn\"\nseed = 5\nruns = 3\niterations = 6\ninitial_points = 3\n[objective]\nkind = \"function\"\nfunction = \"branin\"\nnoise_var = 0.01\n[federation]\nagents = 2\n[[algorithm]]\nkind = \"ts\"\n[[algorithm]]\nkind = \"ei\"\n",
    );
    let out = dir.path().join("out");
    let o = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .arg("--no-timing")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // 2 algorithms x 2 agents: the answer is printed at the end of the run.
    assert_says(&o, "best configurations:\nalgorithm  agent  found at");
    let best = best_csv(&out);
    assert_eq!(
        best[0].join(","),
        "algorithm,agent,run,evaluation,evaluations,x1,x2,observed,noiseless"
    );
    assert_eq!(best.len(), 1 + 4);
    let trace = Csv::read(&out.join("trace.csv"));
    // The raw columns x1, x2 come after the unit columns x0, x1.
    let (cx1, cx2) = (trace.col("x_index") + 3, trace.col("x_index") + 4);
    assert_eq!(
        (trace.header[cx1].as_str(), trace.header[cx2].as_str()),
        ("x1", "x2")
    );
    for b in &best[1..] {
        let mine: Vec<Record> = trace
            .records()
            .filter(|r| r.get("algorithm") == b[0] && r.get("agent") == b[1])
            .collect();
        let top = mine
            .iter()
            .map(|r| r.num("y"))
            .fold(f64::NEG_INFINITY, f64::max);
        let row = mine.iter().find(|r| r.num("y") == top).unwrap();
        assert_eq!(b[2], row.get("run"));
        let it: i64 = row.get("iteration").parse().unwrap();
        assert_eq!(b[3], (it + 3).to_string());
        assert_eq!(b[4], "9");
        assert_eq!((&b[5], &b[6]), (&row.fields[cx1], &row.fields[cx2]));
        // In the objective's own direction: the metric's sign to fbo's maximised scale.
        let sign = row.num("metric") / row.num("f");
        assert_eq!(b[7].parse::<f64>().unwrap(), sign * top);
        assert_eq!(b[8], row.get("metric"));
    }
}

#[test]
fn a_commands_best_has_no_noiseless_value() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "cmd.toml",
        &format!(
            "name = \"cmd\"\nseed = 4\nruns = 1\niterations = 2\ninitial_points = 2\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\n{BRANIN_BOX}\n{ALGORITHMS}",
            toy().display().to_string()
        ),
    );
    let out = dir.path().join("out");
    let o = fbo_out("run", &spec, &out, &["--no-timing"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let best = best_csv(&out);
    assert_eq!(best.len(), 1 + 4);
    assert!(best[1..].iter().all(|b| b[8].is_empty()), "{best:?}");
    // A folder without a run is refused with its path.
    let o = fbo_output([
        std::ffi::OsString::from("best"),
        dir.path().join("none").into_os_string(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// What has no best is said, not left out: an agent whose every evaluation failed gets a
/// note; a trace with no row and a sweep's folder are refused with what to do instead.
#[test]
fn what_has_no_best_is_said() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // Agent 1's program always fails; agent 0's reports Branin's value.
    let program = write(
        dir.path(),
        "flaky.sh",
        &format!(
            "#!/bin/sh\nif [ \"$FBO_AGENT\" = 1 ]; then echo broken >&2; exit 1; fi\nexec {}\n",
            toy().display()
        ),
    );
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = write(
        dir.path(),
        "cmd.toml",
        &format!(
            "name = \"cmd\"\nseed = 4\nruns = 1\niterations = 2\ninitial_points = 2\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\non_failure = \"skip\"\n{BRANIN_BOX}\n[federation]\nagents = 2\n[[algorithm]]\nkind = \"ts\"\n",
            program.display().to_string()
        ),
    );
    let out = dir.path().join("out");
    let o = fbo_out("run", &spec, &out, &["--no-timing"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fbo_output([std::ffi::OsStr::new("best"), out.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_says(&o, "TS, agent 1: all 4 of its evaluations failed");
    // A trace with its header only.
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::copy(out.join("spec.toml"), empty.join("spec.toml")).unwrap();
    write(
        &empty,
        "trace.csv",
        &format!("{}\n", trace.lines().next().unwrap()),
    );
    let o = fbo_output([std::ffi::OsStr::new("best"), empty.as_os_str()]);
    assert_exit(&o, 2, "has no rows");
    // A sweep's folder points to its points.
    let sweep = dir.path().join("sweep");
    let point = sweep.join("points").join("p1");
    std::fs::create_dir_all(&point).unwrap();
    for f in ["spec.toml", "trace.csv"] {
        std::fs::copy(out.join(f), point.join(f)).unwrap();
    }
    let o = fbo_output([std::ffi::OsStr::new("best"), sweep.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a sweep's folder") && stderr(&o).contains("points/p1"),
        "{}",
        stderr(&o)
    );
}
