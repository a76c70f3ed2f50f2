//! `fbo evaluate`: the objective at given raw hyperparameter values.

mod common;
use common::*;

const SPEC: &str = include_str!("fixtures/specs/evaluate-spec.toml");

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
    // (algorithm, run, agent) -> its rows as (iteration, y, f)
    type Rows = Vec<(f64, f64, f64)>;
    let mut units: std::collections::BTreeMap<[&str; 3], Rows> = Default::default();
    let trace = Csv::read(&out.join("trace.csv"));
    let unit = ["algorithm", "run", "agent"];
    for r in trace.records() {
        units
            .entry(r.key(unit))
            .or_default()
            .push((r.num("iteration"), r.num("y"), r.num("f")));
    }
    let incumbents = Csv::parse(std::path::Path::new("fbo incumbents"), text.as_bytes());
    assert!(
        incumbents.header.iter().any(|h| h == "incumbent_x1")
            && incumbents
                .header
                .iter()
                .any(|h| h == "observed_best_metric")
    );
    let mut checked = 0;
    let mut moved = 0;
    for r in incumbents.records() {
        let rows = &units[&r.key(unit)];
        let it = r.num("iteration");
        let mut best = (f64::NEG_INFINITY, 0.0);
        for &(_, y, f) in rows.iter().filter(|row| row.0 <= it) {
            if y > best.0 {
                best = (y, f);
            }
        }
        let got = r.num("best_f");
        assert!(
            (got - best.1).abs() < 1e-9,
            "{:?}: want {}",
            r.fields,
            best.1
        );
        if (r.num("observed_best_metric") - got).abs() > 1e-6 {
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
