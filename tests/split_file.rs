//! `objective.split`: a train/validation split read from a file, for the live models; and
//! `objective.svm_stopping = "libsvm"`, which with the authors' split is their objective.

mod common;
use common::*;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A live landmine spec on the converged SVM's decision-value AUC, with `extra` objective keys.
fn spec(dir: &Path, extra: &str) -> std::path::PathBuf {
    let data = landmine_csv();
    write(
        dir,
        "spec.toml",
        &format!(
            "name = \"split\"\nruns = 1\niterations = 1\ninitial_points = 1\n[objective]\nkind = \"model\"\ndataset = \"landmine\"\ndata = \"{}\"\nmetric = \"auc\"\n{extra}\n[[algorithm]]\nkind = \"ts\"\n",
            data.display()
        ),
    )
}

fn evaluate(spec: &Path, points: &str) -> std::process::Output {
    let pts = write(spec.parent().unwrap(), "points.csv", points);
    fbo()
        .arg("evaluate")
        .arg(spec)
        .arg("--points")
        .arg(&pts)
        .output()
        .unwrap()
}

fn values(o: &std::process::Output) -> Vec<f64> {
    assert!(o.status.success(), "{}", stderr(o));
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect()
}

/// The authors' split (shipped as data/landmine/authors-split-order.csv) gives scikit-learn's
/// converged SVM's AUCs (tests/fixtures/authors_split_reference.py split), and differs from fbo's
/// seeded split; fbo's own split.csv named as a file gives exactly the seeded split's values.
#[test]
fn a_split_file_sets_the_rows_each_model_trains_and_validates_on() {
    let reference =
        std::fs::read_to_string(root().join("tests/fixtures/authors_split_reference.csv")).unwrap();
    let points: String = reference
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0)
        .collect::<Vec<_>>()
        .join("\n");
    let want: Vec<f64> = reference
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    let authors = root().join("data/landmine/authors-split-order.csv");
    let own = root().join("data/landmine/split.csv");
    let run = |extra: String| {
        let dir = tempfile::tempdir().unwrap();
        values(&evaluate(&spec(dir.path(), &extra), &points))
    };
    let got = run(format!("split = \"{}\"", authors.display()));
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-9, "fbo {g} against scikit-learn {w}");
    }
    let seeded = run(String::new());
    assert!(
        seeded.iter().zip(&want).any(|(s, w)| (s - w).abs() > 1e-3),
        "the seeded split gave the authors' values: {seeded:?}"
    );
    assert_eq!(run(format!("split = \"{}\"", own.display())), seeded);
}

/// A malformed split file is refused at validation with the file, the line and the key.
#[test]
fn a_bad_split_file_is_refused_naming_file_and_line() {
    let cases = [
        ("agent,row,set\n0,1,train\n", "line 1: header must be"),
        (
            "agent,index,set\n0,1,train\n0,1,valid\n",
            "line 3: agent 0 row 1 is listed twice (also line 2)",
        ),
        (
            "agent,index,set\n0,1,test\n",
            "line 2: set must be train or valid",
        ),
        (
            "agent,set,position,index\n0,train,0,1\n0,train,0,2\n0,valid,0,3\n",
            "line 3: position 0 repeats line 2",
        ),
        (
            "agent,index,set\n0,-1,train\n",
            "line 2: index must be a whole number",
        ),
    ];
    for (text, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "split.csv", text);
        let s = spec(dir.path(), "split = \"split.csv\"");
        let o = fbo().arg("validate").arg(&s).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains("key `objective.split`")
                && err.contains("split.csv")
                && err.contains(want),
            "{text}: {err}"
        );
    }
    // Well formed but not covering the data: refused before anything runs.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "split.csv",
        "agent,index,set\n0,0,train\n0,1,valid\n",
    );
    let s = spec(dir.path(), "split = \"split.csv\"");
    let out = dir.path().join("out");
    // `fbo run` refused (exit 2) before anything runs; its error.
    let refused = || {
        let o = fbo()
            .arg("run")
            .arg(&s)
            .arg("--out")
            .arg(&out)
            .arg("--quiet")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        stderr(&o)
    };
    let err = refused();
    assert!(
        err.contains("split.csv") && err.contains("in neither set"),
        "{err}"
    );
    assert!(!out.join("trace.csv").exists());
    // A row past the field's data names the line that listed it.
    write(
        dir.path(),
        "split.csv",
        "agent,index,set\n0,0,train\n0,99999,valid\n",
    );
    let err = refused();
    assert!(
        err.contains("split.csv")
            && err.contains("line 3")
            && err.contains("row 99999 is out of range"),
        "{err}"
    );
}

/// A libsvm reference fixture's rows (agent, C, gamma, value, ...) and fbo's values at its
/// points, on the authors' split with `svm_stopping = "libsvm"`.
fn libsvm_fixture(name: &str) -> (Vec<Vec<String>>, Vec<f64>) {
    let reference = std::fs::read_to_string(root().join("tests/fixtures").join(name)).unwrap();
    let rows: Vec<Vec<String>> = reference
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let points = std::iter::once("agent,C,gamma".to_string())
        .chain(rows.iter().map(|r| r[..3].join(",")))
        .collect::<Vec<_>>()
        .join("\n");
    let authors = root().join("data/landmine/authors-split-order.csv");
    let dir = tempfile::tempdir().unwrap();
    let s = spec(
        dir.path(),
        &format!(
            "split = \"{}\"\nsvm_stopping = \"libsvm\"",
            authors.display()
        ),
    );
    let got = values(&evaluate(&s, &points));
    assert_eq!(got.len(), rows.len());
    for (g, r) in got.iter().zip(&rows) {
        let want: f64 = r[3].parse().unwrap();
        assert!((g - want).abs() < 1e-12, "{r:?}: fbo {g}");
    }
    (rows, got)
}

/// Where C is large and gamma small the default SVC runs hundreds of steps on a nearly flat
/// kernel, and a C one ulp away takes another path: `fbo evaluate` must hand the objective the
/// raw values as given, not as the unit cube maps them back (3 of these 120 moved by up to
/// 2.5e-3 when it did). Equal to scikit-learn 1.9.1 to 1e-12 at all 120.
#[test]
fn libsvm_stopping_equals_scikit_learn_at_large_c_and_small_gamma() {
    let (rows, _) = libsvm_fixture("libsvm_large_c_reference.csv");
    assert_eq!(rows.len(), 120);
}

/// With the authors' split and `svm_stopping = "libsvm"` the landmine objective is
/// scikit-learn's default `SVC()` step for step: at 174 points of all 29 fields (87 on the
/// C = 1e-4 face, where it stops after a few steps) its decision-value AUC equals
/// scikit-learn 1.7.2's (tests/fixtures/authors_split_reference.py libsvm) to 1e-12, though that
/// lies up to 0.36 from the converged SVM's.
#[test]
fn libsvm_stopping_is_scikit_learns_default_svc() {
    let (rows, _) = libsvm_fixture("libsvm_stopping_reference.csv");
    assert_eq!(rows.len(), 174);
    let mut far = 0.0f64;
    for r in &rows {
        let (want, converged): (f64, f64) = (r[3].parse().unwrap(), r[4].parse().unwrap());
        far = far.max((want - converged).abs());
    }
    assert!(
        far > 0.3,
        "the default stop is never far from convergence: {far}"
    );
}

#[test]
fn svm_stopping_is_validated_with_the_key_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), "svm_stopping = \"early\"");
    let o = fbo().arg("validate").arg(&s).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("key `objective.svm_stopping`: unknown stopping \"early\"; allowed: \"converged\", \"libsvm\""),
        "{err}"
    );
}
