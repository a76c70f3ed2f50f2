#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fbo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fbo"))
}

/// A small but complete spec: 1-D grid of 200 points, 3 other agents.
pub const SMALL: &str = r#"
name = "small"
seed = 3
runs = 4
iterations = 12
initial_points = 2

[objective]
kind = "synthetic-fts"
grid = 200
functions = 2

[surrogate]
features = 20

[surrogate.own]
features = 30

[federation]
agents = 3
observations = 10

[[algorithm]]
kind = "ts"

[[algorithm]]
kind = "fts"
"#;

/// `fbo <cmd> SPEC --out OUT --quiet <extra>`, its output collected.
pub fn fbo_out(cmd: &str, spec: &Path, out: &Path, extra: &[&str]) -> Output {
    fbo()
        .arg(cmd)
        .arg(spec)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .args(extra)
        .output()
        .unwrap()
}

/// `fbo_out`, asserting that it succeeds.
pub fn fbo_ok(cmd: &str, spec: &Path, out: &Path, extra: &[&str]) -> Output {
    let o = fbo_out(cmd, spec, out, extra);
    assert!(
        o.status.success(),
        "fbo {cmd} {}: {}",
        spec.display(),
        stderr(&o)
    );
    o
}

/// Finished runs in a `parts/` folder (their trace parts), 0 while it does not exist.
pub fn finished_parts(parts: &Path) -> usize {
    std::fs::read_dir(parts)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "csv")
            })
            .count()
        })
        .unwrap_or(0)
}

/// Asserts that `out`'s trace.csv has the bytes of an undisturbed `--no-timing` run of
/// `spec` (made in `scratch`).
pub fn assert_trace_of_a_fresh_run(spec: &Path, out: &Path, scratch: &Path) {
    let fresh = scratch.join("fresh");
    fbo_ok("run", spec, &fresh, &["--no-timing"]);
    assert!(
        std::fs::read(out.join("trace.csv")).unwrap()
            == std::fs::read(fresh.join("trace.csv")).unwrap(),
        "{} differs from an undisturbed run",
        out.join("trace.csv").display()
    );
}

/// `fbo validate SPEC`.
pub fn validate(spec: &Path) -> Output {
    fbo().arg("validate").arg(spec).output().unwrap()
}

/// `fbo <args>` with its output collected.
pub fn fbo_output<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    fbo().args(args).output().unwrap()
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small DP-family spec: 12 agents, 2 sub-regions, DP on. A file of its own, because
/// scripts/test-slurm.sh sweeps the same spec on a real Slurm.
pub const SMALL_DP: &str = include_str!("../fixtures/small-dp.toml");
