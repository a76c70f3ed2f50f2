//! Results that do not depend on the machine: the same spec and seed must give the same numbers
//! on any x86-64 CPU, not only for any thread count.

mod common;
use common::*;
use std::fs;
use std::path::Path;

/// Final and early mean simple regret of the FTS paper's Fig. 1 configs, exactly as fbo writes
/// them to summary.csv. Recorded on this project's machine (AMD EPYC) at the commit that made
/// the linear algebra CPU-independent; docs/results.md's Fig. 1 tables are these numbers rounded.
/// Under OpenBLAS the same commit gave TS 0.0072 (Haswell kernels) or 0.0055 (Sandybridge
/// kernels) at iteration 50, so a CPU-dependent code path makes this test fail elsewhere.
/// (algorithm, iteration, mean simple regret as written).
type Recorded = &'static [(&'static str, &'static str, &'static str)];

const FIG1: [(&str, Recorded); 3] = [
    (
        "fts-fig1a.toml",
        &[
            ("TS", "10", "0.13300702538164225"),
            ("TS", "50", "0.005616219504032389"),
            ("FTS M=10", "50", "0.01881953332465047"),
            ("FTS M=50", "10", "0.03417438220896953"),
            ("FTS M=50", "50", "0.00044371772012476553"),
            ("FTS M=100", "50", "0.0008969865478820571"),
        ],
    ),
    (
        "fts-fig1b.toml",
        &[
            ("FTS M=10", "10", "0.06783320115009332"),
            ("FTS M=10", "50", "0.0014349830922912022"),
            ("FTS M=100", "10", "0.00420772518473171"),
            ("FTS M=100", "50", "0.0009101097013541049"),
        ],
    ),
    (
        "fts-fig1c.toml",
        &[
            ("FTS M=100 p=1-1/sqrt(t)", "50", "0.005441102742318424"),
            ("FTS M=100 p=1-1/t^2", "50", "0.01265678216558903"),
        ],
    ),
];

#[test]
fn fig1_configs_give_the_readmes_numbers_on_any_machine() {
    let dir = tempfile::tempdir().unwrap();
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    for (config, expected) in FIG1 {
        let out = dir.path().join(config);
        fbo_ok("run", &configs.join(config), &out, &["--no-timing"]);
        let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
        for (alg, iteration, regret) in expected {
            let row = summary
                .lines()
                .map(|l| l.split(',').collect::<Vec<_>>())
                .find(|f| f[0] == *alg && f[1] == *iteration)
                .unwrap_or_else(|| panic!("{config}: no row for {alg} at {iteration}"));
            assert_eq!(
                row[3], *regret,
                "{config}: {alg} at iteration {iteration}: mean simple regret {} where {regret} was recorded",
                row[3]
            );
        }
    }
}

/// glibc dispatches exp, log, sin, cos and pow to FMA or non-FMA builds by the CPU it sees, and
/// those may differ in the last bit. fbo's numerical code calls the pure-Rust libm instead, so
/// hiding FMA, AVX and AVX2 from glibc must not change a byte. (OpenBLAS and matrixmultiply,
/// which chose kernels the same way, are no longer linked.)
#[test]
fn output_does_not_depend_on_the_cpu_features_glibc_sees() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL.replace(
        "[[algorithm]]\nkind = \"fts\"",
        "[[algorithm]]\nkind = \"fts\"\n\n[[algorithm]]\nkind = \"dp-fts-de\"\nserver = { subregions = 2, dp = true, q = 0.5, z = 1.0 }",
    );
    let spec = write(dir.path(), "small.toml", &text);
    let mut traces = Vec::new();
    for (name, tunables) in [
        ("plain", None),
        ("no-fma", Some("glibc.cpu.hwcaps=-AVX2,-FMA,-AVX")),
    ] {
        let out = dir.path().join(name);
        let mut cmd = fbo();
        cmd.args([
            "run",
            spec.to_str().unwrap(),
            "--quiet",
            "--no-timing",
            "--out",
        ])
        .arg(&out);
        if let Some(t) = tunables {
            cmd.env("GLIBC_TUNABLES", t);
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        traces.push(fs::read(out.join("trace.csv")).unwrap());
    }
    assert!(
        traces[0] == traces[1],
        "trace.csv changed when glibc saw no FMA/AVX"
    );
}
