//! `fbo sweep`: expansion, outputs, resume, errors.

mod common;
use common::*;
use std::fs;

fn sweep_spec(table: &str) -> String {
    format!("{SMALL_DP}\n[sweep]\n{table}\n").replace("runs = 3", "runs = 2")
}

#[test]
fn product_sweep_writes_one_row_per_point_and_algorithm_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "sw.toml",
        &sweep_spec("\"server.q\" = [0.25, 0.5]\n\"server.z\" = [1.0, 2.0]"),
    );
    let out = dir.path().join("o");
    fbo_ok("sweep", &p, &out, &[]);
    let csv = fs::read_to_string(out.join("sweep.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("point,server.q,server.z,algorithm,runs,mean_best_metric"));
    assert_eq!(rows.len(), 1 + 4 * 2, "{csv}");
    // Privacy: larger z, smaller epsilon at the same q; larger q, larger epsilon.
    let sweep = Csv::read(&out.join("sweep.csv"));
    let eps = |q: &str, z: &str| -> f64 {
        sweep
            .records()
            .find(|r| {
                r.get("server.q") == q
                    && r.get("server.z") == z
                    && r.get("algorithm").starts_with("DP-FTS-DE")
            })
            .unwrap_or_else(|| panic!("no row for q={q} z={z}"))
            .num("epsilon_rdp_int")
    };
    assert!(eps("0.25", "2.0") < eps("0.25", "1.0"));
    assert!(eps("0.5", "1.0") > eps("0.25", "1.0"));
    // Rerun: every point is skipped and sweep.csv is rewritten identically (timing aside).
    let o = fbo_output([
        "sweep".as_ref(),
        p.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(o.status.success());
    assert_says(&o, "skipped 4 of 4 points");
    assert_eq!(fs::read_to_string(out.join("sweep.csv")).unwrap(), csv);
}

#[test]
fn explicit_points_and_algorithm_paths() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "sw.toml",
        &sweep_spec(
            "points = [{ \"algorithm[1].server.clip\" = 1.0 }, { \"algorithm[1].server.clip\" = 100.0 }]",
        ),
    );
    let out = dir.path().join("o");
    fbo_ok("sweep", &p, &out, &[]);
    let clipped: Vec<f64> = Csv::read(&out.join("sweep.csv"))
        .records()
        .filter(|r| r.get("algorithm").contains("DP-FTS-DE"))
        .map(|r| r.num("clipped_fraction"))
        .collect();
    assert_eq!(clipped.len(), 2);
    assert!(
        clipped[0] > clipped[1],
        "a smaller S clips more: {clipped:?}"
    );
}

#[test]
fn bad_sweeps_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    for (table, expect) in [
        (
            "\"server.q\" = [0.5, 1.5]",
            "must be a sampling rate in (0, 1], got 1.5 (in sweep point p001: server.q = 1.5)",
        ),
        ("\"algorithm[9].server.q\" = [0.5]", "has 2 entries, no [9]"),
        ("\"server.q\" = []", "must be a non-empty list"),
        ("\"surrogate.featurez\" = [10]", "unknown field `featurez`"),
    ] {
        let p = write(dir.path(), "sw.toml", &sweep_spec(table));
        let out = dir.path().join("o");
        let o = fbo_output([
            "sweep".as_ref(),
            p.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{table}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(expect),
            "{table}: expected {expect:?} in {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{table}: nothing may be written");
    }
}

/// A swept key that every algorithm overrides reaches no experiment: refused before anything
/// runs, instead of nine identical points read as "no privacy-utility trade-off".
#[test]
fn a_sweep_whose_points_are_identical_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = sweep_spec("\"server.q\" = [0.25, 0.5]").replace(
        "kind = \"dp-fts-de\"",
        "kind = \"dp-fts-de\"\nserver = { dp = true, q = 0.3 }",
    );
    let p = write(dir.path(), "shadowed.toml", &text);
    let o = validate(&p);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sweep") && err.contains("same experiment") && err.contains("p001"),
        "{err}"
    );
    let out = dir.path().join("o");
    let o = fbo_output([
        "sweep".as_ref(),
        p.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
}

#[test]
fn a_sweep_without_timing_is_byte_identical_across_threads_and_leaves_no_stale_points() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "sw.toml",
        &sweep_spec("\"server.q\" = [0.25, 0.5, 0.75]"),
    );
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fbo_ok("sweep", &p, &a, &["--no-timing", "--threads", "1"]);
    fbo_ok("sweep", &p, &b, &["--no-timing", "--threads", "2"]);
    let csv = fs::read(a.join("sweep.csv")).unwrap();
    assert_eq!(csv, fs::read(b.join("sweep.csv")).unwrap());
    let walls = Csv::read(&a.join("sweep.csv"));
    assert!(
        walls.column("wall_s").iter().all(|w| w.is_empty()),
        "{:?}",
        walls.rows
    );
    // The same sweep file, edited to fewer points: the dropped point's folder goes.
    fs::write(&p, sweep_spec("\"server.q\" = [0.25, 0.5]")).unwrap();
    fbo_ok("sweep", &p, &a, &["--no-timing"]);
    assert!(a.join("points/p001").exists() && !a.join("points/p002").exists());
    // A copy of fbo's spec.toml beside the sweep is runnable.
    let v = validate(&a.join("spec.toml"));
    assert!(v.status.success(), "{}", stderr(&v));
}

/// A command objective (every evaluation counted through TOY_COUNT) swept over `server.z`,
/// which reaches DP-FTS-DE and not TS.
fn z_sweep(dir: &std::path::Path) -> std::path::PathBuf {
    write(
        dir,
        "z.toml",
        &format!(
            r#"name = "z"
seed = 2
runs = 2
iterations = 3
initial_points = 2

[objective]
kind = "command"
command = [{:?}]
direction = "maximize"
{BRANIN_BOX}
[federation]
agents = 2

[server]
subregions = 1
dp = true
q = 1.0
z = 1.0

[[algorithm]]
kind = "ts"

[[algorithm]]
kind = "dp-fts-de"

[sweep]
"server.z" = [1.0, 2.0, 4.0]
"#,
            toy().display().to_string()
        ),
    )
}

#[test]
fn an_algorithm_the_swept_keys_do_not_reach_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = z_sweep(dir.path());
    let out = dir.path().join("out");
    let count = dir.path().join("count");
    let o = fbo()
        .arg("sweep")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--no-timing"])
        .env("TOY_COUNT", &count)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let journal = |p: &str| -> Vec<String> {
        fs::read_to_string(out.join("points").join(p).join("evaluations.jsonl"))
            .unwrap_or_default()
            .lines()
            .skip(1)
            .map(String::from)
            .collect()
    };
    let (first, later) = (journal("p000"), [journal("p001"), journal("p002")]);
    // The later points evaluate only DP-FTS's queries: TS's runs are copied from the first
    // point. (DP-FTS has one sub-region, the whole space, so its initial points are the ones
    // TS draws, under the shared scope "init": measured once per point's journal.)
    for j in &later {
        assert!(!j.is_empty());
        assert!(
            j.iter()
                .all(|l| l.contains("DP-FTS") || l.contains("\"scope\":\"init\"")),
            "{j:?}"
        );
        assert!(j.iter().all(|l| !l.contains("\"scope\":\"TS\"")), "{j:?}");
    }
    let started = fs::read_to_string(&count).unwrap().lines().count();
    assert_eq!(started, first.len() + later[0].len() + later[1].len());
    assert!(first.iter().any(|l| l.contains("\"scope\":\"TS\"")));
    // And TS's rows are the first point's, byte for byte.
    let ts = |p: &str| -> Vec<String> {
        fs::read_to_string(out.join("points").join(p).join("trace.csv"))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("TS,"))
            .map(String::from)
            .collect()
    };
    assert_eq!(ts("p000").len(), 2 * 2 * (2 + 3));
    assert_eq!(ts("p001"), ts("p000"));
    assert_eq!(ts("p002"), ts("p000"));
    // compare leaves TS out (no zero differences in Holm's correction) and says why.
    let o = fbo().arg("compare").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: TS gives the same results at every point"));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(!table.lines().any(|l| l.contains(": TS ")), "{table}");
    assert!(table.contains("DP-FTS"), "{table}");
}

#[test]
fn shards_of_a_sweep_compute_an_unreached_algorithm_once_and_the_merge_copies_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = z_sweep(dir.path());
    let sweep = |out: &std::path::Path, count: &std::path::Path, extra: &[&str]| {
        let o = fbo()
            .arg("sweep")
            .arg(&spec)
            .arg("--out")
            .arg(out)
            .args(["--quiet", "--no-timing"])
            .args(extra)
            .env("TOY_COUNT", count)
            .output()
            .unwrap();
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let started = |count: &std::path::Path| {
        fs::read_to_string(count)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    let (c_whole, c_sharded) = (dir.path().join("c-whole"), dir.path().join("c-sharded"));
    sweep(&whole, &c_whole, &[]);
    // 3 points x 2 runs x 2 algorithms in 3 shards: one a point. The shards of the later
    // points compute only DP-FTS-DE; their TS units are left to the merge.
    for i in 0..3 {
        sweep(&sharded, &c_sharded, &["--shard", &format!("{i}/3")]);
    }
    let status = sweep(&sharded, &c_sharded, &["--status"]);
    assert!(
        status
            .lines()
            .next()
            .unwrap()
            .contains("8 done, 0 running, 0 missing, 4 copied by the merge"),
        "{status}"
    );
    assert!(status.contains("p001: 2 done, 0 running, 0 missing, 2 copied by the merge"));
    // Each evaluation is made once: as many as the unsharded sweep, which runs TS once.
    assert_eq!(started(&c_sharded), started(&c_whole));
    for p in ["p001", "p002"] {
        let journals = fs::read_dir(sharded.join("points").join(p))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
            .map(|f| fs::read_to_string(f).unwrap())
            .collect::<String>();
        assert!(journals.contains("DP-FTS"), "{p}: {journals}");
        assert!(!journals.contains("\"scope\":\"TS\""), "{p}: {journals}");
    }
    // The merge copies TS's runs and makes no evaluation; the results are the unsharded
    // sweep's, byte for byte.
    sweep(&sharded, &c_sharded, &["--merge"]);
    assert_eq!(started(&c_sharded), started(&c_whole));
    assert_eq!(
        fs::read_to_string(sharded.join("sweep.csv")).unwrap(),
        fs::read_to_string(whole.join("sweep.csv")).unwrap()
    );
    for p in ["p000", "p001", "p002"] {
        let trace = |d: &std::path::Path| {
            fs::read_to_string(d.join("points").join(p).join("trace.csv")).unwrap()
        };
        assert_eq!(trace(&sharded), trace(&whole), "{p}");
    }
}

/// `[sweep] select`: the privacy cost of running a random number of candidates (mean 10,
/// geometric) drawn from the sweep's points and keeping the best, beside one run's and all
/// points' composed. Golden values from dp-accounting 0.6.0 (pip install dp-accounting==0.6.0):
/// RdpAccountant(orders 2..=256, REPLACE_ONE) of SelfComposedDpEvent(
/// SampledWithoutReplacementDpEvent(12, 6, GaussianDpEvent(z / 2)), 8) at delta = 12^-1.1 (fbo's
/// replace-one sensitivity is 2S, dp-accounting's 1), wrapped in RepeatAndSelectDpEvent(.., 10,
/// 1) for the selection at the costliest point (z = 0.8), and the three points composed.
#[test]
fn a_selection_over_the_points_states_its_privacy_cost() {
    let dir = tempfile::tempdir().unwrap();
    let text = sweep_spec("\"server.z\" = [0.8, 1.0, 1.5]\nselect = { mean = 10, shape = 1 }")
        .replace("clip = 3.0", "clip = 3.0\nsampling = \"fixed\"")
        .replace("runs = 2", "runs = 1");
    let p = write(dir.path(), "sw.toml", &text);
    let out = dir.path().join("o");
    fbo_ok("sweep", &p, &out, &[]);
    let csv = fs::read_to_string(out.join("selection.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0],
        "algorithm,label,points,against,delta,mean_candidates,shape,epsilon_one_run_max,epsilon_all_points,epsilon_select"
            .split(',')
            .collect::<Vec<_>>()
    );
    assert_eq!(rows.len(), 2, "only the private algorithm: {csv}");
    assert_eq!(
        (rows[1][0], rows[1][2], rows[1][3]),
        ("1", "3", "outsiders")
    );
    for (col, want) in [
        (7, 45.83275330192802),
        (8, 83.58199795281666),
        (9, 94.92357383619722),
    ] {
        let got: f64 = rows[1][col].parse().unwrap();
        assert!(
            (got - want).abs() < 1e-9 * want,
            "column {col}: {got} vs {want}"
        );
    }
}

#[test]
fn a_selection_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (table, expect) in [
        (
            "\"server.z\" = [1.0, 2.0]\nselect = { mean = 0.5 }",
            "key `sweep.select`: mean must be in [1, 1e9]",
        ),
        (
            "\"server.z\" = [1.0, 2.0]\nselect = { mean = 5, shape = -1 }",
            "key `sweep.select`: shape must be in [0, 100]",
        ),
        (
            "\"server.z\" = [1.0, 2.0]\nselect = { mean = 5, k = 2 }",
            "key `sweep.select`: unknown key \"k\"",
        ),
        (
            "\"server.z\" = [1.0, 2.0]\nselect = 3",
            "key `sweep.select`: must be a table",
        ),
    ] {
        let p = write(dir.path(), "sw.toml", &sweep_spec(table));
        let o = fbo_out("sweep", &p, &dir.path().join("o"), &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{table}: {err}");
        assert!(err.contains(expect), "{table}: {err}");
    }
}
