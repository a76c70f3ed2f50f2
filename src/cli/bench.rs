//! `fbo bench`: the speed figures docs/speed.md reports, measured on this machine. Benchmarks,
//! not tests: nothing here asserts a time.

use crate::acquisition::optimize::BoxSearch;
use crate::algorithm::agent::{Learner, SharedFeatures};
use crate::error::{FboError, Result};
use crate::math::rng::{Purpose, stream};
use crate::objective::Request;
use crate::objective::synthetic::landscapes;
use crate::privacy::{Accountant, Mechanism, Sampling};
use crate::run::runner::{RunOptions, run_spec};
use crate::spec::{ObjectiveKind, ObjectiveSpec, Spec};
use crate::surrogate::gp::{FitBudget, GpHyper, HyperBounds, HyperModel, HyperPrior, Kernel};
use crate::surrogate::own::OwnSettings;
use clap::Args;
use ndarray::Array1;
use rand_distr::{Distribution, StandardNormal};
use std::path::PathBuf;
use std::time::Instant;

pub struct BenchOptions {
    pub features: Vec<usize>,
    pub grid: usize,
    pub observations: usize,
    pub repeats: usize,
    pub configs: Vec<PathBuf>,
    pub tables: Vec<PathBuf>,
    /// (points CSV, landmine data) for the live SVM timing.
    pub landmine: Option<(PathBuf, PathBuf)>,
    /// Specs whose algorithms' BO overhead per agent-iteration to measure.
    pub iteration_cost: Vec<PathBuf>,
    /// Specs whose TS agents' GP refits to compare with a cheaper fit.
    pub fit_quality: Vec<PathBuf>,
}

/// BO overhead per agent-iteration of every algorithm of `path`: each run on one thread,
/// one after another, timed as the trace's elapsed_s at the last iteration (the target's
/// work after set-up: senders' simulations excluded) over iterations x acting agents.
/// Median over the spec's runs.
fn iteration_cost(path: &std::path::Path) -> Result<()> {
    use crate::run::runner::{run_one_shared, with_threads};
    let mut spec = Spec::load(path)?;
    spec.output.timing = true;
    let (_, lands) = crate::run::runner::prepare(&spec, 1)?;
    for (a, alg) in spec.algorithms.iter().enumerate() {
        let mut per = Vec::new();
        let mut agents = 0;
        for r in 0..spec.runs {
            let land = lands[r % lands.len()].clone();
            let senders = crate::algorithm::agent::SenderCache::default();
            let out = with_threads(Some(1), || {
                run_one_shared(&spec, a, r, land, Some(&senders))
            })??;
            let last = out
                .rows
                .iter()
                .filter(|row| row.iteration == spec.evaluations() as i64)
                .collect::<Vec<_>>();
            agents = last.len();
            let elapsed = last
                .iter()
                .filter_map(|row| row.elapsed_s)
                .fold(0.0, f64::max);
            per.push(elapsed * 1e3 / (spec.iterations * agents.max(1)) as f64);
        }
        per.sort_by(f64::total_cmp);
        println!(
            "{},{},{agents},{},{},{:.3}",
            path.display(),
            alg.label,
            spec.iterations,
            spec.runs,
            quantile(&per, 0.5)
        );
    }
    Ok(())
}

/// Mean milliseconds of one live landmine evaluation (training included) at the points of a
/// CSV (agent, C, gamma first), on one thread: decision-value AUC, then Platt AUC.
fn live_landmine(points: &std::path::Path, data: &std::path::Path) -> Result<()> {
    use crate::model::svm::SvmParams;
    use crate::objective::model::{AgentSplit, svm_auc, svm_platt_auc};
    let (fields, _) = crate::data::landmine::read(data)?;
    let text = std::fs::read_to_string(points).map_err(|e| FboError::io(points, e))?;
    let mut pts = Vec::new();
    for (i, line) in text.lines().skip(1).enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let parse = |s: &str| -> Result<f64> {
            s.parse().map_err(|_| {
                FboError::spec(points, format!("line {}", i + 2), "agent,C,gamma expected")
            })
        };
        let a = parse(f[0])? as usize;
        if a >= fields.len() {
            return Err(FboError::spec(
                points,
                format!("line {}", i + 2),
                "no such field",
            ));
        }
        pts.push((a, parse(f[1])?, parse(f[2])?));
    }
    let splits: Vec<AgentSplit> = fields
        .iter()
        .enumerate()
        .map(|(a, f)| AgentSplit::landmine(f, 0, a).0)
        .collect();
    println!(
        "# live landmine SVM evaluation, one thread, {} points of {}",
        pts.len(),
        points.display()
    );
    println!("metric,mean_ms,total_s");
    let t0 = Instant::now();
    for &(a, c, g) in &pts {
        std::hint::black_box(svm_auc(&splits[a], &SvmParams::new(c, g)));
    }
    let t = t0.elapsed().as_secs_f64();
    println!("auc,{:.3},{t:.3}", t * 1e3 / pts.len() as f64);
    let t0 = Instant::now();
    for (k, &(a, c, g)) in pts.iter().enumerate() {
        let mut rng = stream(0, k as u64, a as u64, Purpose::HyperFit);
        std::hint::black_box(svm_platt_auc(&splits[a], &SvmParams::new(c, g), &mut rng));
    }
    let t = t0.elapsed().as_secs_f64();
    println!("platt-auc,{:.3},{t:.3}", t * 1e3 / pts.len() as f64);
    Ok(())
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// Peak resident memory of this process so far, in MiB (Linux; None elsewhere).
pub fn peak_rss_mib() -> Option<f64> {
    crate::run::budget::proc_kb("/proc/self/status", "VmHWM:").map(|kb| kb / 1024.0)
}

/// The maximisation of a sampled function phi(x)^T w on the unit square, as TS and FTS do it
/// on a box (whole square) and the DP-FTS-DE server does it (best of the P = 4 quadrants), with
/// the default search (1000 candidates, L-BFGS from the best 20). Random weights, length scale
/// 0.1; median of 50 draws.
fn box_acquisition(features: &[usize]) -> Result<()> {
    use crate::acquisition::optimize::maximise;
    use crate::objective::Region;
    use crate::server::Partition;
    use crate::surrogate::rff::RandomFeatures;
    let search = BoxSearch {
        candidates: 1000,
        starts: 20,
    };
    println!(
        "# acquisition on a 2-D box: {} quasi-random candidates, L-BFGS-B from the best {} (median of 50)",
        search.candidates, search.starts
    );
    println!("M,whole_box_ms,server_P4_ms,evaluations_per_search");
    for &m in features {
        let mut rng = stream(11, m as u64, 0, Purpose::Acquisition);
        let (mut whole, mut server) = (Vec::new(), Vec::new());
        let mut evals = 0usize;
        let part = Partition::new(4, 2);
        for _ in 0..50 {
            let rf = RandomFeatures::draw(m, 2, Kernel::Se, &[0.1], 1.0, true, &mut rng);
            let w: Vec<f64> = (0..m).map(|_| StandardNormal.sample(&mut rng)).collect();
            let mut acq = |x: &[f64], g: Option<&mut [f64]>| {
                evals += 1;
                rf.value_grad(x, &w, g)
            };
            let t0 = Instant::now();
            std::hint::black_box(maximise(&mut acq, &Region::unit(2), &[], search, &mut rng)?);
            whole.push(t0.elapsed().as_secs_f64() * 1e3);
            let t0 = Instant::now();
            for i in 0..4 {
                let mut acq = |x: &[f64], g: Option<&mut [f64]>| rf.value_grad(x, &w, g);
                std::hint::black_box(maximise(
                    &mut acq,
                    &part.bounds(i, 2),
                    &[],
                    search,
                    &mut rng,
                )?);
            }
            server.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        whole.sort_by(f64::total_cmp);
        server.sort_by(f64::total_cmp);
        println!(
            "{m},{:.3},{:.3},{}",
            quantile(&whole, 0.5),
            quantile(&server, 0.5),
            evals / 50
        );
    }
    Ok(())
}

/// How much marginal likelihood a cheaper GP fit gives up. Replays the TS agents of `path`
/// (run 0 of each algorithm `ts`): at every refit point (n a multiple of refit_every) fits the
/// observations so far with the spec's budget and with one refinement (plus the warm start),
/// each warm-started from its own previous optimum and seeded alike, and reports the gap in
/// log marginal likelihood and the time of each.
fn fit_quality(path: &std::path::Path) -> Result<()> {
    use crate::run::runner::run_one;
    use crate::surrogate::gp::{
        Distances, fit_hyperparameters, log_marginal_likelihood, standardize,
    };
    let mut spec = Spec::load(path)?;
    spec.output.timing = false;
    let lands = spec.landscapes()?;
    let own = spec.surrogate.own.clone();
    let Some(every) = own.refit_every else {
        println!("{},no refits", path.display());
        return Ok(());
    };
    let cheap = FitBudget {
        starts: own.fit.starts,
        restarts: 1,
    };
    let Some(a) = spec
        .algorithms
        .iter()
        .position(|a| a.kind == crate::spec::AlgorithmKind::Ts)
    else {
        println!("{},no ts algorithm", path.display());
        return Ok(());
    };
    let out = run_one(&spec, a, 0, lands[0].clone())?;
    let (mut gaps, mut same, mut t_full, mut t_cheap) = (Vec::new(), 0usize, 0.0, 0.0);
    let agents: std::collections::BTreeSet<usize> = out.rows.iter().map(|r| r.agent).collect();
    for agent in agents {
        let rows: Vec<_> = out.rows.iter().filter(|r| r.agent == agent).collect();
        let (mut warm_full, mut warm_cheap) = (None, None);
        for n in (every..=rows.len()).step_by(every) {
            let d = rows[0].x.len();
            let x = ndarray::Array2::from_shape_fn((n, d), |(i, k)| rows[i].x[k]);
            let ys: Vec<f64> = rows[..n].iter().map(|r| r.y).collect();
            let y = if own.normalize_y {
                standardize(&ys)
            } else {
                Array1::from(ys)
            };
            let fit = |budget: FitBudget, warm: Option<&GpHyper>| {
                let mut rng = stream(spec.seed, n as u64, agent as u64, Purpose::HyperFit);
                let t0 = Instant::now();
                let h = fit_hyperparameters(x.view(), y.view(), &own.model, budget, warm, &mut rng);
                (h, t0.elapsed().as_secs_f64())
            };
            let ((hf, tf), (hc, tc)) = (
                fit(own.fit, warm_full.as_ref()),
                fit(cheap, warm_cheap.as_ref()),
            );
            t_full += tf;
            t_cheap += tc;
            let dist = Distances::new(x.view(), own.model.ard.applies(n, d));
            let lml = |h: &Option<GpHyper>| {
                h.as_ref()
                    .and_then(|h| log_marginal_likelihood(&dist, y.view(), h, false))
                    .map_or(f64::NEG_INFINITY, |v| v.0)
            };
            let gap = lml(&hf) - lml(&hc);
            if hf == hc {
                same += 1;
            }
            gaps.push(gap);
            warm_full = hf.or(warm_full);
            warm_cheap = hc.or(warm_cheap);
        }
    }
    gaps.sort_by(f64::total_cmp);
    let k = gaps.len().max(1);
    println!(
        "{},{},{},{:.3},{:.2e},{:.2e},{:.2e},{:.1},{:.1}",
        path.display(),
        gaps.len(),
        own.fit.restarts,
        same as f64 / k as f64,
        gaps.iter().sum::<f64>() / k as f64,
        quantile(&gaps, 0.99),
        gaps.last().copied().unwrap_or(0.0),
        t_full * 1e3 / k as f64,
        t_cheap * 1e3 / k as f64
    );
    Ok(())
}

/// `n` evaluations of `echo '{"metric": 1}'` (a command that does nothing) through a
/// command objective with its journal on disk, alternating with `n` bare starts of the same
/// command; prints the median and mean milliseconds of each and their difference, which is
/// what fbo adds to a command's own time (request JSON, environment, pipes, parsing, the
/// synced journal line).
pub fn command_overhead(n: usize) -> Result<()> {
    use crate::objective::command::{CommandRunner, CommandSettings, OnFailure};
    use crate::objective::{Landscape, Param, Point, Space};
    use std::process::{Command, Stdio};
    let metric = r#"{"metric": 1}"#;
    let settings = CommandSettings {
        argv: Some(vec!["echo".into(), metric.into()]),
        workdir: std::env::temp_dir(),
        sign: 1.0,
        metric_name: "metric".into(),
        timeout_s: 60.0,
        retries: 0,
        concurrency: 1,
        on_failure: OnFailure::Stop,
    };
    let settings_argv = settings.argv.clone();
    let space = std::sync::Arc::new(Space::Box(vec![Param::linear("x", 0.0, 1.0)]));
    let codec = space.codec();
    let land = Landscape::measured(
        space,
        1,
        Some(CommandRunner::new(settings, codec.clone())),
        codec,
        OnFailure::Stop,
    );
    let dir = tempfile_dir()?;
    let path = dir.join("evaluations.jsonl");
    let origin = crate::objective::journal::Origin {
        command: settings_argv,
        metric: "metric".into(),
        direction: "maximize".into(),
        params: vec!["x".into()],
        choices: Vec::new(),
    };
    land.attach_journal(std::sync::Arc::new(
        crate::objective::journal::Journal::open(&path, &origin)?,
    ));
    let (mut fbo_ms, mut bare_ms) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let t0 = Instant::now();
        let p = Point::free(vec![(i as f64 + 0.5) / n as f64]);
        land.evaluate(&Request::new("bench", 0, 0, i as i64), &p)?;
        fbo_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        let t0 = Instant::now();
        let out = Command::new("echo")
            .arg(metric)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| FboError::Run(format!("echo: {e}")))?;
        bare_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(out);
    }
    // Ours to remove: the journal and the folder made for it.
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir(&dir);
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v.iter().sum::<f64>() / v.len() as f64)
    };
    let (fm, fa) = stats(&mut fbo_ms);
    let (bm, ba) = stats(&mut bare_ms);
    println!("# {n} evaluations of `echo '{metric}'`, one at a time");
    println!("path,median_ms,mean_ms");
    println!("fbo (command objective, journal synced),{fm:.3},{fa:.3}");
    println!("bare start and wait,{bm:.3},{ba:.3}");
    println!("overhead,{:.3},{:.3}", fm - bm, fa - ba);
    Ok(())
}

/// A fresh folder under the system's temporary directory.
fn tempfile_dir() -> Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("fbo-bench-{}-{nanos}", std::process::id()));
    // create_dir, not create_dir_all: a folder already there is not ours.
    std::fs::create_dir(&dir).map_err(|e| FboError::io(&dir, e))?;
    Ok(dir)
}

pub fn run(opts: &BenchOptions) -> Result<()> {
    if !opts.fit_quality.is_empty() {
        println!("# GP refits of the TS agents of run 0: the spec's budget against one refinement");
        println!(
            "spec,refits,restarts,same_hyperparameters,mean_lml_gap,p99_lml_gap,max_lml_gap,ms_per_fit,ms_per_cheap_fit"
        );
        for p in &opts.fit_quality {
            fit_quality(p)?;
        }
        return Ok(());
    }
    if !opts.iteration_cost.is_empty() {
        println!("# BO overhead per agent-iteration, one thread, median over the spec's runs");
        println!("spec,algorithm,agents,iterations,runs,ms_per_agent_iteration");
        for p in &opts.iteration_cost {
            iteration_cost(p)?;
        }
        return Ok(());
    }
    own_sample_iteration(opts)?;
    box_acquisition(&opts.features)?;
    if let Some((points, data)) = &opts.landmine {
        live_landmine(points, data)?;
    }
    privacy_accounting()?;
    if !opts.tables.is_empty() {
        table_loading(&opts.tables)?;
    }
    if !opts.configs.is_empty() {
        spec_wall_times(&opts.configs)?;
    }
    Ok(())
}

/// The own-sample agent-iteration's time per feature count M on the synthetic grid (and the
/// message branch's argmax), over `opts.repeats` objectives.
fn own_sample_iteration(opts: &BenchOptions) -> Result<()> {
    let obj = ObjectiveSpec {
        targets: vec![0],
        kind: ObjectiveKind::SyntheticFts,
        grid: opts.grid,
        length_scale: 0.03,
        noise_var: 0.01,
        functions: opts.repeats,
        d: 0.02,
        params: Vec::new(),
        per_dim: None,
    };
    let lands = landscapes(&obj, 1, 12345)?;
    println!(
        "# own-sample agent-iteration: grid {}, observations 1..={}, refit every 5 (10 starts screened, 3 optimised + warm start), {} repeats",
        opts.grid, opts.observations, opts.repeats
    );
    println!("M,M_target,iterations,median_ms,mean_ms,p90_ms,max_ms,message_argmax_median_ms");
    for &m in &opts.features {
        let settings = OwnSettings {
            features: m,
            normalize_features: true,
            refit_every: Some(5),
            fit: FitBudget {
                starts: 10,
                restarts: 3,
            },
            model: HyperModel {
                kernel: Kernel::Se,
                ard: crate::surrogate::gp::Ard::Off,
                bounds: HyperBounds {
                    length_scale: (0.005, 2.0),
                    signal_var: (0.05, 20.0),
                    noise_var: (1e-6, 1.0),
                },
                prior: HyperPrior::None,
                mean: crate::surrogate::gp::MeanFn::Zero,
            },
            initial: GpHyper::isotropic(Kernel::Se, 0.03, 1.0, 0.01),
            normalize_y: true,
            sampler: crate::surrogate::own::OwnSampler::Rff,
            known_noise: Vec::new(),
            fit_points: None,
        };
        let mut times = Vec::new();
        for (rep, land) in lands.iter().enumerate() {
            let search = BoxSearch {
                candidates: 1000,
                starts: 20,
            };
            let mut learner = Learner::new(0, land.space.clone(), search, settings.clone(), 7, rep);
            let mut noise = stream(7, rep as u64, 0, Purpose::Noise);
            let grid = land.grid().expect("synthetic grid");
            let first = grid.at(rep % grid.len());
            let y = land.observe(&Request::new("bench", rep, 0, 0), &first, &mut noise)?;
            learner.add(first, y);
            while learner.n_obs() < opts.observations {
                let t0 = Instant::now();
                let p = learner.thompson()?;
                times.push(t0.elapsed().as_secs_f64() * 1e3);
                let req = Request::new("bench", rep, 0, learner.n_obs() as i64);
                let y = land.observe(&req, &p, &mut noise)?;
                learner.add(p, y);
            }
        }
        // Message branch: argmax over the grid of phi(x)^T omega with the shared features.
        let shared = SharedFeatures::draw(
            &lands[0].space,
            m,
            Kernel::Se,
            &[0.03],
            1.0,
            1e-6,
            true,
            7,
            0,
        );
        let mut rng = stream(7, 0, 0, Purpose::Message);
        let mut msg_times = Vec::new();
        for _ in 0..200 {
            let omega = Array1::from_iter((0..m).map(|_| StandardNormal.sample(&mut rng)));
            let t0 = Instant::now();
            std::hint::black_box(shared.argmax(&omega));
            msg_times.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        msg_times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "{m},{m},{},{:.4},{:.4},{:.4},{:.4},{:.5}",
            times.len(),
            quantile(&times, 0.5),
            mean,
            quantile(&times, 0.9),
            times[times.len() - 1],
            quantile(&msg_times, 0.5)
        );
    }
    Ok(())
}

/// Each accountant's epsilon and time at q = 0.25, z = 1, delta = 1e-5, 1000 steps.
fn privacy_accounting() -> Result<()> {
    println!("# privacy accounting: q = 0.25, z = 1, delta = 1e-5, 1000 steps (median of 5)");
    println!("accountant,epsilon,median_ms");
    let mech = Mechanism {
        q: 0.25,
        z: 1.0,
        steps: 1000,
        sampling: Sampling::Poisson,
        adjacency: crate::privacy::Adjacency::AddRemove,
        noise: crate::privacy::Noise::Gaussian,
    };
    for acc in Accountant::ALL {
        let mut times = Vec::new();
        let mut eps = f64::NAN;
        for _ in 0..5 {
            let t0 = Instant::now();
            eps = crate::privacy::epsilon(acc, &mech, 1e-5)
                .map_err(FboError::Run)?
                .epsilon;
            times.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!("{acc},{eps:.4},{:.2}", quantile(&times, 0.5));
    }
    Ok(())
}

/// Time to read, check and build each response table's landscape.
fn table_loading(tables: &[std::path::PathBuf]) -> Result<()> {
    println!("# table loading (read, check, build the landscape; all agents)");
    println!("table,agents,points,load_s");
    for path in tables {
        let meta = crate::objective::table::read_meta(path)?;
        let agents: Vec<usize> = (0..meta.agents).collect();
        let t0 = Instant::now();
        let land = crate::objective::table::landscape(&meta, &agents, 0.0)?;
        println!(
            "{},{},{},{:.3}",
            path.display(),
            land.agents(),
            land.grid().map_or(0, |g| g.len()),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Wall time and peak memory of each spec, run on all threads into a temporary folder.
fn spec_wall_times(configs: &[std::path::PathBuf]) -> Result<()> {
    println!("# spec wall time (all threads of this machine)");
    println!("spec,runs,wall_s,peak_rss_mib");
    for path in configs {
        let spec = Spec::load(path)?;
        let out =
            std::env::temp_dir().join(format!("fbo-bench-{}-{}", spec.name, std::process::id()));
        let report = run_spec(
            &spec,
            &RunOptions {
                out: out.clone(),
                threads: None,
                quiet: true,
                nested: true,
                progress: None,
                overwrite: false,
                work: crate::run::runner::Work::All,
                reuse: Vec::new(),
            },
        )?;
        std::fs::remove_dir_all(&out).map_err(|e| FboError::io(&out, e))?;
        println!(
            "{},{},{:.2},{:.0}",
            path.display(),
            report.runs_total,
            report.wall_s,
            peak_rss_mib().unwrap_or(f64::NAN)
        );
    }
    Ok(())
}

/// One round of secure aggregation (`crate::server::secagg::round_among`) among `n` members
/// each masking a vector of `len` words with `neighbours` others (None: all), every member
/// simulated in this process (members in parallel on its threads), and with `dropped` of them
/// dropping out after masking. Prints milliseconds per round (median of
/// `repeats`) and the bytes each step puts on the wire.
pub fn secure_round(
    n: usize,
    len: usize,
    dropped: usize,
    neighbours: Option<usize>,
    repeats: usize,
) -> Result<()> {
    use crate::server::secagg::{Neighbourhoods, SecureSizes, round_among};
    let secure = crate::spec::SecureSpec {
        dropout: crate::spec::SecureSpec::DEFAULT_DROPOUT,
        neighbours,
    };
    let threshold = secure.threshold(n);
    if n < 2 || dropped > n - threshold {
        return Err(FboError::spec(
            "fbo bench",
            "--secure-round",
            format!(
                "needs at least 2 members and at most {} dropped of {n} (the default threshold is {threshold})",
                n.saturating_sub(threshold)
            ),
        ));
    }
    if neighbours.is_some_and(|k| !crate::spec::SecureSpec::neighbours_ok(k)) {
        return Err(FboError::spec(
            "fbo bench",
            "--secure-round",
            "K, the neighbours each member masks with, must be an even number >= 2",
        ));
    }
    let ids: Vec<usize> = (0..n).collect();
    let around = |r: usize| Neighbourhoods::of_round(&secure, &ids, || [r as u8; 32]);
    let inputs: Vec<Option<Vec<u64>>> = (0..n)
        .map(|i| (i >= dropped).then(|| (0..len as u64).map(|k| k * 7 + i as u64).collect()))
        .collect();
    let mut times = Vec::with_capacity(repeats);
    // With neighbourhoods a round is lost when the dropouts leave a neighbourhood below its
    // threshold or split the survivors: counted, not refused (that is what is measured).
    let mut completed = 0;
    for r in 0..repeats {
        let mut cohort: Vec<(usize, crate::math::rng::Rng)> = (0..n)
            .map(|a| (a, stream(r as u64, 0, a as u64, Purpose::SecureAggregation)))
            .collect();
        let around = around(r);
        let start = Instant::now();
        let (sum, _) = round_among(&mut cohort, &inputs, len, threshold, &around);
        times.push(start.elapsed().as_secs_f64() * 1e3);
        completed += usize::from(sum.is_some());
    }
    if neighbours.is_none() && completed < repeats {
        return Err(FboError::Run(
            "a round of plain secure aggregation within its dropout bound did not complete".into(),
        ));
    }
    times.sort_by(f64::total_cmp);
    let size = around(0).graph.neighbourhood_size();
    let sizes = SecureSizes::of(n, len, dropped, size - 1);
    println!(
        "# secure aggregation, one round, every member in this process, members in parallel on the process's threads (RAYON_NUM_THREADS)"
    );
    println!(
        "members,neighbours,words,dropped,threshold,rounds,completed,median_ms,advertise_bytes,shares_bytes,masked_bytes,reveal_bytes,total_bytes,plain_bytes"
    );
    println!(
        "{n},{},{len},{dropped},{threshold},{repeats},{completed},{:.2},{},{},{},{},{},{}",
        size - 1,
        times[times.len() / 2],
        sizes.advertise,
        sizes.shares,
        sizes.masked,
        sizes.reveal,
        sizes.total(),
        (n - dropped) * len * 8
    );
    Ok(())
}

#[derive(Args)]
pub struct BenchArgs {
    /// Values of M (= M_target) to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "50,100,200")]
    features: Vec<usize>,
    /// Points of the 1-D grid the synthetic per-iteration benchmark searches.
    #[arg(long, default_value_t = 1000)]
    grid: usize,
    /// Observations to grow each agent to.
    #[arg(long, default_value_t = 60)]
    observations: usize,
    /// Independent functions per M.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Specs to time end to end.
    #[arg(long = "config")]
    configs: Vec<PathBuf>,
    /// Tables (table.toml) whose loading to time.
    #[arg(long = "table")]
    tables: Vec<PathBuf>,
    /// Time live landmine SVM evaluations (decision-value and Platt AUC, one thread) at
    /// the points of this CSV (columns agent, C, gamma, ...; e.g.
    /// tests/fixtures/landmine_platt_reference.csv) on the data of --landmine-data.
    #[arg(long = "landmine-points", requires = "landmine_data")]
    landmine_points: Option<PathBuf>,
    /// The landmine data (landmine.csv) for --landmine-points.
    #[arg(long = "landmine-data")]
    landmine_data: Option<PathBuf>,
    /// Measure only the BO overhead per agent-iteration of every algorithm of these specs
    /// (one thread; e.g. configs/bench-landmine-dp.toml, configs/bench-landmine-fts.toml).
    #[arg(long = "iteration-cost")]
    iteration_cost: Vec<PathBuf>,
    /// Measure only how much marginal likelihood a cheaper GP fit (one refinement instead
    /// of the spec's) gives up on the refits of these specs' TS agents.
    #[arg(long = "fit-quality")]
    fit_quality: Vec<PathBuf>,
    /// Measure only the cost of N command evaluations of a `true`-like command (echo of a
    /// metric) through fbo's protocol and journal, against starting it bare.
    #[arg(long = "command-overhead", value_parser = clap::value_parser!(u32).range(1..=100000))]
    command_overhead: Option<u32>,
    /// Measure only one round of secure aggregation (server.secure) among N members
    /// masking W words each, D of them dropping out after masking: N,W,D (e.g. 100,400,30);
    /// N,W,D,K with each member masking with K neighbours (server.secure_neighbours).
    #[arg(long = "secure-round", value_delimiter = ',')]
    secure_round: Option<Vec<usize>>,
}

pub fn cmd_bench(a: BenchArgs) -> Result<()> {
    let BenchArgs {
        features,
        grid,
        observations,
        repeats,
        configs,
        tables,
        landmine_points,
        landmine_data,
        iteration_cost,
        fit_quality,
        command_overhead,
        secure_round,
    } = a;
    if let Some(n) = command_overhead {
        return self::command_overhead(n as usize);
    }
    if let Some(v) = secure_round {
        let (n, words, dropped, neighbours) = match v[..] {
            [n, w, d] => (n, w, d, None),
            [n, w, d, k] => (n, w, d, Some(k)),
            _ => {
                return Err(FboError::spec(
                    "fbo bench",
                    "--secure-round",
                    format!("takes three numbers N,W,D or four N,W,D,K, got {}", v.len()),
                ));
            }
        };
        return self::secure_round(n, words, dropped, neighbours, repeats.max(5));
    }
    if features.contains(&0) || grid < 2 || observations < 2 || repeats < 1 {
        return Err(FboError::spec(
            "fbo bench",
            "",
            "--features must be >= 1, --grid >= 2, --observations >= 2, --repeats >= 1",
        ));
    }
    run(&BenchOptions {
        features,
        grid,
        observations,
        repeats,
        configs,
        tables,
        landmine: landmine_points.zip(landmine_data),
        iteration_cost,
        fit_quality,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn bench_features_parse_as_their_help_shows() {
        let cli = Cli::try_parse_from(["fbo", "bench", "--features", "50,100,200"]).unwrap();
        let Command::Bench(BenchArgs { features, .. }) = cli.command else {
            panic!("not bench");
        };
        assert_eq!(features, vec![50, 100, 200]);
    }
}
