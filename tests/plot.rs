//! `fbo plot` on fixture CSVs: every kind produces a PNG and an SVG that actually show the
//! data (many colours, labelled series), and bad input is refused with the file named.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plot")
        .join(name)
}

fn plot(kind: &str, input: &str, out: &Path, extra: &[&str]) {
    let f = fixture(input);
    let mut args = vec![
        "plot",
        kind,
        "--input",
        f.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = fbo_output(&args);
    assert!(o.status.success(), "fbo plot {kind}: {}", stderr(&o));
}

/// A PNG with data on it: distinct colours (lines, bands, text) and a share of non-white pixels.
fn assert_png_nontrivial(path: &Path, min_colours: usize) {
    let img = image::open(path).unwrap().to_rgb8();
    // Drawn 880 wide for docs that show 440 (text at 22 px reads at 11), with the legend's
    // rows below a 560-pixel plot.
    let (w, h) = img.dimensions();
    assert_eq!(w, 880);
    assert!((560 + 48..=560 + 16 + 32 * 12).contains(&h), "{w} x {h}");
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0usize;
    for p in img.pixels() {
        colours.insert(p.0);
        if p.0 != [255, 255, 255] {
            inked += 1;
        }
    }
    assert!(
        colours.len() >= min_colours,
        "{}: only {} colours",
        path.display(),
        colours.len()
    );
    let share = inked as f64 / (900.0 * 600.0);
    assert!(share > 0.02, "{}: {share} of pixels inked", path.display());
}

fn assert_svg_has(path: &Path, labels: &[&str]) {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(svg.starts_with("<svg"), "{}", path.display());
    assert!(svg.matches("<polyline").count() + svg.matches("<path").count() >= 3);
    for l in labels {
        assert!(svg.contains(l), "{}: no {l:?}", path.display());
    }
}

#[test]
fn every_plot_kind_draws_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &str, &[&str], &[&str]); 7] = [
        (
            "iterations",
            "summary.csv",
            &[],
            &["TS", "FTS M=100", "RGPE M=100", "TAF M=100", "iteration"],
        ),
        (
            "iterations",
            "summary.csv",
            &["--y", "simple-regret", "--log-y"],
            &["simple regret"],
        ),
        (
            "time",
            "summary.csv",
            &[],
            &["simulated run time", "TAF M=100"],
        ),
        (
            "messages",
            "summary.csv",
            &[],
            &["parameters sent per agent", "FTS", "RGPE", "TS"],
        ),
        (
            "privacy",
            "sweep.csv",
            &[],
            &["privacy loss epsilon (rdp-int)", "DP-FTS-DE P=4"],
        ),
        (
            "scaling",
            "scaling.csv",
            &[],
            &["N (agents other than the target)", "RGPE M=100"],
        ),
        (
            "beliefs",
            "beliefs.csv",
            &[],
            &["length scale", "TS: u0", "EI: u2"],
        ),
    ];
    for (k, (kind, input, extra, labels)) in cases.iter().enumerate() {
        let png = d.join(format!("{k}-{kind}.png"));
        plot(kind, input, &png, extra);
        assert_png_nontrivial(&png, 20);
        let svg = d.join(format!("{k}-{kind}.svg"));
        plot(kind, input, &svg, extra);
        assert_svg_has(&svg, labels);
    }
    // Only what was drawn: no temporary files left beside the figures.
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 14);
    // A privacy plot with a summary beside the sweep: its algorithms become reference lines,
    // and each sweep point is annotated with its swept values.
    let svg = d.join("privacy-with-references.svg");
    let summary = fixture("summary.csv");
    plot(
        "privacy",
        "sweep.csv",
        &svg,
        &[
            "--input",
            summary.to_str().unwrap(),
            "--algorithms",
            "TS,FTS M=100",
        ],
    );
    assert_svg_has(
        &svg,
        &[
            "DP-FTS-DE P=4",
            "TS",
            "FTS M=100",
            "q=0.35 z=2",
            "q=0.1 z=1",
        ],
    );
    assert!(!std::fs::read_to_string(&svg).unwrap().contains("RGPE"));
}

#[test]
fn algorithm_selection_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("a.svg");
    plot(
        "iterations",
        "summary.csv",
        &svg,
        &["--algorithms", "TAF M=100,TS"],
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("TAF M=100") && !text.contains("RGPE"));

    let summary = fixture("summary.csv");
    let sweep = fixture("sweep.csv");
    for (args, expect) in [
        (
            vec![
                "plot",
                "scaling",
                "--input",
                summary.to_str().unwrap(),
                "--out",
                "x.png",
            ],
            "reads a sweep.csv",
        ),
        (
            vec![
                "plot",
                "privacy",
                "--input",
                summary.to_str().unwrap(),
                "--out",
                "x.png",
            ],
            "reads a sweep.csv",
        ),
        (
            vec![
                "plot",
                "privacy",
                "--input",
                sweep.to_str().unwrap(),
                "--out",
                "x.png",
                "--y",
                "simple-regret",
            ],
            "`--y`: applies to iterations, time, difference and ranks plots only",
        ),
        (
            vec![
                "plot",
                "iterations",
                "--input",
                summary.to_str().unwrap(),
                "--out",
                "x.png",
                "--clock",
                "overhead",
            ],
            "`--clock`: applies to time plots only",
        ),
        (
            vec![
                "plot",
                "iterations",
                "--input",
                sweep.to_str().unwrap(),
                "--out",
                "x.png",
            ],
            "no column `iteration`",
        ),
        (
            vec![
                "plot",
                "iterations",
                "--input",
                summary.to_str().unwrap(),
                "--out",
                "x.pdf",
            ],
            "must end in .png or .svg",
        ),
        (
            vec![
                "plot",
                "beliefs",
                "--input",
                summary.to_str().unwrap(),
                "--out",
                "x.png",
            ],
            "no length-scale columns (ls_u0, ...): is this a beliefs.csv (output.beliefs = true)?",
        ),
        (
            vec![
                "plot",
                "iterations",
                "--input",
                "missing.csv",
                "--out",
                "x.png",
            ],
            "missing.csv",
        ),
    ] {
        let o = fbo_output(&args);
        // Bad arguments and inputs are invalid input: exit 2, like a bad spec.
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(expect),
            "{expect:?} not in {}",
            stderr(&o)
        );
    }
    assert!(!Path::new("x.png").exists() && !Path::new("x.pdf").exists());
}
