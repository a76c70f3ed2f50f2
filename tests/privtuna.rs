//! `fbo import privtuna` (issue 39) on a federation of the PrivTuna layout that is not in the
//! repository (quantity skew: three batch sizes, a missing client, a stray file of another
//! federation, a distribution file), on the committed raw data, and the two practitioner
//! references (`start` on TS) against closed forms.

mod common;
use common::*;
use std::path::{Path, PathBuf};

const HEAD: &str = ",start,end,duration,round_epochs,loss,accuracy,recall,precision,val_loss,val_accuracy,val_recall,val_precision,act_fn,batch_size,client_lr,client_momentum,epochs\n";

/// A client grid: batch {16, 32, 64} x lr {0.1, 0.2} x momentum {0, 0.5}, accuracy from
/// `acc`; `skip` leaves one point out.
fn grid(acc: impl Fn(f64, f64, f64) -> f64, skip: Option<(f64, f64, f64)>) -> String {
    let mut s = HEAD.to_string();
    let mut k = 0;
    for b in [16.0, 32.0, 64.0] {
        for lr in [0.1, 0.2] {
            for m in [0.0, 0.5] {
                if skip == Some((b, lr, m)) {
                    continue;
                }
                s += &format!(
                    "{k},a,b,{},20,0.1,0.9,0.9,0.9,0.2,{},0.9,0.9,relu,{b},{lr},{m},30\n",
                    10.0 + k as f64,
                    acc(b, lr, m)
                );
                k += 1;
            }
        }
    }
    s
}

/// `<root>/non-IID_res/qty_skew/TOY_non-IID_qty_skew/3_parties/...`: clients 0 and 1 of 3
/// (client 1 lacks one point), a 4-client federation's stray file, a distribution file, the
/// FedAvg grid. Returns the `3_parties` folder.
fn toy_layout(root: &Path) -> PathBuf {
    let parties = root.join("non-IID_res/qty_skew/TOY_non-IID_qty_skew/3_parties");
    let ind = parties.join("individual/0.5");
    std::fs::create_dir_all(&ind).unwrap();
    std::fs::create_dir_all(parties.join("fedavg")).unwrap();
    // Client 0 diverged at (16, 0.1, 0): its accuracy is NaN there (the point is left out of
    // the table); a NaN loss elsewhere does not matter to an accuracy table.
    let c0: String = grid(|b, lr, m| 0.5 + lr + m / 10.0 - b / 1000.0, None)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut f: Vec<&str> = l.split(',').collect();
            match i {
                1 => f[10] = "nan", // val_accuracy of (16, 0.1, 0)
                2 => f[9] = "nan",  // val_loss of (16, 0.1, 0.5)
                _ => {}
            }
            f.join(",") + "\n"
        })
        .collect();
    write(&ind, "0.5_qty_3clts_clt0.txt", &c0);
    write(
        &ind,
        "0.5_qty_3clts_clt1.txt",
        &grid(
            |b, lr, m| 0.4 + lr - m / 10.0 + b / 1000.0,
            Some((64.0, 0.2, 0.5)),
        ),
    );
    write(&ind, "0.5_qty_4clts_clt3.txt", &grid(|_, _, _| 0.5, None));
    write(
        &ind,
        "toy_qty_skew_0.5_3clients_distribution.txt",
        "client : 0, samples : 10 / 100, percentage : 0.1\n",
    );
    write(
        &parties.join("fedavg"),
        "toy_qty_skew_0.5_3clients.txt",
        "(0.61, {'act_fn': <jax.custom_derivatives.custom_jvp object at 0x7f>, 'client_lr': 0.1, 'server_lr': 0.03, 'client_momentum': 0.5, 'batch_size': 32})\n\
         (DeviceArray(0.5, dtype=float32), {'client_lr': 0.2, 'client_momentum': 0.0, 'batch_size': 16})\n",
    );
    parties
}

/// `fbo import privtuna SOURCE --out OUT`, its output collected.
fn import(source: &Path, out: &Path) -> std::process::Output {
    fbo_output([
        "import".as_ref(),
        "privtuna".as_ref(),
        source.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ])
}

#[test]
fn a_federation_of_the_layout_imports_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let parties = toy_layout(dir.path());
    let out = dir.path().join("tables");
    let o = import(&parties, &out);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for want in [
        "skipped individual/0.5/0.5_qty_4clts_clt3.txt: a file of a 4-client federation inside a 3-party folder",
        "toy_qty_skew_0.5_3clients_distribution.txt: the clients' data distribution",
        "toy-qty-0.5-3: 2 clients x 10 points (MISSING clients 2 of 3) (2 points not run by every client, or NaN, left out)",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    let folder = out.join("toy-qty-0.5-3");
    let meta = std::fs::read_to_string(folder.join("table.toml")).unwrap();
    for want in [
        "clients = [0, 1]",
        "missing_clients = [2]",
        "agents = 2",
        "points_per_agent = 10",
        "best_test_accuracy = 0.61",
        // lr 0.1, momentum 0.5, batch 32, sorted by (batch, lr, momentum) without the NaN
        // point (16, 0.1, 0) -> point 4.
        "best_point = 4",
    ] {
        assert!(meta.contains(want), "{want}\n{meta}");
    }
    // Unit coordinates: ln lr over [ln 0.1, ln 0.2], momentum over [0, 0.5], ln batch over
    // [ln 16, ln 64] (32 sits at 1/2); metric = val_accuracy, train_seconds = duration.
    let bytes = std::fs::read(folder.join("table.csv.gz")).unwrap();
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    let row4 = text.lines().nth(5).unwrap();
    assert_eq!(row4, "0,4,0,1,0.5,0.1,0.5,32,0.618,15", "{text}");

    // The table runs, with both references: for agent 0 both point to client 1's own best
    // (the only other client): lr 0.2, momentum 0, batch 64, point 9 of the 10.
    let spec = write(
        dir.path(),
        "spec.toml",
        &format!(
            "name = \"toy\"\nseed = 1\nruns = 2\niterations = 3\ninitial_points = 1\n\
             [objective]\nkind = \"table\"\ntable = \"{}\"\n\
             [[algorithm]]\nkind = \"ts\"\n\
             [[algorithm]]\nkind = \"ts\"\nstart = \"federation-best\"\n\
             [[algorithm]]\nkind = \"ts\"\nstart = \"mean-of-bests\"\n",
            folder.join("table.toml").display()
        ),
    );
    let res = dir.path().join("res");
    fbo_ok("run", &spec, &res, &["--no-timing"]);
    let trace = std::fs::read_to_string(res.join("trace.csv")).unwrap();
    for label in ["TS from federation best", "TS from mean of bests"] {
        // (run, x_index) of agent 0's initial point.
        let first: Vec<(String, String)> = trace
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f[0] == label && f[2] == "0" && f[3] == "0")
            .map(|f| (f[1].to_string(), f[4].to_string()))
            .collect();
        assert_eq!(
            first,
            [("0".into(), "9".into()), ("1".into(), "9".into())],
            "{label}"
        );
    }
}

#[test]
fn a_malformed_grid_is_refused_with_file_and_line_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let parties = toy_layout(dir.path());
    let bad = parties.join("individual/0.5/0.5_qty_3clts_clt0.txt");
    let text = std::fs::read_to_string(&bad).unwrap();
    // Line 4's val_accuracy (column 10) unreadable.
    let broken: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut f: Vec<&str> = l.split(',').collect();
            if i == 3 {
                f[10] = "n/a";
            }
            f.join(",")
        })
        .collect();
    std::fs::write(&bad, broken.join("\n")).unwrap();
    let out = dir.path().join("tables");
    let o = import(&parties, &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("0.5_qty_3clts_clt0.txt")
            && err.contains("line 4")
            && err.contains("column val_accuracy: \"n/a\""),
        "{err}"
    );
    assert!(!out.exists());
}

/// The committed tables are what the importer makes of the committed raw data.
#[test]
fn committed_tables_are_the_importers_output() {
    let dir = tempfile::tempdir().unwrap();
    let src = raw_data("privtuna/non-IID_res/label_skew/CIFAR10_non-IID_label_skew/10_parties");
    let o = import(&src, dir.path());
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("imported 3 federations (0 with missing clients)"),
        "{err}"
    );
    assert!(
        err.contains("0.1_label_20clts_clt10.txt.gz: a file of a 20-client federation inside a 10-party folder"),
        "{err}"
    );
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/privtuna");
    for level in ["0.1", "1.0", "5.0"] {
        let name = format!("cifar10-label-{level}-10");
        for f in ["table.toml", "table.csv.gz", "fedavg.csv.gz"] {
            assert!(
                std::fs::read(dir.path().join(&name).join(f)).unwrap()
                    == std::fs::read(committed.join(&name).join(f)).unwrap(),
                "{name}/{f} differs from the committed one"
            );
        }
    }
}

/// Three agents on three points: for agent 0 the others' mean surface peaks at point 2, and
/// their own best points (x = 0 and x = 1) average to x = 0.5, point 1.
#[test]
fn references_start_where_the_closed_form_says() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = [0.1, 0.2, 0.3, 0.9, 0.0, 0.5, 0.0, 0.1, 0.95];
    let rows: Vec<(f64, f64)> = metrics.iter().map(|&m| (m, 1.0)).collect();
    write_toy_table(dir.path(), 3, &rows);
    let spec = write(
        dir.path(),
        "spec.toml",
        "name = \"refs\"\nseed = 5\nruns = 3\niterations = 1\ninitial_points = 1\n\
         [objective]\nkind = \"table\"\ntable = \"table.toml\"\ntargets = [0]\n\
         [[algorithm]]\nkind = \"ts\"\nstart = \"federation-best\"\n\
         [[algorithm]]\nkind = \"ts\"\nstart = \"mean-of-bests\"\n",
    );
    let res = dir.path().join("res");
    fbo_ok("run", &spec, &res, &["--no-timing"]);
    let trace = std::fs::read_to_string(res.join("trace.csv")).unwrap();
    for (label, point) in [("TS from federation best", 2), ("TS from mean of bests", 1)] {
        for run in 0..3 {
            let row = format!("{label},{run},0,0,{point},");
            assert!(trace.lines().any(|l| l.starts_with(&row)), "{row}\n{trace}");
        }
    }
    // Refused where there is no grid to point into, or nothing to replace.
    let spec = write(
        dir.path(),
        "bad.toml",
        "name = \"refs\"\nseed = 5\nruns = 1\niterations = 1\ninitial_points = 0\n\
         [objective]\nkind = \"table\"\ntable = \"table.toml\"\n\
         [[algorithm]]\nkind = \"ts\"\nstart = \"mean-of-bests\"\n",
    );
    let o = validate(&spec);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("algorithm[0].start") && err.contains("initial_points >= 1"),
        "{err}"
    );
    let spec = write(
        dir.path(),
        "bad2.toml",
        "name = \"refs\"\nseed = 5\nruns = 1\niterations = 1\n\
         [objective]\nkind = \"table\"\ntable = \"table.toml\"\n\
         [[algorithm]]\nkind = \"ei\"\nstart = \"mean-of-bests\"\n",
    );
    let err = stderr(&validate(&spec));
    assert!(
        err.contains("algorithm[0].start") && err.contains("applies only to kind = \"ts\""),
        "{err}"
    );
}
