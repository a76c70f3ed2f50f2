#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fbo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fbo"))
}

/// A small but complete spec: 1-D grid of 200 points, 3 other agents.
pub const SMALL: &str = include_str!("../fixtures/specs/common-small.toml");

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

/// `fbo <cmd> SPEC --out OUT --quiet --no-timing --shard I/N` for every shard I of N, each
/// asserted to succeed.
pub fn run_every_shard(cmd: &str, spec: &Path, out: &Path, n: usize) {
    for i in 0..n {
        fbo_ok(
            cmd,
            spec,
            out,
            &["--no-timing", "--shard", &format!("{i}/{n}")],
        );
    }
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

/// Runs `spec` with `--no-timing` on one thread and on two (into `dir`/one and `dir`/two),
/// asserts that each of `files` has the same bytes in both, and returns the one-thread folder.
#[track_caller]
pub fn assert_same_bytes_on_one_and_two_threads(
    spec: &Path,
    dir: &Path,
    files: &[&str],
) -> PathBuf {
    let (one, two) = (dir.join("one"), dir.join("two"));
    fbo_ok("run", spec, &one, &["--no-timing", "--threads", "1"]);
    fbo_ok("run", spec, &two, &["--no-timing", "--threads", "2"]);
    for f in files {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f} differs across thread counts"
        );
    }
    one
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

/// Runs `spec` as `n` shards into `out`, merges them, and asserts the merged trace.csv has the
/// bytes of an undisturbed run (made in `scratch`).
pub fn assert_shards_merge_to_a_fresh_run(spec: &Path, out: &Path, scratch: &Path, n: usize) {
    run_every_shard("run", spec, out, n);
    fbo_ok("run", spec, out, &["--no-timing", "--merge"]);
    assert_trace_of_a_fresh_run(spec, out, scratch);
}

/// `fbo validate SPEC`.
pub fn validate(spec: &Path) -> Output {
    fbo().arg("validate").arg(spec).output().unwrap()
}

/// Asserts that `fbo validate SPEC` refuses the spec as invalid input (exit 2) with `want` in
/// its message.
#[track_caller]
pub fn assert_refused(spec: &Path, want: &str) {
    assert_exit(&validate(spec), 2, want);
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

/// The first `n` columns of a trace, row by row (what was queried and seen, without timings).
pub fn trace_columns(out: &Path, n: usize) -> Vec<String> {
    std::fs::read_to_string(out.join("trace.csv"))
        .unwrap()
        .lines()
        .map(|l| l.split(',').take(n).collect::<Vec<_>>().join(","))
        .collect()
}

/// A CSV that fbo wrote, read whole: its header and its rows, each field as written. Tests
/// name columns, never positions, so a column added to an output breaks no test that does not
/// read it.
pub struct Csv {
    path: PathBuf,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub fn read(path: &Path) -> Csv {
        let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Csv::parse(path, &text)
    }

    /// CSV text that did not come from a file (a command's output), named `path` in messages.
    pub fn parse(path: &Path, text: &[u8]) -> Csv {
        let mut r = csv::Reader::from_reader(text);
        let header = r.headers().unwrap().iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| rec.unwrap().iter().map(String::from).collect())
            .collect();
        Csv {
            path: path.to_path_buf(),
            header,
            rows,
        }
    }

    /// The position of column `name`; a test naming a column the file lacks fails saying so.
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| {
                panic!(
                    "{} has no column {name:?}: {:?}",
                    self.path.display(),
                    self.header
                )
            })
    }

    /// Every row, each readable by column name.
    pub fn records(&self) -> impl Iterator<Item = Record<'_>> {
        self.rows
            .iter()
            .map(move |fields| Record { csv: self, fields })
    }

    /// Column `name`, top to bottom.
    pub fn column(&self, name: &str) -> Vec<&str> {
        let c = self.col(name);
        self.rows.iter().map(|r| r[c].as_str()).collect()
    }
}

/// One row of a `Csv`.
pub struct Record<'a> {
    csv: &'a Csv,
    pub fields: &'a [String],
}

impl<'a> Record<'a> {
    pub fn get(&self, name: &str) -> &'a str {
        &self.fields[self.csv.col(name)]
    }

    /// The fields of several columns, e.g. a unit's `["algorithm", "run", "agent"]`.
    pub fn key<const N: usize>(&self, names: [&str; N]) -> [&'a str; N] {
        names.map(|n| self.get(n))
    }

    /// The field of column `name` as a number.
    pub fn num(&self, name: &str) -> f64 {
        let v = self.get(name);
        v.parse().unwrap_or_else(|_| {
            panic!(
                "{}: {name} = {v:?} is not a number",
                self.csv.path.display()
            )
        })
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that a command's standard error contains `want` (and shows all of it if not).
#[track_caller]
pub fn assert_says(o: &Output, want: &str) {
    let e = stderr(o);
    assert!(e.contains(want), "{want:?} not in:\n{e}");
}

/// Asserts that a command exited with `code` and that its standard error contains `want`.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32, want: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    assert_says(o, want);
}

/// A small DP-family spec: 12 agents, 2 sub-regions, DP on. A file of its own, because
/// scripts/test-slurm.sh sweeps the same spec on a real Slurm.
pub const SMALL_DP: &str = include_str!("../fixtures/small-dp.toml");

/// Branin's box as a command objective's hyperparameters (x1, x2), as the toy expects.
pub const BRANIN_BOX: &str = include_str!("../fixtures/specs/common-branin-box.toml");

/// A toy response table in `dir` (table.toml and table.csv): `agents` agents on three points
/// of one hyperparameter h = 0, 1, 2 (x0 = 0, 0.5, 1), `rows` giving each agent's metric and
/// training seconds per point as "metric,seconds", agent by agent.
pub fn write_toy_table(dir: &Path, agents: usize, rows: &[(f64, f64)]) {
    assert_eq!(rows.len(), agents * 3, "three points per agent");
    write(
        dir,
        "table.toml",
        &format!(
            "dataset = \"toy\"\nmetric = \"acc\"\ndirection = \"maximize\"\nagents = {agents}\npoints_per_agent = 3\n\
             [[hyperparameters]]\nname = \"h\"\n"
        ),
    );
    let mut csv = String::from("agent,point,x0,h,metric,train_seconds\n");
    for (i, (metric, seconds)) in rows.iter().enumerate() {
        let (a, p) = (i / 3, i % 3);
        csv += &format!("{a},{p},{},{p},{metric},{seconds}\n", p as f64 / 2.0);
    }
    write(dir, "table.csv", &csv);
}

/// The toy command objective (examples/toy_objective.rs: fbo's Branin behind the protocol).
pub fn toy() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_fbo"));
    let toy = bin.parent().unwrap().join("examples").join("toy_objective");
    assert!(
        toy.exists(),
        "{} is missing: `cargo test --release` builds the examples (a filtered `--test ...` does not: `cargo build --release --examples` first)",
        toy.display()
    );
    toy
}

/// One ask/tell round trip on a Branin spec (hyperparameters x1, x2): `fbo ask`, then every
/// printed query told with Branin's exact value, as a person reporting by hand would. How
/// many were told; None if another fbo held the state folder.
pub fn tell_branin(spec: &Path, state: &Path, dir: &Path) -> Option<usize> {
    tell_branin_cut(spec, state, dir, None)
}

/// `tell_branin`, where with `cut = Some(k)` a first tell of the results' first k rows stands
/// for one killed part-way, and the whole file is then told again as a user would.
pub fn tell_branin_cut(spec: &Path, state: &Path, dir: &Path, cut: Option<usize>) -> Option<usize> {
    let o = fbo()
        .arg("ask")
        .arg(spec)
        .arg("--state")
        .arg(state)
        .output()
        .unwrap();
    if !o.status.success() {
        assert!(stderr(&o).contains("in use"), "{}", stderr(&o));
        return None;
    }
    let text = String::from_utf8(o.stdout).unwrap();
    let mut rows = text.lines();
    let header = rows.next().unwrap();
    assert_eq!(header, "scope,run,agent,iteration,x1,x2");
    let mut results = format!("{header},metric\n");
    let mut n = 0;
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        let x: Vec<f64> = f[4..].iter().map(|v| v.parse().unwrap()).collect();
        let metric = fbo::objective::function::Function::Branin.value(&x);
        results.push_str(&format!("{row},{metric}\n"));
        n += 1;
    }
    let tell = |text: &str| {
        let file = write(dir, "results.csv", text);
        let o = fbo()
            .arg("tell")
            .arg(spec)
            .arg("--state")
            .arg(state)
            .arg("--results")
            .arg(&file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    if let Some(k) = cut.filter(|&k| k < n) {
        let first: Vec<&str> = results.lines().take(k + 1).collect();
        tell(&(first.join("\n") + "\n"));
    }
    if n > 0 {
        tell(&results);
    }
    Some(n)
}

/// A raw dataset committed in `data/raw/` (the repository stands alone: no test reads beside it).
pub fn raw_data(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/raw")
        .join(sub)
}

/// The landmine CSV transcription, stored gzip-compressed.
pub fn landmine_csv() -> PathBuf {
    raw_data("landmine/landmine.csv.gz")
}

/// Drives every unfinished unit of a federation in one process, each round's instruction to
/// the sites of the agents it names and their replies back, for at most `rounds` rounds
/// (None: to the end, then the merge). When the rounds run out the sites answer the pending
/// round once more without the server keeping the replies (a server killed after the agents
/// answered) and false is returned; true once every unit is merged.
pub fn federate(
    mut fed: fbo::federation::Federation,
    sites: &mut [fbo::federation::Site],
    rounds: Option<usize>,
) -> bool {
    let mut left = rounds;
    for unit in fed.units().to_vec() {
        let mut server = fed.server(unit).unwrap();
        while !server.finished() {
            let agents = server.agents().to_vec();
            let ins: Vec<_> = agents
                .iter()
                .map(|&a| server.instruction_for(a).unwrap())
                .collect();
            if left == Some(0) {
                for (&a, ins) in agents.iter().zip(&ins) {
                    sites[a].step(ins).unwrap();
                }
                return false;
            }
            left = left.map(|l| l - 1);
            let replies = agents
                .iter()
                .zip(&ins)
                .map(|(&a, ins)| sites[a].step(ins).unwrap())
                .collect();
            server.receive(replies).unwrap();
        }
        fed.save(&server).unwrap();
    }
    fed.finish().unwrap();
    true
}
