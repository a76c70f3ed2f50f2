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
