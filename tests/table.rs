//! Tables end to end: tabulate a small landmine grid, then run on it.

mod common;
use common::*;
use std::fs;
use std::path::Path;

fn tabulate(dir: &Path, grid: usize) -> std::path::PathBuf {
    let cfg = write(
        dir,
        "tab.toml",
        &format!("dataset = \"landmine\"\ngrid = {grid}\nsplit_seed = 0\n"),
    );
    let out = dir.join("table");
    fbo_ok(
        "tabulate",
        &cfg,
        &out,
        &["--data", landmine_csv().to_str().unwrap()],
    );
    out
}

#[test]
fn tabulate_writes_a_complete_checked_table_with_its_split() {
    let dir = tempfile::tempdir().unwrap();
    let out = tabulate(dir.path(), 3);
    let table = fs::read_to_string(out.join("table.csv")).unwrap();
    assert_eq!(table.lines().count(), 1 + 29 * 9);
    assert!(table.starts_with("agent,point,x0,x1,C,gamma,metric,train_seconds\n"));
    for line in table.lines().skip(1) {
        let auc: f64 = line.split(',').nth(6).unwrap().parse().unwrap();
        assert!((0.0..=1.0).contains(&auc));
    }
    let meta = fs::read_to_string(out.join("table.toml")).unwrap();
    assert!(meta.contains("source_sha256 = \"394720fa"));
    assert!(meta.contains("direction = \"maximize\""));
    let split = fs::read_to_string(out.join("split.csv")).unwrap();
    assert_eq!(
        split.lines().count(),
        1 + 14820,
        "every raw row is assigned"
    );
    assert!(!out.join("parts").exists());
    // Deterministic: a second build gives the same metrics (only timings differ).
    let first: Vec<String> = table
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect();
    let again = tabulate(dir.path(), 3);
    let second: Vec<String> = fs::read_to_string(again.join("table.csv"))
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect();
    assert_eq!(first, second);
}

#[test]
fn runs_on_a_table_report_the_metric_in_its_own_units() {
    let dir = tempfile::tempdir().unwrap();
    let table = tabulate(dir.path(), 4);
    let spec = format!(
        r#"
name = "t"
runs = 2
iterations = 6
initial_points = 3
[objective]
kind = "table"
table = "{}"
agents = [0, 1, 2, 3, 4, 5]
targets = [0, 2]
[surrogate]
features = 20
[surrogate.own]
features = 30
[federation]
observations = 4
observations_from = "ts"
p_t = 0.3
[server]
subregions = 4
[[algorithm]]
kind = "ts"
[[algorithm]]
kind = "fts"
[[algorithm]]
kind = "dp-fts-de"
"#,
        table.join("table.toml").display()
    );
    let p = write(dir.path(), "spec.toml", &spec);
    let out = dir.path().join("o");
    fbo_ok("run", &p, &out, &[]);
    let trace = Csv::read(&out.join("trace.csv"));
    let mut agents = std::collections::BTreeMap::<&str, std::collections::BTreeSet<usize>>::new();
    for r in trace.records() {
        let (f, m) = (r.num("f"), r.num("metric"));
        assert_eq!(f, m, "AUC is maximised: metric = f");
        assert!((0.0..=1.0).contains(&m));
        agents
            .entry(r.get("algorithm"))
            .or_default()
            .insert(r.get("agent").parse().unwrap());
    }
    assert_eq!(agents["TS"], [0, 2].into());
    assert_eq!(agents["FTS M=20"], [0, 2].into());
    assert_eq!(agents["FTS-DE P=4"], (0..6).collect());
}

#[test]
fn table_specs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let table = tabulate(dir.path(), 3);
    let base = format!(
        "[objective]\nkind = \"table\"\ntable = \"{}\"\n[[algorithm]]\nkind = \"ts\"\n",
        table.join("table.toml").display()
    );
    for (extra, expect) in [
        ("agents = [0, 40]\n", "agent 40 is not in the table"),
        (
            "targets = [7]\nagents = [0, 1]\n",
            "key `objective.targets`: target 7 is not one of the 2 agents",
        ),
        (
            "grid = 10\n",
            "key `objective.grid`: does not apply to kind = \"table\"",
        ),
    ] {
        let p = write(
            dir.path(),
            "s.toml",
            &base.replace("kind = \"table\"\n", &format!("kind = \"table\"\n{extra}")),
        );
        let o = validate(&p);
        assert_eq!(o.status.code(), Some(2), "{extra}");
        assert!(
            stderr(&o).contains(expect),
            "expected {expect:?} in {}",
            stderr(&o)
        );
    }
    let p = write(
        dir.path(),
        "s.toml",
        &base.replace(
            &table.join("table.toml").display().to_string(),
            "missing/table.toml",
        ),
    );
    let o = validate(&p);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot read the table description"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn emnist_tabulation_keeps_the_source_split() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "tab.toml",
        "dataset = \"emnist\"\ngrid = 2\nepochs = 1\nbatch_size = 50\n",
    );
    let out = dir.path().join("table");
    let data = raw_data("emnist");
    fbo_ok("tabulate", &cfg, &out, &["--data", data.to_str().unwrap()]);
    let table = fs::read_to_string(out.join("table.csv")).unwrap();
    assert!(
        table.starts_with("agent,point,x0,x1,x2,learning_rate,lr_decay,l2,metric,train_seconds\n")
    );
    assert_eq!(table.lines().count(), 1 + 50 * 8);
    let mut frozen = Vec::new();
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let err: f64 = f[8].parse().unwrap();
        assert!((0.0..=1.0).contains(&err));
        if f[5] == "0.0000001" || f[5] == "1e-7" {
            frozen.push(err);
        }
    }
    // lr = 1e-7 for one epoch leaves the network at its random start: chance-level error.
    let mean = frozen.iter().sum::<f64>() / frozen.len() as f64;
    assert_eq!(frozen.len(), 50 * 4);
    assert!(mean > 0.7, "mean error at lr 1e-7: {mean}");
    // The source's split, image by image: 5188 training and 576 validation images.
    let split = fs::read_to_string(out.join("split.csv")).unwrap();
    let count = |set: &str| split.lines().filter(|l| l.ends_with(set)).count();
    assert_eq!((count(",train"), count(",valid")), (5188, 576));
    assert!(split.lines().nth(1).unwrap() == "0,0,train");
    let meta = fs::read_to_string(out.join("table.toml")).unwrap();
    assert!(meta.contains("direction = \"minimize\""));
    assert!(meta.contains("source's own per-writer train / val split"));
}

#[test]
fn tabulation_configs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expect) in [
        (
            "dataset = \"mnist\"\n",
            "unknown dataset \"mnist\"; allowed: \"landmine\", \"har\", \"emnist\"",
        ),
        (
            "dataset = \"landmine\"\nbatch_size = 10\n",
            "key `batch_size`: only the emnist dataset has a fixed batch size",
        ),
        (
            "dataset = \"emnist\"\nbatch_size = 0\n",
            "key `batch_size`: must be an integer in [1, 100000], got 0",
        ),
        (
            "dataset = \"emnist\"\ngrid = 1\n",
            "key `grid`: must be an integer in [2, 4096], got 1",
        ),
    ] {
        let p = write(dir.path(), "tab.toml", text);
        let o = validate(&p);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(
            stderr(&o).contains(expect),
            "expected {expect:?} in {}",
            stderr(&o)
        );
    }
}

/// `fbo tabulate` with `metric = "platt-auc"` and a live model objective on the same grid
/// evaluate one function: every table entry equals the live evaluation at that grid point.
#[test]
fn a_platt_table_equals_the_live_model_on_its_grid() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "tab.toml",
        "dataset = \"landmine\"\ngrid = 2\nsplit_seed = 0\nmetric = \"platt-auc\"\n",
    );
    let out = dir.path().join("table");
    fbo_ok(
        "tabulate",
        &cfg,
        &out,
        &["--data", landmine_csv().to_str().unwrap()],
    );
    let meta = fs::read_to_string(out.join("table.toml")).unwrap();
    assert!(meta.contains("metric = \"platt_auc\""), "{meta}");
    let spec = write(
        dir.path(),
        "live.toml",
        &format!(
            "runs = 1\niterations = 1\n[objective]\nkind = \"model\"\ndataset = \"landmine\"\ndata = \"{}\"\nmetric = \"platt-auc\"\ngrid = 2\nagents = [0, 11, 28]\n[[algorithm]]\nkind = \"ts\"\n",
            landmine_csv().display()
        ),
    );
    let spec = fbo::spec::Spec::load(&spec).unwrap();
    let live = spec.landscapes().unwrap().remove(0);
    let grid = live.grid().unwrap();
    let table = fs::read_to_string(out.join("table.csv")).unwrap();
    let mut checked = 0;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (agent, point): (usize, usize) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let Some(slot) = [0, 11, 28].iter().position(|&a| a == agent) else {
            continue;
        };
        let want: f64 = f[6].parse().unwrap();
        assert_eq!(
            live.value(
                &fbo::objective::Request::new("test", 0, slot, 0),
                &grid.at(point)
            )
            .unwrap(),
            want,
            "agent {agent} point {point}"
        );
        checked += 1;
    }
    assert_eq!(checked, 12);
}

/// The fenced blocks of a Markdown file tagged `lang`, in order.
fn blocks(md: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in md.lines() {
        match &mut cur {
            None if line.trim() == format!("```{lang}") => cur = Some(String::new()),
            Some(b) if line.trim() == "```" => {
                out.push(std::mem::take(b));
                cur = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn the_documented_table_format_runs_as_written() {
    let md =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tables.md")).unwrap();
    let toml = blocks(&md, "toml");
    let csv = blocks(&md, "csv");
    assert_eq!(
        (toml.len(), csv.len()),
        (2, 1),
        "docs/tables.md changed shape"
    );
    let dir = tempfile::tempdir().unwrap();
    let tdir = dir.path().join("tables/my-assay");
    fs::create_dir_all(&tdir).unwrap();
    fs::write(tdir.join("table.toml"), &toml[0]).unwrap();
    fs::write(tdir.join("table.csv"), &csv[0]).unwrap();
    let spec = write(dir.path(), "spec.toml", &toml[1]);
    let v = validate(&spec);
    assert!(v.status.success(), "{}", stderr(&v));
    let out = dir.path().join("o");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let trace = fs::read_to_string(out.join("trace.csv")).unwrap();
    // The raw hyperparameter and the table's own metric come back in the trace.
    assert!(
        trace.lines().next().unwrap().contains(",temperature,"),
        "{trace}"
    );
    assert!(
        trace.contains(",0.74,") || trace.contains(",0.61,"),
        "{trace}"
    );
}

#[test]
fn a_sharded_tabulation_merges_to_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let full = tabulate(dir.path(), 3);
    let cfg = dir.path().join("tab.toml");
    let data = landmine_csv();
    let out = dir.path().join("sharded");
    let tab = |extra: &[&str]| {
        fbo_out(
            "tabulate",
            &cfg,
            &out,
            &[&["--data", data.to_str().unwrap()], extra].concat(),
        )
    };
    for i in 0..4 {
        let o = tab(&["--shard", &format!("{i}/4")]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(!out.join("table.csv").exists(), "a shard builds no table");
    let o = tab(&["--merge"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Everything but the measured training seconds (the last column).
    let cut = |p: &Path| -> Vec<String> {
        fs::read_to_string(p.join("table.csv"))
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect()
    };
    assert_eq!(cut(&out), cut(&full));
    assert_eq!(
        fs::read(out.join("split.csv")).unwrap(),
        fs::read(full.join("split.csv")).unwrap()
    );
    // A merge with agents missing is refused and names them.
    let half = dir.path().join("half");
    let o = fbo_out(
        "tabulate",
        &cfg,
        &half,
        &["--data", data.to_str().unwrap(), "--shard", "0/2"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fbo_out(
        "tabulate",
        &cfg,
        &half,
        &["--data", data.to_str().unwrap(), "--merge"],
    );
    assert_exit(&o, 1, "cannot merge: 15 of 29 agents are missing");
}
