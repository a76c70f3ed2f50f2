//! `fbo evaluate`: the objective at given raw hyperparameter values.

mod common;
use common::*;

const SPEC: &str = r#"
name = "evaluate"
seed = 1
runs = 1
iterations = 2
initial_points = 2

[objective]
kind = "function"
function = "branin"
noise_var = 0.01

[federation]
agents = 2

[[algorithm]]
kind = "ts"
"#;

fn evaluate(dir: &std::path::Path, points: &str) -> std::process::Output {
    let spec = write(dir, "spec.toml", SPEC);
    let pts = write(dir, "points.csv", points);
    fbo()
        .arg("evaluate")
        .arg(&spec)
        .arg("--points")
        .arg(&pts)
        .output()
        .unwrap()
}

#[test]
fn evaluate_gives_the_noiseless_metric_at_raw_values() {
    let dir = tempfile::tempdir().unwrap();
    // Branin's minimiser (pi, 2.275) and a corner, noiseless; fbo's Branin is negated to be
    // maximised, so the optimum reads -0.397887 (Branin's minimum 0.397887).
    let o = evaluate(
        dir.path(),
        "agent,x1,x2,note\n0,3.141592653589793,2.275,optimum\n1,-5,0,corner\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("agent,x1,x2,note,value"));
    let values: Vec<f64> = lines
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    for (v, x) in values
        .iter()
        .zip([[std::f64::consts::PI, 2.275], [-5.0, 0.0]])
    {
        let want = fbo::objective::function::Function::Branin.value(&x);
        assert!((v - want).abs() < 1e-12, "{v}: {want}");
    }
    assert_eq!(values.len(), 2);
    assert!((values[0] + 0.397887).abs() < 1e-6, "{}", values[0]);
    assert!(text.contains("optimum") && text.contains("corner"));
}

#[test]
fn evaluate_refuses_bad_points_before_printing_anything() {
    let dir = tempfile::tempdir().unwrap();
    for (points, expect) in [
        (
            "agent,x1\n0,1\n",
            "key `x2`: missing column; the spec's hyperparameters are x1, x2",
        ),
        (
            "x1,x2\n1,2\n",
            "key `agent`: the points file needs a column `agent`",
        ),
        (
            "agent,x1,x2\n0,1,2\n0,11,2\n",
            "key `row 3`: x1 = 11 is outside its range [-5, 10]",
        ),
        (
            "agent,x1,x2\n2,1,2\n",
            "key `row 2, agent`: must be an agent 0..1, got \"2\"",
        ),
        (
            "agent,x1,x2\n0,one,2\n",
            "key `row 2, x1`: not a number: \"one\"",
        ),
    ] {
        let o = evaluate(dir.path(), points);
        assert_eq!(o.status.code(), Some(2), "{points}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{points}");
        assert!(stderr(&o).contains(expect), "{points}: {}", stderr(&o));
    }
}

/// `fbo incumbents`: every row's incumbent (the best observation so far of its algorithm,
/// run and agent) valued by a reference objective, here the same function without noise, so
/// each value must be the trace's own noiseless f at that incumbent; `fbo compare` reads it.
#[test]
fn incumbents_are_valued_by_the_reference_objective() {
    let dir = tempfile::tempdir().unwrap();
    // Two algorithms differing in their own sample, so that compare has a pair.
    let noisy = SPEC.replace("noise_var = 0.01", "noise_var = 4.0").replace(
        "[[algorithm]]\nkind = \"ts\"\n",
        "[[algorithm]]\nkind = \"ts\"\n\n[[algorithm]]\nkind = \"ts\"\nown_sample = \"rff\"\nlabel = \"TS-rff\"\n",
    );
    let spec = write(
        dir.path(),
        "noisy.toml",
        &noisy.replace("iterations = 2", "iterations = 6"),
    );
    let reference = write(dir.path(), "reference.toml", SPEC);
    let out = dir.path().join("run");
    let o = fbo()
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fbo()
        .arg("incumbents")
        .arg(&out)
        .arg("--reference")
        .arg(&reference)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    // The trace: per unit, the rows in iteration order with (y, f).
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let mut lines = trace.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let c = |n: &str| head.iter().position(|h| *h == n).unwrap();
    // (algorithm, run, agent) -> its rows as (iteration, y, f)
    type Rows = Vec<(i64, f64, f64)>;
    let mut units: std::collections::BTreeMap<(String, String, String), Rows> = Default::default();
    for l in lines {
        let r: Vec<&str> = l.split(',').collect();
        units
            .entry((
                r[c("algorithm")].into(),
                r[c("run")].into(),
                r[c("agent")].into(),
            ))
            .or_default()
            .push((
                r[c("iteration")].parse().unwrap(),
                r[c("y")].parse().unwrap(),
                r[c("f")].parse().unwrap(),
            ));
    }
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(head.contains(&"incumbent_x1") && head.contains(&"observed_best_metric"));
    let c = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let mut checked = 0;
    let mut moved = 0;
    for l in lines {
        let r: Vec<&str> = l.split(',').collect();
        let rows = &units[&(
            r[c("algorithm")].into(),
            r[c("run")].into(),
            r[c("agent")].into(),
        )];
        let it: i64 = r[c("iteration")].parse().unwrap();
        let mut best = (f64::NEG_INFINITY, 0.0);
        for &(_, y, f) in rows.iter().filter(|row| row.0 <= it) {
            if y > best.0 {
                best = (y, f);
            }
        }
        let got: f64 = r[c("best_f")].parse().unwrap();
        assert!((got - best.1).abs() < 1e-9, "{l}: want {}", best.1);
        let observed: f64 = r[c("observed_best_metric")].parse().unwrap();
        if (observed - got).abs() > 1e-6 {
            moved += 1;
        }
        checked += 1;
    }
    assert_eq!(checked, units.values().map(Vec::len).sum::<usize>());
    assert!(
        moved > 0,
        "the noise never separated the observed best from the reference"
    );
    let file = write(dir.path(), "incumbents.csv", &text);
    let o = fbo().arg("compare").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
