//! Heart disease at its four hospitals as a live objective (issue 39): the reader's counts
//! against the data's README, the encoding fitted on each site's training half, and a run of
//! the committed config.

mod common;
use common::*;
use fbo::data::heart;
use fbo::federation::{Federation, Site};
use std::path::Path;

#[test]
fn four_hospitals_with_their_sizes_and_prevalence() {
    let (sites, _) = heart::read(&raw_data("heart")).unwrap();
    let counts: Vec<(usize, usize)> = sites
        .iter()
        .map(|s| (s.labels.len(), s.labels.iter().sum()))
        .collect();
    // data/raw/heart/README.md: 303, 294, 123, 200 patients; num > 0 in 139, 106, 115, 149.
    assert_eq!(counts, [(303, 139), (294, 106), (123, 115), (200, 149)]);
    // Switzerland writes every cholesterol as 0: read as missing, then filled with 0 (no
    // observed training value) and standardised to 0, with its missingness column constant.
    let sw = &sites[2];
    assert!(sw.raw.iter().all(|r| r[4].is_nan()));
    let tr: Vec<usize> = (0..60).collect();
    let va: Vec<usize> = (60..123).collect();
    let e = heart::encode(sw, &tr, &va);
    assert_eq!(e.x_train.ncols(), heart::FEATURES);
    assert!(e.x_train.column(2).iter().all(|&v| v == 0.0));
    assert!(e.x_valid.iter().all(|v| v.is_finite()));
}

#[test]
fn a_truncated_site_file_is_refused_by_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    for (f, _) in heart::SITES {
        std::fs::copy(
            raw_data(&format!("heart/{f}.gz")),
            dir.path().join(format!("{f}.gz")),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("processed.va.data"),
        "63,1,4,140,260,0,1,112,1,3,2,?,?,2\n",
    )
    .unwrap();
    let e = heart::read(dir.path()).err().unwrap().to_string();
    assert!(
        e.contains("processed.va.data") && e.contains("sha256"),
        "{e}"
    );
}

/// A hospital's machine holds its own file only: its agent evaluates, another is refused
/// with a message saying where to evaluate it.
#[test]
fn a_site_with_only_its_own_file_evaluates_its_own_agent() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("heart");
    std::fs::create_dir(&data).unwrap();
    std::fs::copy(
        raw_data("heart/processed.hungarian.data.gz"),
        data.join("processed.hungarian.data.gz"),
    )
    .unwrap();
    let (sites, _) = heart::read(&data).unwrap();
    assert_eq!(
        sites.iter().map(|s| s.present).collect::<Vec<_>>(),
        [false, true, false, false]
    );
    let spec = |agents: &str| {
        write(
            dir.path(),
            "spec.toml",
            &format!(
                "name = \"site\"\nseed = 1\nruns = 1\niterations = 2\ninitial_points = 2\n\
                 [objective]\nkind = \"model\"\ndataset = \"heart\"\ndata = \"heart\"\nagents = [{agents}]\n\
                 [[algorithm]]\nkind = \"ts\"\n"
            ),
        )
    };
    fbo_ok("run", &spec("1"), &dir.path().join("ok"), &[]);
    let o = fbo_out("run", &spec("0"), &dir.path().join("no"), &[]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("agent 0's data are not on this machine"),
        "{err}"
    );
}

#[test]
fn the_heart_config_runs_every_hospital() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/heart.toml");
    let out = dir.path().join("heart");
    fbo_ok("run", &spec, &out, &["--runs", "2", "--no-timing"]);
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let rows = Csv::read(&out.join("trace.csv"));
    let mut agents = std::collections::BTreeSet::new();
    for r in rows.records() {
        agents.insert(r.get("agent"));
        let auc = r.num("metric");
        assert!((0.0..=1.0).contains(&auc), "{:?}", r.fields);
        assert!(
            ["none", "balanced"].contains(&r.get("class_weight")),
            "{:?}",
            r.fields
        );
    }
    assert_eq!(agents.len(), 4);
    // Live training is deterministic: a second run gives the same trace.
    let again = dir.path().join("again");
    fbo_ok("run", &spec, &again, &["--runs", "2", "--no-timing"]);
    assert_eq!(
        trace,
        std::fs::read_to_string(again.join("trace.csv")).unwrap()
    );
}

/// The Flower walk-through's set-up in one process: a server holding no patient at all, and
/// four hospitals each holding its own file and the same spec text, give `fbo run`'s bytes.
#[test]
fn hospitals_with_their_own_files_federate_to_the_simulations_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text = "name = \"heart-fed\"\nseed = 4\nruns = 2\niterations = 3\ninitial_points = 2\n\
                [objective]\nkind = \"model\"\ndataset = \"heart\"\ndata = \"heart\"\n\
                [[algorithm]]\nkind = \"ts\"\n\
                [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"FTS\"\nserver = { subregions = 1, init = \"domain\" }\n";
    let machine = |name: &str, files: &[&str]| {
        let m = dir.path().join(name);
        std::fs::create_dir_all(m.join("heart")).unwrap();
        for f in files {
            let gz = format!("{f}.gz");
            std::fs::copy(raw_data(&format!("heart/{gz}")), m.join("heart").join(&gz)).unwrap();
        }
        write(&m, "spec.toml", text)
    };
    let all: Vec<&str> = heart::SITES.iter().map(|s| s.0).collect();
    let sim_spec = machine("sim", &all);
    let sim = dir.path().join("sim-out");
    fbo_ok("run", &sim_spec, &sim, &["--no-timing"]);

    let server_spec = machine("server", &[]);
    let site_specs: Vec<_> = (0..4)
        .map(|a| machine(&format!("site{a}"), &[heart::SITES[a].0]))
        .collect();
    let out = dir.path().join("fed-out");
    let fed = Federation::open(&server_spec, &out, false).unwrap();
    let mut sites: Vec<Site> = (0..4)
        .map(|a| Site::open(&site_specs[a], a, None).unwrap())
        .collect();
    assert!(federate(fed, &mut sites, None));
    let strip = |p: &Path| std::fs::read_to_string(p.join("trace.csv")).unwrap();
    assert_eq!(strip(&sim), strip(&out));
}
