//! Initial designs (issue 40 item 3): a Latin hypercube shared out across agents is one Latin
//! hypercube; Sobol points on a table are distinct grid points; given points are used exactly,
//! per run where the file says, and bad files are refused with file, line and key.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

const BOX: &str = include_str!("fixtures/specs/design-box.toml");

/// BOX with `lines` after its `iterations` line.
fn box_with(lines: &str) -> String {
    BOX.replace("iterations = 2\n", &format!("iterations = 2\n{lines}"))
}

/// BOX with `lines` after its `function` line.
fn branin_with(lines: &str) -> String {
    BOX.replace(
        "function = \"branin\"\n",
        &format!("function = \"branin\"\n{lines}"),
    )
}

/// The trace of BOX run with `lines` after its `function` line, in `dir`.
fn branin_trace(dir: &Path, lines: &str) -> Csv {
    let spec = write(dir, "b.toml", &branin_with(lines));
    let out = dir.join("o");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    Csv::read(&out.join("trace.csv"))
}

/// Branin-Hoo, negated, written out again: the trace's values are checked against it.
fn branin(a: f64, b: f64) -> f64 {
    let pi = std::f64::consts::PI;
    let t = b - 5.1 / (4.0 * pi * pi) * a * a + 5.0 / pi * a - 6.0;
    -(t * t + 10.0 * (1.0 - 1.0 / (8.0 * pi)) * a.cos() + 10.0)
}

/// A spec of the toy program (Branin behind the command protocol), 2 agents, one run of TS,
/// with `extra` lines before its tables.
fn toy_spec(name: &str, seed: u64, iterations: usize, extra: &str) -> String {
    format!(
        "name = \"{name}\"\nseed = {seed}\nruns = 1\niterations = {iterations}\n{extra}[acquisition]\ncandidates = 200\nstarts = 3\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"maximize\"\n{BRANIN_BOX}\n[federation]\nagents = 2\n[[algorithm]]\nkind = \"ts\"\n",
        toy().display().to_string()
    )
}

/// Runs `spec` into `out` with the toy counting its invocations in `count`; the invocations
/// ("scope run agent iteration"), sorted.
fn run_counting(spec: &Path, out: &Path, count: &Path) -> Vec<String> {
    let o = fbo()
        .args([
            "run",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--quiet", "--no-timing"])
        .env("TOY_COUNT", count)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut calls: Vec<String> = std::fs::read_to_string(count)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    calls.sort();
    calls
}

/// (algorithm, run, agent) -> the initial points' columns `cols` as written.
fn initial(out: &Path, cols: &[&str]) -> BTreeMap<(String, String, String), Vec<Vec<String>>> {
    let mut m: BTreeMap<_, Vec<Vec<String>>> = BTreeMap::new();
    for r in Csv::read(&out.join("trace.csv")).records() {
        if r.num("iteration") > 0.0 {
            continue;
        }
        let [alg, run, agent] = r.key(["algorithm", "run", "agent"]).map(String::from);
        m.entry((alg, run, agent))
            .or_default()
            .push(cols.iter().map(|c| r.get(c).to_string()).collect());
    }
    m
}

#[test]
fn a_latin_hypercube_across_agents_is_one_latin_hypercube() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "s.toml",
        &box_with(
            "initial_points = 4\ninitial_design = \"lhs\"\ninitial_design_across_agents = true\n",
        ),
    );
    let out = dir.path().join("o");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let init = initial(&out, &["u0", "u1"]);
    for run in ["0", "1"] {
        for k in 0..2 {
            let mut strata: Vec<usize> = (0..3)
                .flat_map(|a| init[&("TS".into(), run.into(), a.to_string())].clone())
                .map(|p| (p[k].parse::<f64>().unwrap() * 12.0) as usize)
                .collect();
            strata.sort();
            assert_eq!(strata, (0..12).collect::<Vec<_>>(), "run {run} u{k}");
        }
        for a in 0..3 {
            let key = |alg: &str| (alg.to_string(), run.to_string(), a.to_string());
            assert_eq!(
                init[&key("TS")],
                init[&key("Random")],
                "shared by the algorithms"
            );
        }
    }
    assert_ne!(
        init[&("TS".into(), "0".into(), "0".into())],
        init[&("TS".into(), "1".into(), "0".into())]
    );
}

#[test]
fn sobol_points_on_a_table_are_distinct_grid_points() {
    let dir = tempfile::tempdir().unwrap();
    let table =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/privtuna/mnist-label-1.0-10/table.toml");
    let spec = write(
        dir.path(),
        "s.toml",
        &format!(
            "name = \"t\"\nseed = 2\nruns = 1\niterations = 1\ninitial_points = 8\ninitial_design = \"sobol\"\n\
             [objective]\nkind = \"table\"\ntable = \"{}\"\n[[algorithm]]\nkind = \"ts\"\n",
            table.display()
        ),
    );
    let out = dir.path().join("o");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    for (key, pts) in initial(&out, &["x_index"]) {
        let mut idx: Vec<&String> = pts.iter().map(|p| &p[0]).collect();
        idx.sort();
        idx.dedup();
        assert_eq!(idx.len(), 8, "{key:?}: {pts:?}");
    }
}

#[test]
fn given_points_are_used_exactly_and_bad_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "pts.csv",
        "agent,run,x1,x2\n0,0,0,0\n0,0,0.1,0.3\n1,0,3,4\n1,0,5,6\n2,0,-5,15\n2,0,10,0\n\
         0,1,2,2\n0,1,7,7\n1,1,3,3\n1,1,4,4\n2,1,9,9\n2,1,8,8\n",
    );
    let spec = write(
        dir.path(),
        "s.toml",
        &box_with("initial_points_file = \"pts.csv\"\n"),
    );
    let out = dir.path().join("o");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let init = initial(&out, &["x1", "x2"]);
    let want = |v: &[(i32, i32)]| -> Vec<Vec<String>> {
        v.iter()
            .map(|(a, b)| vec![a.to_string(), b.to_string()])
            .collect()
    };
    assert_eq!(
        init[&("TS".into(), "0".into(), "2".into())],
        want(&[(-5, 15), (10, 0)])
    );
    // As written, not as the unit cube maps them back (x1 = 0.1 came back 0.09999999999999964).
    assert_eq!(
        init[&("TS".into(), "0".into(), "0".into())][1],
        ["0.1", "0.3"]
    );
    assert_eq!(
        init[&("Random".into(), "1".into(), "0".into())],
        want(&[(2, 2), (7, 7)])
    );

    for (csv, key, msg) in [
        ("agent,x1,x2\n0,0,0\n1,0,0\n", "", "no points for agent 2"),
        (
            "agent,x1,x2\n0,0,0\n1,0,0\n2,0,0\n2,1,1\n",
            "",
            "every agent starts from the same number",
        ),
        (
            "agent,x1,x2\n0,0,0\n1,0,0\n2,0,99\n",
            "line 4",
            "x2 = 99 is outside its range",
        ),
        ("agent,x1\n0,0\n1,0\n2,0\n", "x2", "missing column"),
        (
            "agent,x1,x2\n7,0,0\n",
            "line 2",
            "agent must be one of the objective's agents 0..2",
        ),
    ] {
        write(dir.path(), "bad.csv", csv);
        let spec = write(
            dir.path(),
            "bad.toml",
            &box_with("initial_points_file = \"bad.csv\"\n"),
        );
        let o = validate(&spec);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("bad.csv") && err.contains(key) && err.contains(msg),
            "{msg}: {err}"
        );
    }
    let spec = write(
        dir.path(),
        "bad.toml",
        &box_with("initial_points = 3\ninitial_points_file = \"pts.csv\"\n"),
    );
    let err = stderr(&validate(&spec));
    assert!(
        err.contains("initial_points") && err.contains("gives 2 points per agent"),
        "{err}"
    );
}

#[test]
fn told_values_are_measurements_and_are_not_run_again() {
    // Three of the four initial points carry a value: the toy (Branin behind the command
    // protocol) runs only for the fourth and for each agent's first iteration, and the trace
    // shows the told values where they were told (they are not Branin's).
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "pts.csv",
        "agent,x1,x2,value\n0,0,0,1.5\n0,1,2,\n1,3,4,2.5\n1,5,6,3.5\n",
    );
    let text = toy_spec("told", 4, 1, "initial_points_file = \"pts.csv\"\n");
    let spec = write(dir.path(), "told.toml", &text);
    let out = dir.path().join("o");
    let runs = run_counting(&spec, &out, &dir.path().join("count"));
    assert_eq!(runs, ["TS 0 0 1", "TS 0 1 1", "init 0 0 0"]);
    let init = initial(&out, &["x1", "x2", "y"]);
    let y = |agent: &str| -> Vec<String> {
        init[&("TS".into(), "0".into(), agent.into())]
            .iter()
            .map(|r| r[2].clone())
            .collect()
    };
    assert_eq!(y("1"), ["2.5", "3.5"]);
    assert_eq!(y("0")[0], "1.5");
    // Branin's value at (1, 2), measured.
    let b: f64 = y("0")[1].parse().unwrap();
    assert!((b + 21.62763539206603).abs() < 1e-9, "{b}");

    // A function computes its own values: a value column is refused, named.
    let spec = write(
        dir.path(),
        "bad.toml",
        &box_with("initial_points_file = \"pts.csv\"\n"),
    );
    let err = stderr(&validate(&spec));
    assert!(
        err.contains("initial_points_file") && err.contains("told values are measurements"),
        "{err}"
    );
    write(
        dir.path(),
        "nan.csv",
        "agent,x1,x2,value\n0,0,0,x\n1,0,0,1\n",
    );
    let spec = write(dir.path(), "nan.toml", &text.replace("pts.csv", "nan.csv"));
    let err = stderr(&validate(&spec));
    assert!(
        err.contains("nan.csv")
            && err.contains("line 2")
            && err.contains("value must be a finite number"),
        "{err}"
    );
}

#[test]
fn a_warm_start_from_an_earlier_runs_history_runs_none_of_its_points_again() {
    // A study of the toy program (Branin behind the command protocol), 2 initial points and
    // 2 iterations of TS per agent; `fbo history` turns its journal into the next study's
    // initial points (its init and TS evaluations, 4 per agent, with their values), and the
    // next study runs only its own iteration.
    let dir = tempfile::tempdir().unwrap();
    let spec_text = |iterations: usize, extra: &str| toy_spec("warm", 5, iterations, extra);
    let first = write(
        dir.path(),
        "first.toml",
        &spec_text(2, "initial_points = 2\n"),
    );
    let old = dir.path().join("old");
    assert_eq!(run_counting(&first, &old, &dir.path().join("c1")).len(), 8);

    let o = fbo_output([
        "history",
        old.to_str().unwrap(),
        "--scope",
        "init",
        "--scope",
        "TS",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "scope,run,agent,iteration,x1,x2,value");
    assert_eq!(lines.len(), 1 + 8, "{csv}");
    // Each row is the point and value the first study's trace shows.
    let trace = std::fs::read_to_string(old.join("trace.csv")).unwrap();
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        let (x1, x2, y) = (f[4], f[5], f[6]);
        assert!(
            trace
                .lines()
                .any(|t| t.contains(&format!(",{x1},{x2},")) && t.contains(&format!(",{y},"))),
            "{l} not in the trace"
        );
    }
    write(dir.path(), "warm.csv", &csv);

    let second = write(
        dir.path(),
        "second.toml",
        &spec_text(1, "initial_points_file = \"warm.csv\"\n"),
    );
    let new = dir.path().join("new");
    assert_eq!(
        run_counting(&second, &new, &dir.path().join("c2")),
        ["TS 0 0 1", "TS 0 1 1"]
    );
    let init = initial(&new, &["x1", "x2", "y"]);
    assert_eq!(init[&("TS".into(), "0".into(), "0".into())].len(), 4);

    // A scope that is not there is named with those that are, exit 2.
    let o = fbo_output(["history", old.to_str().unwrap(), "--scope", "EI"]);
    assert_exit(&o, 2, "scopes there: TS, init");
    // A folder without a journal is named.
    let o = fbo_output(["history", dir.path().to_str().unwrap()]);
    assert_exit(&o, 2, "no evaluations journal");
    // A path that is not there is named as missing, not as a bad journal.
    let missing = dir.path().join("nowhere");
    let o = fbo_output(["history", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("nowhere") && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn a_function_on_given_bounds_is_searched_there_with_exact_regret_and_bad_bounds_are_named() {
    // Branin on [0, 5] x [1, 4], around its maximiser (pi, 2.275): every query lies in that
    // box, every value is Branin's there, and regret is against Branin's own maximum.
    let dir = tempfile::tempdir().unwrap();
    let trace = branin_trace(dir.path(), "bounds = [[0.0, 5.0], [1.0, 4.0]]\n");
    let maximum = -0.397_887_357_729_738;
    let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
    for r in trace.records() {
        let (x1, x2) = (r.num("x1"), r.num("x2"));
        // The unit coordinates map linearly onto the given box, not Branin's own.
        assert!((x1 - 5.0 * r.num("u0")).abs() < 1e-9, "{:?}", r.fields);
        assert!(
            (x2 - (1.0 + 3.0 * r.num("u1"))).abs() < 1e-9,
            "{:?}",
            r.fields
        );
        assert!((r.num("y") - branin(x1, x2)).abs() < 1e-9, "{:?}", r.fields);
        let best = r.num("best_f");
        assert!((r.num("simple_regret") - (maximum - best)).abs() < 1e-9);
        for (k, x) in [x1, x2].into_iter().enumerate() {
            lo[k] = lo[k].min(x);
            hi[k] = hi[k].max(x);
        }
    }
    assert!(lo[0] >= 0.0 && hi[0] <= 5.0 && lo[1] >= 1.0 && hi[1] <= 4.0);
    // Uniform starts and TS spread over most of the box, not a corner of Branin's own.
    assert!(hi[0] - lo[0] > 2.5 && hi[1] - lo[1] > 1.5, "{lo:?} {hi:?}");

    for (line, expect) in [
        // Outside Branin's own box (x1 in [-5, 10]), where its maximum is not known.
        (
            "bounds = [[-6.0, 5.0], [1.0, 4.0]]",
            "axis x1 must be [low, high] with -5 <= low < high <= 10",
        ),
        // Around neither coordinate of the maximiser.
        (
            "bounds = [[4.0, 5.0], [1.0, 4.0]]",
            "leaves out the function's maximiser",
        ),
        ("bounds = [2.0, 1.0]", "axis x1 must be [low, high]"),
        (
            "bounds = [[0.0, 5.0]]",
            "gives 1 pairs for a function of 2 axes",
        ),
        ("bounds = [1.0, 4.0]\ngrid = 5", ""),
    ] {
        let bad = write(dir.path(), "bad.toml", &branin_with(&format!("{line}\n")));
        let o = validate(&bad);
        if expect.is_empty() {
            // A grid of the given box is accepted (x1 in [1, 4] holds pi, x2 2.275).
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            continue;
        }
        assert_exit(&o, 2, expect);
        assert!(stderr(&o).contains("objective.bounds"), "{}", stderr(&o));
    }
    // Another kind does not read the key.
    let synthetic = write(
        dir.path(),
        "s.toml",
        "name = \"s\"\n[objective]\nkind = \"synthetic-fts\"\nbounds = [0.0, 1.0]\n[[algorithm]]\nkind = \"ts\"\n",
    );
    assert_exit(
        &validate(&synthetic),
        2,
        "applies only to kind = \"function\"",
    );
}

#[test]
fn an_embedded_function_ignores_its_inert_axes_and_bad_embeddings_are_named() {
    // Branin among 3 inert axes: the trace has their columns, and every observed value is
    // Branin's at the first two coordinates.
    let dir = tempfile::tempdir().unwrap();
    let trace = branin_trace(dir.path(), "embed = 5\n");
    let mut inert = Vec::new();
    for r in trace.records() {
        let (x1, x2) = (r.num("x1"), r.num("x2"));
        assert!((r.num("y") - branin(x1, x2)).abs() < 1e-9, "{:?}", r.fields);
        inert.push(r.num("inert3"));
    }
    assert!(inert.iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(
        inert.iter().any(|v| (v - inert[0]).abs() > 1e-3),
        "inert axes are searched too"
    );

    for (line, expect) in [
        ("embed = 1\n", "objective.embed"),
        ("embed = 5\ngrid = 10\n", "does not go with objective.grid"),
    ] {
        let bad = write(dir.path(), "bad.toml", &branin_with(line));
        let o = validate(&bad);
        assert_exit(&o, 2, expect);
    }
}
