//! Result files. Every file is written whole to a hidden temporary name in the same folder,
//! flushed, then renamed over the target, so a reader (or a killed run) never sees a CSV cut
//! off mid-row.

use crate::error::{FboError, Result};
use crate::math::hex;
use crate::objective::Codec;
use crate::server::RoundRecord;
use crate::spec::Spec;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        FboError::io(path, e)
    })
}

/// One traced query.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    pub algorithm: String,
    pub run: usize,
    pub agent: usize,
    /// 1..=T for BO iterations; initial points are numbered 1 - n_init ..= 0.
    pub iteration: i64,
    /// The grid index of the query (None on a box).
    pub x_index: Option<usize>,
    /// Unit coordinates in [0,1]^D.
    pub x: Vec<f64>,
    /// Raw hyperparameter values, one per named hyperparameter of the objective.
    pub raw: Vec<f64>,
    pub source: String,
    pub y: f64,
    pub f: f64,
    /// f in the objective's own units (AUC, validation error; = f for synthetic objectives).
    pub metric: f64,
    pub best_f: f64,
    /// The best metric so far (the lowest error when the metric is minimised).
    pub best_metric: f64,
    /// None where the objective's maximum is unknown (live models).
    pub simple_regret: Option<f64>,
    pub cumulative_regret: Option<f64>,
    /// The target's BO overhead since set-up (shared by all targets of a run); None when
    /// output.timing is off.
    pub elapsed_s: Option<f64>,
    /// Parameters each other agent has sent by this iteration (uplink, per agent).
    pub params_sent: u64,
    /// Seconds of model training the target's evaluations so far cost: the table's recorded
    /// train_seconds, or a live model's measured ones (0 for synthetic objectives).
    pub train_s: f64,
    /// With a `[clock]`: the simulated time this evaluation finished (`crate::run::clock`).
    pub clock_s: Option<f64>,
}

impl TraceRow {
    /// Simulated wall clock: with a `[clock]`, the simulated time the evaluation finished;
    /// otherwise measured BO overhead plus recorded training time.
    pub fn sim_clock_s(&self) -> Option<f64> {
        self.clock_s
            .or_else(|| self.elapsed_s.map(|e| e + self.train_s))
    }
}

pub use crate::objective::columns::{is_unit_column, unit_column};

/// The name of unit column k in a trace whose columns `has` tells: `unit_column`, or `x0`,
/// `x1`, ... in a trace of an older build (which has `x0` and no `u0`).
pub fn unit_column_of(has: impl Fn(&str) -> bool) -> impl Fn(usize) -> String {
    let older = has("x0") && !has("u0");
    move |k| {
        if older {
            format!("x{k}")
        } else {
            unit_column(k)
        }
    }
}

/// The trace columns: u0.. are unit coordinates, then one column per named hyperparameter
/// holding its raw value (C, gamma, ...; a categorical one's choice by name).
pub fn trace_header(dim: usize, names: &[String]) -> Vec<String> {
    use crate::objective::columns::{AFTER_POINT, BEFORE_POINT};
    let mut h: Vec<String> = BEFORE_POINT.iter().map(|s| s.to_string()).collect();
    h.extend((0..dim).map(unit_column));
    h.extend(names.iter().cloned());
    h.extend(AFTER_POINT.iter().map(|s| s.to_string()));
    h
}

/// CSV text of rows, header first. Floats use Rust's shortest round-trip form, so equal
/// numbers always print the same bytes.
pub fn trace_csv(rows: &[TraceRow], dim: usize, codec: &Codec) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| FboError::Run(format!("formatting trace CSV: {e}"));
    w.write_record(trace_header(dim, &codec.names))
        .map_err(err)?;
    for r in rows {
        let mut rec = vec![
            r.algorithm.clone(),
            r.run.to_string(),
            r.agent.to_string(),
            r.iteration.to_string(),
            r.x_index.map(|i| i.to_string()).unwrap_or_default(),
        ];
        rec.extend(r.x.iter().map(|v| v.to_string()));
        rec.extend(codec.show_all(&r.raw));
        rec.extend([
            r.source.clone(),
            r.y.to_string(),
            r.f.to_string(),
            r.metric.to_string(),
            r.best_f.to_string(),
            r.best_metric.to_string(),
            r.simple_regret.map(|v| v.to_string()).unwrap_or_default(),
            r.cumulative_regret
                .map(|v| v.to_string())
                .unwrap_or_default(),
            r.elapsed_s.map(|v| format!("{v:.6}")).unwrap_or_default(),
            r.params_sent.to_string(),
            format!("{:.6}", r.train_s),
            r.sim_clock_s()
                .map(|v| format!("{v:.6}"))
                .unwrap_or_default(),
        ]);
        w.write_record(rec).map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| FboError::Run(format!("formatting trace CSV: {e}")))
}

pub const SERVER_HEADER: &str = "algorithm,run,round,selected,clipped,clipped_fraction,a_t,phi_max,noise_sd,arrived,selected_agents,missing_agents\n";

/// A warning for every private algorithm of `spec` that clipped more than half of the
/// vectors its server selected, over all rounds of a run folder's server.csv text: such a
/// clipping threshold S biases every average towards zero (the DP paper clips few), and is
/// rarely what a reader should copy.
pub fn clipping_warnings(spec: &Spec, server_csv: &[u8]) -> Vec<String> {
    let mut rdr = csv::Reader::from_reader(server_csv);
    let mut totals: Vec<(String, usize, usize)> = Vec::new();
    for rec in rdr.records().flatten() {
        let (Ok(sel), Ok(clip)) = (rec[3].parse::<usize>(), rec[4].parse::<usize>()) else {
            continue;
        };
        match totals.iter_mut().find(|(l, _, _)| l == &rec[0]) {
            Some(t) => {
                t.1 += sel;
                t.2 += clip;
            }
            None => totals.push((rec[0].to_string(), sel, clip)),
        }
    }
    let mut out = Vec::new();
    for (i, a) in spec.algorithms.iter().enumerate() {
        let Some(dp) = a.server.as_ref().and_then(|s| s.dp) else {
            continue;
        };
        if let Some((_, sel, clip)) = totals.iter().find(|(l, _, _)| *l == a.label)
            && *sel > 0
            && (*clip as f64) > 0.5 * *sel as f64
        {
            out.push(format!(
                "warning: {} clipped {:.0}% of the vectors its server selected (S = {}): most messages lose their length, which biases every average towards zero; raise {} (server.csv's clipped_fraction has it by round)",
                a.label,
                100.0 * *clip as f64 / *sel as f64,
                dp.clip,
                a.server_key(i, "clip")
            ));
        }
    }
    out
}

/// One row of beliefs.csv: what agent `agent`'s model believed when it chose its query of
/// `iteration`.
#[derive(Clone, Debug, PartialEq)]
pub struct BeliefRow {
    pub agent: usize,
    pub iteration: usize,
    pub belief: crate::algorithm::agent::Belief,
}

/// beliefs.csv's header for a space of `dim` unit coordinates: one length scale per unit
/// coordinate (`ls_u0`, ... as the trace's `u0`, ...; with one shared length scale every
/// column holds it and `length_scales` is 1).
pub fn beliefs_header(dim: usize) -> String {
    let mut h = String::from(
        "algorithm,run,agent,iteration,kernel,length_scales,mean,signal_var,noise_var",
    );
    for k in 0..dim {
        h += &format!(",ls_{}", unit_column(k));
    }
    h + "\n"
}

/// beliefs.csv rows (no header) of one run.
pub fn beliefs_csv_body(
    label: &str,
    run: usize,
    rows: &[BeliefRow],
    dim: usize,
) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| FboError::Run(format!("formatting beliefs CSV: {e}"));
    for r in rows {
        let h = &r.belief.hyper;
        let ls = &h.length_scales;
        let mut rec = vec![
            label.to_string(),
            run.to_string(),
            r.agent.to_string(),
            r.iteration.to_string(),
            h.kernel.name().to_string(),
            ls.len().to_string(),
            r.belief.constant.to_string(),
            h.signal_var.to_string(),
            h.noise_var.to_string(),
        ];
        rec.extend((0..dim).map(|k| ls[if ls.len() == 1 { 0 } else { k }].to_string()));
        w.write_record(rec).map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| FboError::Run(format!("formatting beliefs CSV: {e}")))
}

/// server.csv rows (no header) of one run.
pub fn server_csv_body(label: &str, run: usize, records: &[RoundRecord]) -> Vec<u8> {
    let mut out = String::new();
    for r in records {
        // Blank where the server cannot know (secure aggregation: each agent clips its own).
        let (clipped, frac) = match r.clipped {
            Some(c) if r.selected > 0 => {
                (c.to_string(), (c as f64 / r.selected as f64).to_string())
            }
            Some(c) => (c.to_string(), 0.0.to_string()),
            None => (String::new(), String::new()),
        };
        // Agent lists are ';'-separated; "all" when the server took every agent.
        let list = |v: &[usize]| {
            v.iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(";")
        };
        let selected = r.selected_agents.as_deref().map_or("all".to_string(), list);
        out += &format!(
            "{label},{run},{},{},{clipped},{frac},{},{},{},{},{selected},{}\n",
            r.round,
            r.selected,
            r.a_t,
            r.phi_max,
            r.noise_sd,
            r.arrived,
            list(&r.missing_agents)
        );
    }
    out.into_bytes()
}

/// server_view.csv's header (`output.server_view`): one row per message the server received
/// in a secure round (step `advertise`: a member's public key; `masked`: its masked input;
/// `reveal-seed` / `reveal-key`: a survivor's share of member `about`'s self-mask seed or
/// secret key) and per sum it recovered (`sum`), the payload in hex.
pub const SERVER_VIEW_HEADER: &str = "algorithm,run,round,step,agent,about,payload\n";

/// server_view.csv rows (no header) of one run: what the server saw in each secure round, in
/// the protocol's order (adverts, masked inputs, reveals, the sum).
pub fn server_view_csv_body(label: &str, run: usize, records: &[RoundRecord]) -> Vec<u8> {
    let mut out = String::new();
    for r in records {
        let Some(v) = &r.view else { continue };
        let mut row = |step: &str, agent: String, about: String, payload: String| {
            out += &format!(
                "{label},{run},{},{step},{agent},{about},{payload}\n",
                r.round
            );
        };
        for a in &v.adverts {
            row(
                "advertise",
                a.id.to_string(),
                String::new(),
                hex::bytes(&a.public),
            );
        }
        for (agent, y) in &v.masked {
            row("masked", agent.to_string(), String::new(), hex::words(y));
        }
        for rev in &v.reveals {
            let share = |s: &crate::server::secagg::shamir::Share| {
                format!("{:016x}:{}", s.x, hex::words(&s.y))
            };
            for (about, s) in &rev.self_seeds {
                row(
                    "reveal-seed",
                    rev.from.to_string(),
                    about.to_string(),
                    share(s),
                );
            }
            for (about, s) in &rev.secrets {
                row(
                    "reveal-key",
                    rev.from.to_string(),
                    about.to_string(),
                    share(s),
                );
            }
        }
        if let Some(sum) = &v.sum {
            row("sum", String::new(), String::new(), hex::words(sum));
        }
    }
    out.into_bytes()
}

/// privacy.csv: one row per private algorithm, completed run, iteration, accountant and whom
/// the epsilon holds against (`against`: "outsiders" see only the released aggregates; "server"
/// is the server itself, which sees every message).
pub fn privacy_csv(
    spec: &Spec,
    curves: &[crate::run::runner::PrivacyCurve],
    done: &[(usize, usize)],
) -> Vec<u8> {
    // Every epsilon names what it is a guarantee for: the sampling, the neighbouring relation,
    // the rate it was accounted at (m / N for fixed-size sampling; 1 against a server that
    // draws the sample) and who added the noise.
    let mut out = String::from(
        "algorithm,run,iteration,accountant,sampling,adjacency,q,delta,noise,against,epsilon\n",
    );
    for &(a, run) in done {
        for c in curves.iter().filter(|c| c.algorithm == a) {
            let m = &c.mechanism;
            for (t, eps) in c.epsilon.iter().enumerate() {
                out += &format!(
                    "{},{run},{},{},{},{},{},{},{},{},{eps}\n",
                    spec.algorithms[a].label,
                    t + 1,
                    c.accountant,
                    m.sampling.name(),
                    m.adjacency.name(),
                    m.q,
                    spec.privacy.delta,
                    m.noise.name(),
                    c.against.name()
                );
            }
        }
    }
    out.into_bytes()
}

/// The columns the summary needs, read back from trace CSV text (parts may come from an
/// earlier, interrupted process, so the summary is always computed from the files). `path`
/// only names the source in messages.
pub struct SummaryInput {
    pub algorithm: String,
    pub run: i64,
    pub agent: i64,
    pub iteration: i64,
    pub simple_regret: Option<f64>,
    pub best_f: f64,
    pub best_metric: f64,
    pub cumulative_regret: Option<f64>,
    pub params_sent: u64,
    pub elapsed_s: Option<f64>,
    pub sim_clock_s: Option<f64>,
}

pub fn read_summary_input(bytes: &[u8], path: &Path) -> Result<Vec<SummaryInput>> {
    let mut rdr = csv::Reader::from_reader(bytes);
    let headers = rdr
        .headers()
        .map_err(|e| FboError::Run(format!("{}: {e}", path.display())))?
        .clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| FboError::Run(format!("{}: no column {name}", path.display())))
    };
    let (ca, ci, cs, cb, cm, cc) = (
        col("algorithm")?,
        col("iteration")?,
        col("simple_regret")?,
        col("best_f")?,
        col("best_metric")?,
        col("cumulative_regret")?,
    );
    let (cp, ce, ck) = (col("params_sent")?, col("elapsed_s")?, col("sim_clock_s")?);
    let (cr, cg) = (col("run")?, col("agent")?);
    let mut out = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| FboError::Run(format!("{}: {e}", path.display())))?;
        let num = |c: usize| -> Result<f64> {
            rec[c]
                .parse()
                .map_err(|_| FboError::Run(format!("{}: bad number {:?}", path.display(), &rec[c])))
        };
        let opt = |c: usize| -> Result<Option<f64>> {
            if rec[c].is_empty() {
                Ok(None)
            } else {
                num(c).map(Some)
            }
        };
        let int = |c: usize, what: &str| -> Result<i64> {
            rec[c]
                .parse()
                .map_err(|_| FboError::Run(format!("{}: bad {what} {:?}", path.display(), &rec[c])))
        };
        out.push(SummaryInput {
            algorithm: rec[ca].to_string(),
            run: int(cr, "run")?,
            agent: int(cg, "agent")?,
            iteration: rec[ci].parse().map_err(|_| {
                FboError::Run(format!("{}: bad iteration {:?}", path.display(), &rec[ci]))
            })?,
            simple_regret: opt(cs)?,
            best_f: num(cb)?,
            best_metric: num(cm)?,
            cumulative_regret: opt(cc)?,
            params_sent: rec[cp].parse().map_err(|_| {
                FboError::Run(format!(
                    "{}: bad params_sent {:?}",
                    path.display(),
                    &rec[cp]
                ))
            })?,
            elapsed_s: opt(ce)?,
            sim_clock_s: opt(ck)?,
        });
    }
    Ok(out)
}

/// Mean and standard error (sample standard deviation / sqrt(n); 0 for n = 1). Finite
/// values near f64's limits (a metric of 1e308) would overflow the sums: those are summed
/// scaled by the largest magnitude, so the mean of finite values is finite.
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let plain = mean_se_scaled(v, 1.0);
    if plain.0.is_finite() && plain.1.is_finite() || v.iter().any(|x| !x.is_finite()) {
        return plain;
    }
    let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let (m, se) = mean_se_scaled(v, scale);
    (m * scale, se * scale)
}

fn mean_se_scaled(v: &[f64], scale: f64) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|x| x / scale).sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v
        .iter()
        .map(|x| (x / scale - mean) * (x / scale - mean))
        .sum::<f64>()
        / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// summary.csv: per algorithm (in the given order) and iteration, mean and s.e. over runs and
/// target agents. The means are over a fixed set of agents: a (run, agent) of the algorithm
/// without a row at an iteration it has already passed (a site that missed rounds of a real
/// federation; an agent a budget stopped) enters with its last values (best-so-far, regret,
/// cumulative regret: it evaluated nothing more), counted in `carried`, and no timing. Before
/// its first row an agent is not counted. So a mean never jumps when an agent leaves or
/// returns.
pub fn summary_csv(rows: &[SummaryInput], order: &[String]) -> Result<Vec<u8>> {
    // Per algorithm: each (run, agent)'s rows by iteration, and every iteration seen.
    type Unit<'a> = BTreeMap<i64, &'a SummaryInput>;
    let mut units: BTreeMap<usize, BTreeMap<(i64, i64), Unit>> = BTreeMap::new();
    for r in rows {
        let Some(a) = order.iter().position(|l| *l == r.algorithm) else {
            continue;
        };
        units
            .entry(a)
            .or_default()
            .entry((r.run, r.agent))
            .or_default()
            .insert(r.iteration, r);
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| FboError::Run(format!("formatting summary CSV: {e}"));
    w.write_record([
        "algorithm",
        "iteration",
        "n",
        "mean_simple_regret",
        "se_simple_regret",
        "mean_best_f",
        "se_best_f",
        "mean_cumulative_regret",
        "se_cumulative_regret",
        "mean_best_metric",
        "se_best_metric",
        "params_sent",
        "mean_elapsed_s",
        "mean_sim_clock_s",
        "carried",
    ])
    .map_err(err)?;
    for (a, by_unit) in &units {
        let iterations: std::collections::BTreeSet<i64> =
            by_unit.values().flat_map(|u| u.keys().copied()).collect();
        for &it in &iterations {
            let (g, params, carried) = iteration_values(by_unit, it);
            write_summary_row(&mut w, &order[*a], it, &g, params, carried).map_err(err)?;
        }
    }
    w.into_inner()
        .map_err(|e| FboError::Run(format!("formatting summary CSV: {e}")))
}

/// The values one iteration's summary row averages, over every unit that has reached it: its
/// row there or, where it has none, its last earlier row (timing left out); the largest
/// params_sent among the rows present; how many were carried.
fn iteration_values(
    by_unit: &BTreeMap<(i64, i64), BTreeMap<i64, &SummaryInput>>,
    it: i64,
) -> ([Vec<f64>; 6], u64, usize) {
    let mut g: [Vec<f64>; 6] = Default::default();
    let (mut params, mut carried) = (0u64, 0usize);
    for unit in by_unit.values() {
        let (r, present) = match unit.get(&it) {
            Some(r) => (*r, true),
            None => match unit.range(..it).next_back() {
                Some((_, r)) => (*r, false),
                None => continue,
            },
        };
        g[0].extend(r.simple_regret);
        g[1].push(r.best_f);
        g[2].extend(r.cumulative_regret);
        g[3].push(r.best_metric);
        if present {
            g[4].extend(r.elapsed_s);
            g[5].extend(r.sim_clock_s);
            params = params.max(r.params_sent);
        } else {
            carried += 1;
        }
    }
    (g, params, carried)
}

fn write_summary_row(
    w: &mut csv::Writer<Vec<u8>>,
    label: &str,
    it: i64,
    g: &[Vec<f64>; 6],
    params: u64,
    carried: usize,
) -> std::result::Result<(), csv::Error> {
    // Regret columns stay empty where the objective's maximum is unknown.
    let pair = |v: &[f64]| {
        if v.is_empty() {
            (String::new(), String::new())
        } else {
            let (m, s) = mean_se(v);
            (m.to_string(), s.to_string())
        }
    };
    let (sm, ss) = pair(&g[0]);
    let (bm, bs) = mean_se(&g[1]);
    let (cm, cs) = pair(&g[2]);
    let (mm, ms) = mean_se(&g[3]);
    // Timing columns stay empty when the runs recorded no timing.
    let mean_or_empty = |v: &[f64]| {
        if v.is_empty() {
            String::new()
        } else {
            format!("{:.6}", mean_se(v).0)
        }
    };
    w.write_record([
        label.to_string(),
        it.to_string(),
        g[1].len().to_string(),
        sm,
        ss,
        bm.to_string(),
        bs.to_string(),
        cm,
        cs,
        mm.to_string(),
        ms.to_string(),
        params.to_string(),
        mean_or_empty(&g[4]),
        mean_or_empty(&g[5]),
        carried.to_string(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missed_iteration_carries_the_agents_last_values() {
        // Two agents of one run; agent 1 misses iteration 2 (a site down) and returns at 3.
        let trace = "algorithm,run,agent,iteration,simple_regret,best_f,best_metric,cumulative_regret,params_sent,elapsed_s,sim_clock_s\n\
                     a,0,0,1,4,1,1,4,10,0.5,\n\
                     a,0,1,1,2,3,3,2,10,0.5,\n\
                     a,0,0,2,1,4,4,5,20,0.5,\n\
                     a,0,0,3,1,4,4,6,30,0.5,\n\
                     a,0,1,3,0,5,5,2,30,0.5,\n";
        let rows = read_summary_input(trace.as_bytes(), Path::new("t.csv")).unwrap();
        let out = String::from_utf8(summary_csv(&rows, &["a".to_string()]).unwrap()).unwrap();
        let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(lines[0].last(), Some(&"carried"));
        // Iteration 2: both agents, agent 1 at its iteration-1 values (regret 2, best 3).
        let it2 = &lines[2];
        assert_eq!((it2[1], it2[2], it2[14]), ("2", "2", "1"), "{out}");
        assert_eq!(it2[3].parse::<f64>().unwrap(), 1.5); // (1 + 2) / 2
        assert_eq!(it2[5].parse::<f64>().unwrap(), 3.5); // (4 + 3) / 2
        assert_eq!(it2[7].parse::<f64>().unwrap(), 3.5); // (5 + 2) / 2
        // The carried agent's timing is left out; the present one's stays.
        assert_eq!(it2[12], "0.500000");
        for l in [&lines[1], &lines[3]] {
            assert_eq!((l[2], l[14]), ("2", "0"), "{out}");
        }
    }

    #[test]
    fn mean_and_standard_error() {
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        // sd = sqrt(5/3), se = sd / 2
        assert!((se - (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-15);
        assert_eq!(mean_se(&[7.0]), (7.0, 0.0));
        // Near f64's limit the plain sum overflows; the mean of finite values stays finite.
        let (m, se) = mean_se(&[1.7e308, 1.7e308, 1.5e308]);
        assert!(
            (m / (1.7e308 / 3.0 * 2.0 + 1.5e308 / 3.0) - 1.0).abs() < 1e-15,
            "{m}"
        );
        assert!(se.is_finite() && se > 0.0);
    }

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        write_atomic(&p, b"x\n1\n").unwrap();
        write_atomic(&p, b"x\n2\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "x\n2\n");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
