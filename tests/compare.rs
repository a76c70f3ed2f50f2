//! `fbo compare` end to end: paired statistics from a run's trace.

mod common;
use common::*;
use std::fs;

fn run_small(dir: &std::path::Path, threads: &str) -> std::path::PathBuf {
    let spec = write(dir, "small.toml", SMALL);
    let out = dir.join(format!("t{threads}"));
    fbo_ok("run", &spec, &out, &["--no-timing", "--threads", threads]);
    out
}

#[test]
fn compare_writes_the_same_table_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut csvs = Vec::new();
    for threads in ["1", "2"] {
        let out = run_small(dir.path(), threads);
        let o = fbo_output(["compare", out.to_str().unwrap(), "--at", "3,12"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("against TS") && text.contains("FTS"),
            "{text}"
        );
        csvs.push(fs::read_to_string(out.join("compare.csv")).unwrap());
    }
    assert_eq!(csvs[0], csvs[1]);
    let lines: Vec<&str> = csvs[0].lines().collect();
    assert!(lines[0].starts_with("metric,iteration,algorithm,baseline,n,mean_diff,ci_low,ci_high"));
    // One row per (iteration, non-baseline algorithm); 4 runs x 1 target = 4 paired units.
    assert_eq!(lines.len(), 1 + 2);
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!((f[2], f[3], f[4]), ("FTS M=20", "TS", "4"));
        let (mean, lo, hi): (f64, f64, f64) = (
            f[5].parse().unwrap(),
            f[6].parse().unwrap(),
            f[7].parse().unwrap(),
        );
        assert!(lo <= mean && mean <= hi, "{l}");
        let p: f64 = f[11].parse().unwrap();
        assert!((0.0..=1.0).contains(&p));
    }
    // Markdown on request.
    let out = dir.path().join("t1");
    let o = fbo_output([
        "compare",
        out.to_str().unwrap(),
        "--markdown",
        "--metric",
        "simple-regret",
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("| iteration | algorithm |") && text.contains("|---|"),
        "{text}"
    );
}

#[test]
fn unpaired_input_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_small(dir.path(), "1");
    let trace = fs::read_to_string(out.join("trace.csv")).unwrap();
    // (a) FTS lacks run 3: the units differ.
    let dropped: String = trace
        .lines()
        .filter(|l| !l.starts_with("FTS M=20,3,"))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(out.join("trace.csv"), dropped).unwrap();
    let o = fbo_output(["compare", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("do not cover the same (run, agent) units")
            && stderr(&o).contains("run 3 agent 0"),
        "{}",
        stderr(&o)
    );
    // (b) FTS starts run 0 from another initial point.
    let moved: String = trace
        .lines()
        .map(|l| {
            let mut f: Vec<String> = l.split(',').map(String::from).collect();
            if f[0] == "FTS M=20" && f[1] == "0" && f[3].parse::<i64>().is_ok_and(|i| i <= 0) {
                f[4] = ((f[4].parse::<u64>().unwrap() + 1) % 200).to_string();
            }
            f.join(",") + "\n"
        })
        .collect();
    fs::write(out.join("trace.csv"), moved).unwrap();
    let o = fbo_output(["compare", out.to_str().unwrap()]);
    assert_exit(&o, 2, "different initial points");
    let o = fbo_output(["compare", out.to_str().unwrap(), "--allow-init-differences"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Unknown baseline and iteration.
    let o = fbo_output(["compare", out.to_str().unwrap(), "--baseline", "XYZ"]);
    assert_exit(&o, 2, "no algorithm \"XYZ\"");
    let o = fbo_output(["compare", out.to_str().unwrap(), "--at", "99"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_sweep_compares_points_with_the_reference_and_reports_the_trend_on_epsilon() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{SMALL_DP}\n[sweep]\n\"server.z\" = [0.5, 1.0, 4.0]\n")
        .replace("runs = 3", "runs = 2");
    let spec = write(dir.path(), "sw.toml", &text);
    let out = dir.path().join("o");
    fbo_ok("sweep", &spec, &out, &["--no-timing"]);
    let o = fbo_output(["compare", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cmp = fs::read_to_string(out.join("compare.csv")).unwrap();
    // DP-FTS-DE at points p001 and p002 against p000; TS, which server.z does not reach, gives
    // p000's results at every point: no rows of zero difference, none counted by Holm.
    assert_eq!(cmp.lines().count(), 1 + 2, "{cmp}");
    assert!(
        cmp.lines()
            .nth(1)
            .unwrap()
            .contains("p001 (server.z=1.0): DP-FTS-DE")
    );
    assert!(!cmp.contains(": TS,"), "{cmp}");
    assert_says(&o, "note: TS gives the same results at every point");
    // The trend: only DP-FTS-DE has an epsilon. Its slope must equal the least-squares slope of
    // the points' final mean best metric (summary.csv) on their rdp-int epsilon (sweep.csv).
    let trend = Csv::read(&out.join("trend.csv"));
    assert_eq!(trend.rows.len(), 1, "{:?}", trend.rows);
    let t = trend.records().next().unwrap();
    assert!(
        t.get("algorithm").starts_with("DP-FTS-DE") && t.get("points") == "3",
        "{:?}",
        t.fields
    );
    let slope = t.num("slope");
    let sweep = Csv::read(&out.join("sweep.csv"));
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for g in sweep
        .records()
        .filter(|g| g.fields.iter().any(|f| f.contains("DP-FTS-DE")))
    {
        xs.push(g.num("epsilon_rdp_int"));
        let summary = Csv::read(&out.join("points").join(g.get("point")).join("summary.csv"));
        let last = summary
            .records()
            .find(|r| r.get("algorithm").starts_with("DP-FTS-DE") && r.get("iteration") == "8")
            .unwrap();
        ys.push(last.num("mean_best_metric"));
    }
    let (mx, my) = (xs.iter().sum::<f64>() / 3.0, ys.iter().sum::<f64>() / 3.0);
    let num: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    assert!(
        (slope - num / den).abs() < 1e-9 * (1.0 + slope.abs()),
        "{slope} vs {}",
        num / den
    );
    let (lo, hi) = (t.num("ci_low"), t.num("ci_high"));
    assert!(lo <= hi, "{:?}", t.fields);
}

/// A hand-made trace: two algorithms, three (run, agent) units, two iterations.
fn tiny_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let head = "algorithm,run,agent,iteration,x_index,x0,source,y,f,metric,best_f,best_metric,simple_regret,cumulative_regret,elapsed_s,params_sent,train_s,sim_clock_s\n";
    let mut text = String::from(head);
    // best_f per (algorithm, unit, iteration); simple regret = 1 - best_f.
    let rows = [
        ("A", [[0.6, 0.6], [0.2, 0.9], [0.4, 0.4]]),
        ("B", [[0.5, 0.7], [0.3, 0.8], [0.1, 0.4]]),
    ];
    for (alg, units) in rows {
        for (u, its) in units.iter().enumerate() {
            text += &format!("{alg},{u},0,0,7,0.5,init,0,0,0,0,0,1,0,,0,0,\n");
            for (i, b) in its.iter().enumerate() {
                text += &format!(
                    "{alg},{u},0,{},3,0.1,own,{b},{b},{b},{b},{b},{},0,,0,0,\n",
                    i + 1,
                    1.0 - b
                );
            }
        }
    }
    let p = dir.join("trace.csv");
    fs::write(&p, text).unwrap();
    p
}

#[test]
fn difference_and_rank_curves_match_hand_computation() {
    let dir = tempfile::tempdir().unwrap();
    let trace = tiny_trace(dir.path());
    let (base, curves) =
        fbo::compare::difference_curves(&trace, None, fbo::compare::Metric::BestMetric, 1000)
            .unwrap();
    assert_eq!(base, "A");
    assert_eq!(curves.len(), 1);
    // B - A: iteration 1: (-0.1, 0.1, -0.3), mean -0.1; iteration 2: (0.1, -0.1, 0), mean 0.
    let c = &curves[0].1;
    assert!(
        (c[0].1 + 0.1).abs() < 1e-12 && c[1].1.abs() < 1e-12,
        "{c:?}"
    );
    assert!(c.iter().all(|p| p.2 <= p.1 && p.1 <= p.3));
    // Ranks (1 = best, ties share 1.5): iteration 1: A 1, 2, 1 -> 4/3 and B 2, 1, 2 -> 5/3;
    // iteration 2: A 2, 1, 1.5 and B 1, 2, 1.5 -> 1.5 each. Simple regret ranks the same.
    for metric in [
        fbo::compare::Metric::BestMetric,
        fbo::compare::Metric::SimpleRegret,
    ] {
        let ranks = fbo::compare::rank_curves(&trace, metric, &[]).unwrap();
        let want = [("A", [4.0 / 3.0, 1.5]), ("B", [5.0 / 3.0, 1.5])];
        for ((label, pts), (wl, wr)) in ranks.iter().zip(want) {
            assert_eq!(label, wl);
            for (p, w) in pts.iter().zip(wr) {
                assert!((p.1 - w).abs() < 1e-12, "{ranks:?}");
            }
        }
    }
    // Draws: both kinds to PNG and SVG.
    for kind in ["difference", "ranks"] {
        let out = dir.path().join(format!("{kind}.svg"));
        let o = fbo_output([
            "plot",
            kind,
            "--input",
            trace.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let svg = fs::read_to_string(&out).unwrap();
        assert!(svg.contains(if kind == "ranks" {
            "mean rank"
        } else {
            "difference to A"
        }));
    }
    let o = fbo_output([
        "plot",
        "ranks",
        "--input",
        trace.to_str().unwrap(),
        "--out",
        dir.path().join("x.png").to_str().unwrap(),
        "--y",
        "cumulative-regret",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// The table says which way is better: lower for a minimised command's value (its metric is
/// the value itself, fbo maximises its negative) and for simple regret, higher for a maximised
/// one.
#[test]
fn compare_says_which_direction_is_better() {
    let dir = tempfile::tempdir().unwrap();
    for (direction, want) in [
        ("minimize", "lower is better"),
        ("maximize", "higher is better"),
    ] {
        let spec = write(
            dir.path(),
            &format!("{direction}.toml"),
            &format!(
                "name = \"{direction}\"\nseed = 4\nruns = 1\niterations = 2\ninitial_points = 2\n[objective]\nkind = \"command\"\ncommand = [{:?}]\ndirection = \"{direction}\"\n{BRANIN_BOX}\n[federation]\nagents = 2\n[[algorithm]]\nkind = \"ts\"\n[[algorithm]]\nkind = \"ei\"\n",
                toy().display().to_string()
            ),
        );
        let out = dir.path().join(direction);
        fbo_ok("run", &spec, &out, &["--no-timing"]);
        let o = fbo_output([std::ffi::OsStr::new("compare"), out.as_os_str()]);
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains(want), "{direction}: {text}");
    }
}

/// Runs of one spec on several objectives pool into one paired comparison (units become
/// (input, run, agent)); `--units` keeps the listed (input, agent) units only; runs of
/// different algorithms do not pool.
#[test]
fn pooled_runs_and_chosen_units() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir_all(&a).unwrap();
    fs::create_dir_all(&b).unwrap();
    tiny_trace(&a);
    let text = fs::read_to_string(tiny_trace(&b)).unwrap();
    // b's B is 0.2 better at iteration 1 in every unit: B - A = (0.1, 0.3, -0.1).
    let shifted: String = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f[0] == "B" && f[3] == "1" {
                let v: f64 = f[10].parse::<f64>().unwrap() + 0.2;
                let mut g: Vec<String> = f.iter().map(|s| s.to_string()).collect();
                for k in [7, 8, 9, 10, 11] {
                    g[k] = format!("{v}");
                }
                g[12] = format!("{}", 1.0 - v);
                g.join(",")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    fs::write(b.join("trace.csv"), shifted).unwrap();
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let row = |args: &[&str]| -> Vec<String> {
        let o = fbo_output([&["compare", sa, "--at", "1", "--csv"][..], args].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8(o.stdout).unwrap();
        out.lines()
            .nth(1)
            .unwrap()
            .split(',')
            .map(String::from)
            .collect()
    };
    // Pooled: (-0.1, 0.1, -0.3, 0.1, 0.3, -0.1): n 6, mean 0.
    let r = row(&["--pool", sb]);
    assert_eq!((r[2].as_str(), r[4].as_str()), ("B", "6"));
    assert!(r[5].parse::<f64>().unwrap().abs() < 1e-12, "{r:?}");
    // Only b's agent 0: n 3, mean 0.1.
    let units = write(dir.path(), "units.csv", &format!("input,agent\n{sb},0\n"));
    let r = row(&["--pool", sb, "--units", units.to_str().unwrap()]);
    assert_eq!(r[4], "3");
    assert!((r[5].parse::<f64>().unwrap() - 0.1).abs() < 1e-12, "{r:?}");
    // Nothing listed, or other algorithms: refused with the reason.
    let none = write(dir.path(), "none.csv", "input,agent\nelsewhere,0\n");
    let o = fbo_output([
        "compare",
        sa,
        "--pool",
        sb,
        "--units",
        none.to_str().unwrap(),
    ]);
    assert_exit(&o, 2, "no unit of the inputs is listed");
    let c = dir.path().join("c");
    fs::create_dir_all(&c).unwrap();
    fs::write(
        c.join("trace.csv"),
        fs::read_to_string(a.join("trace.csv"))
            .unwrap()
            .replace("\nB,", "\nC,"),
    )
    .unwrap();
    let o = fbo_output(["compare", sa, "--pool", c.to_str().unwrap()]);
    assert_exit(&o, 2, "the algorithms or iterations differ");
}
