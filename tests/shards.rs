//! `fbo run --shard I/N`, `--merge` and `--status`: shards share an output folder, and the
//! merge of any number of them is the unsharded run, byte for byte.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{assert_exit, assert_says, fbo, fbo_ok, fbo_out, stderr, write};

/// A DP spec (trace, server and privacy files) with 2 algorithms x 3 runs = 6 units.
fn spec(dir: &Path) -> std::path::PathBuf {
    write(dir, "dp.toml", common::SMALL_DP)
}

const OUTPUTS: [&str; 4] = ["trace.csv", "summary.csv", "server.csv", "privacy.csv"];

fn same_outputs(a: &Path, b: &Path) {
    for f in OUTPUTS {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f} of {} differs from {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn any_number_of_shards_merges_to_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let full = dir.path().join("full");
    fbo_ok("run", &spec, &full, &["--no-timing"]);
    for n in [1usize, 3, 7] {
        let out = dir.path().join(format!("n{n}"));
        for i in 0..n {
            fbo_ok(
                "run",
                &spec,
                &out,
                &["--no-timing", "--shard", &format!("{i}/{n}")],
            );
            assert!(!out.join("trace.csv").exists(), "a shard does not merge");
        }
        let status = fbo_out("run", &spec, &out, &["--no-timing", "--status"]);
        assert!(
            String::from_utf8_lossy(&status.stdout).contains("6 done, 0 running, 0 missing"),
            "{}",
            String::from_utf8_lossy(&status.stdout)
        );
        fbo_ok("run", &spec, &out, &["--no-timing", "--merge"]);
        same_outputs(&out, &full);
        assert!(!out.join("parts").exists(), "parts are removed once merged");
    }
}

/// A privacy budget that stops the server early leaves server parts of fewer rounds: they
/// are whole, so the shards merge and a kill -9 costs only the unfinished units.
#[test]
fn shards_of_a_budgeted_run_merge_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::SMALL_DP.replace("clip = 3.0", "clip = 3.0\nmax_epsilon = 1.5");
    assert_ne!(text, common::SMALL_DP);
    let spec = write(dir.path(), "budget.toml", &text);
    let full = dir.path().join("full");
    let o = fbo_ok("run", &spec, &full, &["--no-timing"]);
    assert_says(&o, "its server stops after round");
    let out = dir.path().join("shards");
    common::run_every_shard("run", &spec, &out, 2);
    let status = fbo_out("run", &spec, &out, &["--no-timing", "--status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("6 done, 0 running, 0 missing"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    // A rerun of a shard finds its units whole: nothing recomputed, nothing set aside.
    let o = fbo_ok("run", &spec, &out, &["--no-timing", "--shard", "0/2"]);
    assert!(!stderr(&o).contains("damaged"), "{}", stderr(&o));
    assert!(!out.join("damaged-parts").exists());
    fbo_ok("run", &spec, &out, &["--no-timing", "--merge"]);
    same_outputs(&out, &full);
}

#[test]
fn merging_with_runs_missing_is_refused_with_the_list_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    fbo_ok("run", &spec, &out, &["--no-timing", "--shard", "1/2"]);
    let status = fbo_out("run", &spec, &out, &["--status"]);
    let text = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(text.contains("3 done, 0 running, 3 missing"), "{text}");
    // Shard 1 of 2 is the second half in (run, algorithm) order: seed 1's DP-FTS-DE and
    // seed 2's two algorithms.
    for m in ["TS run 0", "TS run 1", "DP-FTS-DE P=2 q=0.5 z=1 S=3 run 0"] {
        assert!(text.contains(&format!("missing: {m}\n")), "{m}: {text}");
    }
    let o = fbo_out("run", &spec, &out, &["--no-timing", "--merge"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot merge: 3 of 6 units (seed, algorithm) are missing")
            && stderr(&o).contains("TS run 0, TS run 1, DP-FTS-DE P=2 q=0.5 z=1 S=3 run 0 "),
        "{}",
        stderr(&o)
    );
    assert_eq!(common::finished_parts(&out.join("parts")), 3);
    // A merge (or a shard) with other options must not discard the shards' work.
    let o = fbo_out("run", &spec, &out, &["--merge"]);
    assert_exit(&o, 2, "made with other settings");
    assert_eq!(common::finished_parts(&out.join("parts")), 3);
    // An unsharded run computes the rest and merges.
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let full = dir.path().join("full");
    fbo_ok("run", &spec, &full, &["--no-timing"]);
    same_outputs(&out, &full);
}

#[test]
fn shards_run_at_once_and_a_killed_shard_loses_only_its_unfinished_units() {
    let dir = tempfile::tempdir().unwrap();
    // More units, each slower: 2 algorithms x 12 runs.
    let text = common::SMALL_DP
        .replace("runs = 3", "runs = 12")
        .replace("iterations = 8", "iterations = 25");
    let spec = write(dir.path(), "slow.toml", &text);
    let out = dir.path().join("out");
    let parts = out.join("parts");
    let shard = |i: usize| {
        fbo()
            .arg("run")
            .arg(&spec)
            .arg("--out")
            .arg(&out)
            .args(["--quiet", "--no-timing", "--threads", "1", "--shard"])
            .arg(format!("{i}/2"))
            .spawn()
            .unwrap()
    };
    // Shard 0 holds seeds 0-5, shard 1 seeds 6-11 (parts a00X-r0000S.csv).
    let saved = |first: bool| {
        std::fs::read_dir(&parts).map_or(0, |d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".csv"))
                .filter(|n| (n[6..11].parse::<usize>().unwrap() < 6) == first)
                .count()
        })
    };
    let mut first = shard(0);
    let start = Instant::now();
    while saved(true) < 1 {
        assert!(start.elapsed() < Duration::from_secs(120), "too slow");
        std::thread::sleep(Duration::from_millis(2));
    }
    // The other shard runs meanwhile, in the same folder.
    let mut second = shard(1);
    while saved(true) < 3 || saved(false) < 1 {
        assert!(start.elapsed() < Duration::from_secs(120), "too slow");
        std::thread::sleep(Duration::from_millis(2));
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    assert!(second.wait().unwrap().success());
    assert!(saved(true) < 12, "shard 0 was not killed midway");
    assert_eq!(saved(false), 12);
    let finished: Vec<(std::path::PathBuf, u64, i64)> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap();
            (p, m.ino(), m.mtime_nsec())
        })
        .collect();
    assert!(finished.len() >= 15, "{} saved", finished.len());
    // The rerun of the killed shard leaves every finished unit as it was.
    fbo_ok("run", &spec, &out, &["--no-timing", "--shard", "0/2"]);
    for (p, ino, mtime) in &finished {
        let m = std::fs::metadata(p).unwrap();
        assert_eq!(
            (m.ino(), m.mtime_nsec()),
            (*ino, *mtime),
            "{} rewritten",
            p.display()
        );
    }
    fbo_ok("run", &spec, &out, &["--no-timing", "--merge"]);
    let full = dir.path().join("full");
    fbo_ok("run", &spec, &full, &["--no-timing"]);
    same_outputs(&out, &full);
}

#[test]
fn shard_arguments_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    for bad in ["3/3", "1/0", "a/2", "2"] {
        let o = fbo_out("run", &spec, &out, &["--shard", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("expected I/N"), "{bad}: {}", stderr(&o));
    }
    assert!(!out.exists(), "nothing written");
}

/// A sweep of 4 points x 2 runs x 2 algorithms = 16 units, 6 of them TS's at the points after
/// the first (the swept server keys do not reach TS: the merge copies them).
fn sweep(dir: &Path) -> std::path::PathBuf {
    let text = format!(
        "{}\n[sweep]\n\"server.q\" = [0.25, 0.5]\n\"server.z\" = [1.0, 2.0]\n",
        common::SMALL_DP
    )
    .replace("runs = 3", "runs = 2");
    write(dir, "sw.toml", &text)
}

#[test]
fn a_sharded_sweep_merges_to_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sweep(dir.path());
    let full = dir.path().join("full");
    fbo_ok("sweep", &spec, &full, &["--no-timing"]);
    let want = std::fs::read(full.join("sweep.csv")).unwrap();
    for n in [1usize, 3, 7] {
        let out = dir.path().join(format!("n{n}"));
        common::run_every_shard("sweep", &spec, &out, n);
        assert!(!out.join("sweep.csv").exists(), "a shard does not merge");
        let st = fbo_out("sweep", &spec, &out, &["--no-timing", "--status"]);
        let text = String::from_utf8_lossy(&st.stdout).into_owned();
        assert!(
            text.contains(
                "4 points; units (seed, algorithm): 10 done, 0 running, 0 missing, 6 copied by the merge"
            ),
            "{text}"
        );
        fbo_ok("sweep", &spec, &out, &["--no-timing", "--merge"]);
        assert!(
            std::fs::read(out.join("sweep.csv")).unwrap() == want,
            "{n} shards: sweep.csv differs"
        );
        for p in ["p000", "p003"] {
            same_outputs(&out.join("points").join(p), &full.join("points").join(p));
        }
    }
    // Merging with a shard missing names the points and runs.
    let out = dir.path().join("half");
    fbo_ok("sweep", &spec, &out, &["--no-timing", "--shard", "0/2"]);
    let o = fbo_out("sweep", &spec, &out, &["--no-timing", "--merge"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("cannot merge the sweep: 2 of 4 points have units missing"),
        "{err}"
    );
    // TS's units there come from p000 (merged first); DP-FTS-DE's are missing.
    assert!(err.contains("p002: 2 of 4 units missing (DP-FTS"), "{err}");
    assert!(!err.contains("TS run"), "{err}");
    assert!(!out.join("sweep.csv").exists());
}

/// `output.beliefs`: beliefs.csv holds the model behind every model-chosen query (none for
/// random search), as it was when it chose: fixed hyperparameters as set; fitted ones from the
/// first refit on (5 observations: iteration 2 here), unchanged until the next (10:
/// iteration 7). Shards and their merge write the unsharded file byte for byte.
#[test]
fn beliefs_are_the_models_in_use_and_merge_from_shards() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
name = "beliefs"
seed = 5
runs = 3
iterations = 8
initial_points = 4
[objective]
kind = "function"
function = "hartmann3"
noise_var = 0.01
[federation]
agents = 1
[surrogate.own]
ard = true
[output]
beliefs = true
[[algorithm]]
kind = "ts"
[[algorithm]]
kind = "random"
[[algorithm]]
kind = "ei"
ei = "log"
"#;
    let spec = write(dir.path(), "b.toml", text);
    let full = dir.path().join("full");
    fbo_ok("run", &spec, &full, &["--no-timing"]);
    let mut rdr = csv::Reader::from_path(full.join("beliefs.csv")).unwrap();
    let head: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        head.join(","),
        "algorithm,run,agent,iteration,kernel,length_scales,mean,signal_var,noise_var,ls_u0,ls_u1,ls_u2"
    );
    let rows: Vec<Vec<String>> = rdr
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    let of = |alg: &str| -> Vec<&Vec<String>> { rows.iter().filter(|r| r[0] == alg).collect() };
    assert!(of("Random").is_empty(), "random search has no model");
    assert_eq!(of("TS").len(), 3 * 8);
    assert_eq!(of("EI").len(), 3 * 8);
    // Fixed hyperparameters are written as set.
    let fixed = text.replace(
        "ard = true",
        "fit = false\nlength_scale = 0.3\nsignal_variance = 2.0\nnoise_variance = 0.05\nmean = \"zero\"",
    );
    let fixed_spec = write(dir.path(), "fixed.toml", &fixed);
    fbo_ok(
        "run",
        &fixed_spec,
        &dir.path().join("fixed"),
        &["--no-timing"],
    );
    let mut rdr = csv::Reader::from_path(dir.path().join("fixed/beliefs.csv")).unwrap();
    for r in rdr.records() {
        let r = r.unwrap();
        assert_eq!(
            &r.iter().skip(5).collect::<Vec<_>>(),
            &["1", "0", "2", "0.05", "0.3", "0.3", "0.3"],
            "{r:?}"
        );
    }
    for run in ["0", "1", "2"] {
        let ts: Vec<&Vec<String>> = of("TS").into_iter().filter(|r| r[1] == run).collect();
        let its: Vec<&str> = ts.iter().map(|r| r[3].as_str()).collect();
        assert_eq!(its, ["1", "2", "3", "4", "5", "6", "7", "8"]);
        assert_eq!(
            ts[0][5], "1",
            "before the first fit: the initial length scale"
        );
        assert_eq!(ts[1][5], "3", "fitted per axis from 5 observations");
        // The profiled constant mean moves with the data; the rest stays until a refit.
        for row in &ts[2..6] {
            assert_eq!(
                row[7..],
                ts[1][7..],
                "no refit between 5 and 10 observations"
            );
        }
        assert_ne!(ts[6][7..], ts[1][7..], "refitted at 10 observations");
    }
    let out = dir.path().join("sharded");
    common::run_every_shard("run", &spec, &out, 2);
    fbo_ok("run", &spec, &out, &["--no-timing", "--merge"]);
    assert!(
        std::fs::read(out.join("beliefs.csv")).unwrap()
            == std::fs::read(full.join("beliefs.csv")).unwrap()
    );
}
