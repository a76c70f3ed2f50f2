//! What is optimised: the objective's kind and parameters, its search space (a grid or a box
//! of named hyperparameters), and the checks of each kind (tables, live models, commands).

use super::*;
use crate::objective::function::Heterogeneity;
pub use crate::objective::settings::{ObjectiveKind, ObjectiveSpec};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawObjective {
    kind: String,
    grid: Option<i64>,
    length_scale: Option<f64>,
    noise_var: Option<f64>,
    functions: Option<i64>,
    d: Option<f64>,
    heterogeneous: Option<bool>,
    alpha: Option<f64>,
    table: Option<String>,
    agents: Option<Vec<i64>>,
    targets: Option<Vec<i64>>,
    function: Option<String>,
    dimension: Option<i64>,
    heterogeneity: Option<f64>,
    embed: Option<i64>,
    shift: Option<f64>,
    rotation: Option<f64>,
    bounds: Option<RawBounds>,
    dataset: Option<String>,
    data: Option<String>,
    split: Option<String>,
    split_seed: Option<i64>,
    svm_stopping: Option<String>,
    epochs: Option<i64>,
    batch_size: Option<i64>,
    metric: Option<String>,
    hyperparameters: Option<Vec<RawParam>>,
    command: Option<Vec<String>>,
    workdir: Option<String>,
    direction: Option<String>,
    metric_name: Option<String>,
    timeout_s: Option<f64>,
    retries: Option<i64>,
    concurrency: Option<i64>,
    on_failure: Option<String>,
}

/// `objective.bounds`: one [low, high] for every axis of the function, or one per axis.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawBounds {
    Every(Vec<f64>),
    PerAxis(Vec<Vec<f64>>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawParam {
    name: String,
    low: Option<f64>,
    high: Option<f64>,
    scale: Option<String>,
    integer: Option<bool>,
    choices: Option<Vec<String>>,
}

impl RawObjective {
    /// Whether `objective.concurrency` was written (its default follows `parallel`).
    pub(super) fn concurrency_given(&self) -> bool {
        self.concurrency.is_some()
    }
}

pub(super) fn check_objective(c: &Check, raw: Option<RawObjective>) -> Result<ObjectiveSpec> {
    let Some(mut o) = raw else {
        return Err(c.err(
            "objective",
            "missing [objective] table (kind = \"synthetic-fts\" or \"synthetic-dp\")",
        ));
    };
    let ids = |key: &str, v: Option<Vec<i64>>| agent_ids(c, key, v);
    let targets = ids("objective.targets", o.targets.take())?;
    let measured = o.kind == "command" || o.kind == "external";
    refuse_foreign_keys(c, &o, measured)?;
    if o.kind == "function" || o.kind == "model" || measured {
        return check_searched_box(c, o, targets, measured, &ids);
    }
    if o.kind == "table" {
        return check_table(c, o, targets, &ids);
    }
    check_synthetic(c, o, targets)
}

/// A list of distinct agent ids (`objective.targets`, `objective.agents`).
fn agent_ids(c: &Check, key: &str, v: Option<Vec<i64>>) -> Result<Option<Vec<usize>>> {
    let Some(v) = v else { return Ok(None) };
    if v.is_empty() {
        return Err(c.err(key, "must list at least one agent"));
    }
    let mut out: Vec<usize> = Vec::new();
    for (i, a) in v.iter().enumerate() {
        if *a < 0 || out.contains(&(*a as usize)) {
            return Err(c.err(
                &format!("{key}[{i}]"),
                format!("must be a distinct agent id >= 0, got {a}"),
            ));
        }
        out.push(*a as usize);
    }
    Ok(Some(out))
}

/// A key of `[objective]` that its kind does not read is refused, naming the kinds that do.
fn refuse_foreign_keys(c: &Check, o: &RawObjective, measured: bool) -> Result<()> {
    if o.kind != "table" && o.table.is_some() {
        return Err(c.err("objective.table", "applies only to kind = \"table\""));
    }
    if o.kind != "table" && o.kind != "model" && o.agents.is_some() {
        return Err(c.err(
            "objective.agents",
            "applies only to kind = \"table\" or \"model\"",
        ));
    }
    if o.kind != "function" {
        c.refuse_set(
            "objective",
            &[
                ("function", o.function.is_some()),
                ("dimension", o.dimension.is_some()),
                ("heterogeneity", o.heterogeneity.is_some()),
                ("embed", o.embed.is_some()),
                ("shift", o.shift.is_some()),
                ("rotation", o.rotation.is_some()),
                ("bounds", o.bounds.is_some()),
            ],
            "applies only to kind = \"function\"",
        )?;
    }
    if !measured {
        c.refuse_set(
            "objective",
            &[
                ("command", o.command.is_some()),
                ("workdir", o.workdir.is_some()),
                ("direction", o.direction.is_some()),
                ("metric_name", o.metric_name.is_some()),
                ("timeout_s", o.timeout_s.is_some()),
                ("retries", o.retries.is_some()),
                ("concurrency", o.concurrency.is_some()),
                ("on_failure", o.on_failure.is_some()),
            ],
            "applies only to kind = \"command\" (and \"external\")",
        )?;
    }
    if o.kind != "model" {
        c.refuse_set(
            "objective",
            &[
                ("dataset", o.dataset.is_some()),
                ("data", o.data.is_some()),
                ("split", o.split.is_some()),
                ("split_seed", o.split_seed.is_some()),
                ("svm_stopping", o.svm_stopping.is_some()),
                ("epochs", o.epochs.is_some()),
                ("batch_size", o.batch_size.is_some()),
                ("metric", o.metric.is_some()),
                ("hyperparameters", o.hyperparameters.is_some() && !measured),
            ],
            "applies only to kind = \"model\"",
        )?;
    }
    Ok(())
}

/// The kinds searched on a box of hyperparameters (or a grid over it): a closed-form
/// function, a dataset's model trained live, a user's program, results told by hand.
fn check_searched_box(
    c: &Check,
    mut o: RawObjective,
    targets: Option<Vec<usize>>,
    measured: bool,
    ids: &IdList,
) -> Result<ObjectiveSpec> {
    let msg = format!(
        "does not apply to kind = \"{}\" (no functions are drawn; the surrogate's length scale is surrogate.length_scale)",
        o.kind
    );
    c.refuse_set(
        "objective",
        &[
            ("functions", o.functions.is_some()),
            ("d", o.d.is_some()),
            ("alpha", o.alpha.is_some()),
            ("heterogeneous", o.heterogeneous.is_some()),
            ("length_scale", o.length_scale.is_some()),
        ],
        &msg,
    )?;
    // grid = n: a grid of n points per hyperparameter; absent: the continuous box.
    let per_dim = match o.grid {
        None => None,
        Some(_) => Some(c.int("objective.grid", o.grid, 2, 2, 100_000)?),
    };
    let (kind, params) = if o.kind == "function" {
        check_function(c, &mut o, per_dim)?
    } else if measured {
        check_command(c, &mut o)?
    } else {
        check_model(c, &mut o, ids)?
    };
    if let Some(n) = per_dim {
        if let Some(p) = params.iter().find(|p| p.is_categorical()) {
            return Err(c.err(
                "objective.grid",
                format!(
                    "a grid of numbers cannot hold the categorical \"{}\": leave grid out to search the box (every choice is tried there)",
                    p.name
                ),
            ));
        }
        let points = (n as u128).saturating_pow(params.len() as u32);
        if points > 1_000_000 {
            return Err(c.err(
                "objective.grid",
                format!(
                    "{n} points per hyperparameter make {points} grid points over {} hyperparameters; at most 1000000 (leave grid out to search the continuous box)",
                    params.len()
                ),
            ));
        }
    }
    Ok(ObjectiveSpec {
        kind,
        targets: targets.unwrap_or_default(),
        grid: 0,
        // Only the default of surrogate.length_scale here, in unit coordinates.
        length_scale: 0.1,
        noise_var: if measured {
            if o.noise_var.is_some() {
                return Err(c.err(
                    "objective.noise_var",
                    "does not apply to a measured objective: the metric it reports is the observation",
                ));
            }
            0.0
        } else {
            c.non_negative("objective.noise_var", o.noise_var, 0.0)?
        },
        functions: 1,
        d: 0.0,
        params,
        per_dim,
    })
}

/// `kind = "function"`: the function, its dimension, heterogeneity and inert axes.
fn check_function(
    c: &Check,
    o: &mut RawObjective,
    per_dim: Option<usize>,
) -> Result<(ObjectiveKind, Vec<Param>)> {
    let name = o.function.take().ok_or_else(|| {
        c.err(
            "objective.function",
            format!("missing: one of {}", Function::NAMES),
        )
    })?;
    // Rosenbrock's sum runs over neighbouring coordinates: it needs two.
    let lo = if name == "rosenbrock" { 2 } else { 1 };
    let dim = match (Function::scalable(&name), o.dimension) {
        (true, None) => {
            return Err(c.err(
                "objective.dimension",
                format!(
                    "missing: \"{name}\" is defined in any dimension; say how many ({lo} to 50)"
                ),
            ));
        }
        (true, Some(_)) => Some(c.int("objective.dimension", o.dimension, lo, lo, 50)?),
        (false, Some(_)) => {
            return Err(c.err(
                "objective.dimension",
                format!(
                    "applies only to the functions defined in any dimension ({}); \"{name}\" has its own",
                    Function::SCALABLE
                ),
            ));
        }
        (false, None) => None,
    };
    let f = Function::parse(&name, dim).ok_or_else(|| {
        c.err(
            "objective.function",
            format!("unknown function \"{name}\"; allowed: {}", Function::NAMES),
        )
    })?;
    let heterogeneity = check_heterogeneity(c, o)?;
    let bounds = check_bounds(c, o.bounds.take(), f)?;
    // Unwritten, the total is the function's own dimension: no inert axes.
    let d = f.dim() as i64;
    let total = c.int("objective.embed", o.embed, d, d, 200)?;
    if per_dim.is_some() && total > f.dim() {
        return Err(c.err(
            "objective.embed",
            "does not go with objective.grid: inert axes are searched on the box",
        ));
    }
    let inert = total - f.dim();
    Ok((
        ObjectiveKind::Function {
            function: f,
            bounds: bounds.clone(),
            heterogeneity,
            inert,
        },
        crate::objective::function::embedded_params(f, &bounds, inert),
    ))
}

/// `kind = "table"`: a response table written by `fbo tabulate` or `fbo import`.
fn check_table(
    c: &Check,
    mut o: RawObjective,
    targets: Option<Vec<usize>>,
    ids: &IdList,
) -> Result<ObjectiveSpec> {
    c.refuse_set(
        "objective",
        &[
            ("grid", o.grid.is_some()),
            ("functions", o.functions.is_some()),
            ("d", o.d.is_some()),
            ("alpha", o.alpha.is_some()),
        ],
        "does not apply to kind = \"table\" (the table fixes the domain)",
    )?;
    let rel = o.table.take().ok_or_else(|| {
        c.err(
            "objective.table",
            "missing: the table.toml written by `fbo tabulate`, relative to this spec",
        )
    })?;
    let base = c.file.parent().unwrap_or(Path::new("."));
    let meta = crate::objective::table::read_meta(&base.join(&rel))?;
    let agents = match ids("objective.agents", o.agents.take())? {
        Some(list) => {
            if let Some(a) = list.iter().find(|&&a| a >= meta.agents) {
                return Err(c.err(
                    "objective.agents",
                    format!("agent {a} is not in the table (0..{})", meta.agents - 1),
                ));
            }
            list
        }
        None => (0..meta.agents).collect(),
    };
    let points = meta.points;
    Ok(ObjectiveSpec {
        kind: ObjectiveKind::Table { meta, agents },
        targets: targets.unwrap_or_default(),
        grid: points,
        length_scale: c.positive("objective.length_scale", o.length_scale, 0.01)?,
        noise_var: c.non_negative("objective.noise_var", o.noise_var, 0.0)?,
        functions: 1,
        d: 0.0,
        params: Vec::new(),
        per_dim: None,
    })
}

/// The papers' synthetic families: exact GP draws on a grid.
fn check_synthetic(
    c: &Check,
    o: RawObjective,
    targets: Option<Vec<usize>>,
) -> Result<ObjectiveSpec> {
    let kind = match o.kind.as_str() {
        "synthetic-fts" => {
            if o.heterogeneous.is_some() || o.alpha.is_some() {
                return Err(c.err(
                    "objective.alpha",
                    "heterogeneous and alpha apply only to kind = \"synthetic-dp\"",
                ));
            }
            ObjectiveKind::SyntheticFts
        }
        "synthetic-dp" => {
            let het = o.heterogeneous.unwrap_or(false);
            if !het && o.alpha.is_some() {
                return Err(c.err("objective.alpha", "applies only with heterogeneous = true"));
            }
            let alpha = if het {
                let a = o.alpha.unwrap_or(0.7);
                if !(a.is_finite() && (0.0..=1.0).contains(&a)) {
                    return Err(c.err("objective.alpha", format!("must be in [0, 1], got {a}")));
                }
                Some(a)
            } else {
                None
            };
            ObjectiveKind::SyntheticDp {
                heterogeneous: alpha,
            }
        }
        other => {
            return Err(c.err(
                "objective.kind",
                format!(
                    "unknown objective \"{other}\"; allowed: \"synthetic-fts\", \"synthetic-dp\", \"table\", \"function\", \"model\", \"command\", \"external\""
                ),
            ));
        }
    };
    Ok(ObjectiveSpec {
        kind,
        targets: targets.unwrap_or_default(),
        // The functions are exact GP draws on the grid: a G x G Cholesky factor.
        grid: c.int("objective.grid", o.grid, 1000, 2, 20_000)?,
        length_scale: c.positive("objective.length_scale", o.length_scale, 0.03)?,
        noise_var: c.non_negative("objective.noise_var", o.noise_var, 0.01)?,
        functions: c.int("objective.functions", o.functions, 5, 1, MAX_COUNT)?,
        d: c.non_negative("objective.d", o.d, 0.02)?,
        params: Vec::new(),
        per_dim: None,
    })
}

/// The program a command's argv[0] names, as it will be started: a path with a slash
/// relative to `workdir`, a bare name found on PATH. Why not, otherwise.
pub fn find_program(name: &str, workdir: &Path) -> std::result::Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let p = crate::objective::command::program_path(name, workdir);
    if name.contains('/') {
        return if executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(format!(
                "{} is not an executable file (chmod +x it, or run it through its interpreter: [\"python3\", \"{name}\"])",
                p.display()
            ))
        } else {
            Err(format!(
                "the program {} does not exist (a path with a slash is taken from objective.workdir, {})",
                p.display(),
                workdir.display()
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
        .ok_or_else(|| {
            format!(
                "the program \"{name}\" is not on PATH (give its path, say [\"./{name}\"] for one in objective.workdir)"
            )
        })
}

/// kind = "command" or "external": the argv (command only), where it runs, the metric's
/// direction and name, the searched hyperparameters (named by the user), and how failures
/// and concurrency are handled.
fn check_command(c: &Check, o: &mut RawObjective) -> Result<(ObjectiveKind, Vec<Param>)> {
    let (argv, workdir) = command_program(c, o)?;
    let sign = match o.direction.take().as_deref() {
        Some("maximize") => 1.0,
        Some("minimize") => -1.0,
        Some(other) => {
            return Err(c.err(
                "objective.direction",
                format!("unknown direction \"{other}\"; allowed: \"maximize\", \"minimize\""),
            ));
        }
        None => {
            return Err(c.err(
                "objective.direction",
                "missing: \"maximize\" or \"minimize\" (whether a higher metric is better)",
            ));
        }
    };
    let metric_name = o.metric_name.take().unwrap_or_else(|| "metric".into());
    if metric_name.is_empty() || metric_name.contains(['\n', '"']) {
        return Err(c.err(
            "objective.metric_name",
            "must be a non-empty name without quotes or newlines",
        ));
    }
    let timeout_s = o.timeout_s.unwrap_or(3600.0);
    if !(timeout_s > 0.0 && timeout_s <= 1e7) {
        return Err(c.err(
            "objective.timeout_s",
            format!("must be in (0, 1e7] seconds, got {timeout_s}"),
        ));
    }
    let retries = c.int("objective.retries", o.retries, 0, 0, 100)?;
    let concurrency = c.int("objective.concurrency", o.concurrency, 1, 1, 1024)?;
    let on_failure = match o.on_failure.take().as_deref() {
        None | Some("stop") => OnFailure::Stop,
        Some("skip") => OnFailure::Skip,
        Some(other) => {
            return Err(c.err(
                "objective.on_failure",
                format!("unknown choice \"{other}\"; allowed: \"stop\", \"skip\""),
            ));
        }
    };
    let params = command_params(c, o)?;
    let settings = CommandSettings {
        argv,
        workdir,
        sign,
        metric_name,
        timeout_s,
        retries,
        concurrency,
        on_failure,
    };
    Ok((ObjectiveKind::Command(settings), params))
}

/// The program of a command objective (none for an external one) and the folder it runs in,
/// checked before anything runs: a program that cannot start would fail every evaluation.
fn command_program(c: &Check, o: &mut RawObjective) -> Result<(Option<Vec<String>>, PathBuf)> {
    let external = o.kind == "external";
    let argv = match (o.command.take(), external) {
        (Some(_), true) => {
            return Err(c.err(
                "objective.command",
                "kind = \"external\" has no command: its results are reported with `fbo tell` (use kind = \"command\" to run one)",
            ));
        }
        (None, true) => None,
        (None, false) => {
            return Err(c.err(
                "objective.command",
                "missing: the program to run, as a list (command = [\"python3\", \"train.py\"]); it is executed directly, not through a shell",
            ));
        }
        (Some(v), false) => {
            if v.is_empty() || v[0].is_empty() {
                return Err(c.err(
                    "objective.command",
                    "must name a program: a non-empty list whose first item is the program",
                ));
            }
            Some(v)
        }
    };
    let base = c.file.parent().unwrap_or(Path::new("."));
    let workdir = base.join(o.workdir.take().unwrap_or_else(|| ".".into()));
    if !external && !workdir.is_dir() {
        return Err(c.err(
            "objective.workdir",
            format!(
                "{} is not a folder (the command runs there; relative to this spec)",
                workdir.display()
            ),
        ));
    }
    // Absolute, so that neither fbo's own folder nor the command's changes what it means.
    let workdir = workdir.canonicalize().unwrap_or(workdir);
    if let Some(argv) = &argv {
        if let Some(bad) = argv.iter().find(|a| a.contains('\0')) {
            return Err(c.err(
                "objective.command",
                format!("{bad:?} holds a NUL character, which no program can be given"),
            ));
        }
        // A program that cannot start fails every evaluation: said now, not after a run of
        // skipped failures.
        find_program(&argv[0], &workdir).map_err(|m| c.err("objective.command", m))?;
    }
    Ok((argv, workdir))
}

/// `[[objective.hyperparameters]]` of a command or external objective: 1 to 20, named as
/// environment variables can be, distinct from trace.csv's columns and from each other.
fn command_params(c: &Check, o: &mut RawObjective) -> Result<Vec<Param>> {
    let list = o.hyperparameters.take().ok_or_else(|| {
        c.err(
            "objective.hyperparameters",
            "missing: at least one [[objective.hyperparameters]] with name, low and high",
        )
    })?;
    if list.is_empty() || list.len() > 20 {
        return Err(c.err(
            "objective.hyperparameters",
            format!("must list 1 to 20 hyperparameters, got {}", list.len()),
        ));
    }
    let mut params: Vec<Param> = Vec::with_capacity(list.len());
    for (i, h) in list.into_iter().enumerate() {
        let key = |f: &str| format!("objective.hyperparameters[{i}].{f}");
        let ok = !h.name.is_empty()
            && h.name.len() <= 64
            && h.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if !ok {
            return Err(c.err(
                &key("name"),
                format!(
                    "must be 1-64 characters from A-Z a-z 0-9 _ (it names the variable FBO_PARAM_<NAME>), got \"{}\"",
                    h.name
                ),
            ));
        }
        if crate::objective::columns::is_reserved(&h.name) {
            return Err(c.err(
                &key("name"),
                format!(
                    "\"{}\" names a column of trace.csv already (fbo's own columns and the unit coordinates u0, u1, ..): choose another name",
                    h.name
                ),
            ));
        }
        if params.iter().any(|p| p.name.eq_ignore_ascii_case(&h.name)) {
            return Err(c.err(
                &key("name"),
                format!(
                    "\"{}\" is used twice (names are compared without case)",
                    h.name
                ),
            ));
        }
        params.push(check_param(c, &key, h, false)?);
    }
    let width: usize = params.iter().map(Param::width).sum();
    if width > crate::objective::space::PRIMES.len() {
        return Err(c.err(
            "objective.hyperparameters",
            format!(
                "take {width} unit coordinates (one per number, one per choice of a categorical); at most {}",
                crate::objective::space::PRIMES.len()
            ),
        ));
    }
    Ok(params)
}

type IdList<'a> = dyn Fn(&str, Option<Vec<i64>>) -> Result<Option<Vec<usize>>> + 'a;

/// kind = "model": the dataset, its raw data (read here, to count its agents), the model's
/// fixed settings and the searched hyperparameters (the dataset's, in its order; ranges and
/// scales may change).
fn check_model(
    c: &Check,
    o: &mut RawObjective,
    ids: &IdList,
) -> Result<(ObjectiveKind, Vec<Param>)> {
    let (name, dataset) = model_dataset(c, o)?;
    let base = c.file.parent().unwrap_or(Path::new("."));
    let data = model_data(c, o, dataset, base)?;
    let split_seed = c.int("objective.split_seed", o.split_seed, 0, 0, i64::MAX)? as u64;
    let split_file = dataset
        .split_file(base, o.split.take().as_deref())
        .map_err(|m| c.err("objective.split", m))?;
    let svm_stopping = dataset
        .svm_stopping(o.svm_stopping.take().as_deref())
        .map_err(|m| c.err("objective.svm_stopping", m))?;
    let (epochs, batch_size) = model_training(c, o, dataset)?;
    let metric = model_metric(c, o, dataset)?;
    let mut params = model_hyperparameters(c, &name, o.hyperparameters.take(), dataset.defaults())?;
    let settings = ModelSettings {
        dataset,
        data,
        split_seed,
        split_file,
        svm_stopping,
        epochs,
        batch_size,
        metric,
    };
    let available = crate::objective::model::count_agents(&settings)?;
    let agents = match ids("objective.agents", o.agents.take())? {
        Some(list) => {
            if let Some(a) = list.iter().find(|&&a| a >= available) {
                return Err(c.err(
                    "objective.agents",
                    format!("agent {a} is not in the data (0..{})", available - 1),
                ));
            }
            list
        }
        None => (0..available).collect(),
    };
    if dataset == Dataset::Har {
        // The batch size is a count: trained, traced and memoised as an integer.
        params[0].integer = true;
    }
    Ok((ObjectiveKind::Model { settings, agents }, params))
}

/// `objective.dataset`: its name as written and the dataset it names.
fn model_dataset(c: &Check, o: &mut RawObjective) -> Result<(String, Dataset)> {
    let name = o.dataset.take().ok_or_else(|| {
        c.err(
            "objective.dataset",
            "missing: \"landmine\", \"har\", \"emnist\" or \"heart\"",
        )
    })?;
    let dataset = Dataset::parse(&name).ok_or_else(|| {
        c.err(
            "objective.dataset",
            format!(
                "unknown dataset \"{name}\"; allowed: \"landmine\", \"har\", \"emnist\", \"heart\""
            ),
        )
    })?;
    Ok((name, dataset))
}

/// `objective.data`: the raw data's path, relative to the spec (`base`), which must exist.
fn model_data(c: &Check, o: &mut RawObjective, dataset: Dataset, base: &Path) -> Result<PathBuf> {
    let rel = o.data.take().ok_or_else(|| {
        c.err(
            "objective.data",
            format!(
                "missing: the raw data, relative to this spec: {}",
                match dataset {
                    Dataset::Landmine =>
                        "the landmine CSV transcription (data/raw/landmine/landmine.csv.gz)",
                    Dataset::Har => "the UCI HAR folder of .txt.gz files (data/raw/har)",
                    Dataset::Emnist => "the FEMNIST digits folder (data/raw/emnist)",
                    Dataset::Heart => "the heart disease folder (data/raw/heart)",
                }
            ),
        )
    })?;
    let data = base.join(&rel);
    if !data.exists() {
        return Err(c.err(
            "objective.data",
            format!("{} does not exist", data.display()),
        ));
    }
    Ok(data)
}

/// `objective.epochs` and `objective.batch_size`, each only where the dataset's model has it.
fn model_training(c: &Check, o: &RawObjective, dataset: Dataset) -> Result<(usize, usize)> {
    // Heart's logistic regression takes full-batch steps: 20 would stop far from the optimum.
    let default_epochs = if dataset == Dataset::Heart { 100 } else { 20 };
    let epochs = c.int("objective.epochs", o.epochs, default_epochs, 1, 100_000)?;
    let batch_size = match dataset {
        Dataset::Emnist => c.int("objective.batch_size", o.batch_size, 20, 1, 100_000)?,
        _ if o.batch_size.is_some() => {
            return Err(c.err(
                "objective.batch_size",
                "only the emnist dataset has a fixed batch size (har tunes it as a hyperparameter)",
            ));
        }
        _ => 0,
    };
    if dataset == Dataset::Landmine && o.epochs.is_some() {
        return Err(c.err("objective.epochs", "the landmine SVM has no epochs"));
    }
    Ok((epochs, batch_size))
}

/// `objective.metric`: landmine's SVM scores Platt-calibrated AUC by default, as the authors'
/// SVC(probability=True) did, so live levels are comparable with their published traces; the
/// other datasets score one metric each.
fn model_metric(c: &Check, o: &mut RawObjective, dataset: Dataset) -> Result<SvmMetric> {
    Ok(match (dataset, o.metric.take().as_deref()) {
        (Dataset::Landmine, None | Some("platt-auc")) => SvmMetric::PlattAuc,
        (Dataset::Landmine, Some("auc")) => SvmMetric::Auc,
        (Dataset::Landmine, Some(other)) => {
            return Err(c.err(
                "objective.metric",
                format!("unknown metric \"{other}\"; allowed: \"platt-auc\" (default), \"auc\""),
            ));
        }
        (_, Some(_)) => {
            return Err(c.err(
                "objective.metric",
                "applies only to dataset = \"landmine\" (har and emnist score validation error, heart validation AUC)",
            ));
        }
        (_, None) => SvmMetric::Auc,
    })
}

/// `objective.hyperparameters`: the dataset's own list (`defaults`) in its fixed order, each
/// range narrowed as the user writes it; a categorical one keeps the model's choices.
fn model_hyperparameters(
    c: &Check,
    name: &str,
    list: Option<Vec<RawParam>>,
    defaults: Vec<Param>,
) -> Result<Vec<Param>> {
    let Some(list) = list else {
        return Ok(defaults);
    };
    if list.len() != defaults.len() {
        return Err(c.err(
            "objective.hyperparameters",
            format!(
                "\"{name}\" has {} hyperparameters ({}), got {}",
                defaults.len(),
                defaults
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                list.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, (h, d)) in list.into_iter().zip(&defaults).enumerate() {
        let key = |f: &str| format!("objective.hyperparameters[{i}].{f}");
        if h.name != d.name {
            return Err(c.err(
                &key("name"),
                format!(
                    "must be \"{}\" (the order is fixed), got \"{}\"",
                    d.name, h.name
                ),
            ));
        }
        // A categorical hyperparameter of a model (heart's class weighting) keeps its
        // choices: the model knows only those.
        if d.is_categorical() {
            if h.choices.as_ref() != Some(&d.choices) {
                return Err(c.err(
                    &key("choices"),
                    format!("must be {:?} (the model's own choices)", d.choices),
                ));
            }
            out.push(d.clone());
            continue;
        }
        out.push(check_param(c, &key, h, true)?);
    }
    Ok(out)
}

/// One hyperparameter's range: finite, low < high, positive on a log scale (and for the
/// datasets' models, whose hyperparameters are all positive).
fn check_param(
    c: &Check,
    key: &dyn Fn(&str) -> String,
    h: RawParam,
    positive: bool,
) -> Result<Param> {
    if let Some(choices) = h.choices {
        if positive {
            return Err(c.err(
                &key("choices"),
                "the dataset's models take numbers only; categorical parameters are for command and external objectives",
            ));
        }
        return check_choices(
            c, key, h.name, choices, &h.low, &h.high, &h.scale, &h.integer,
        );
    }
    let (Some(low), Some(high)) = (h.low, h.high) else {
        return Err(c.err(
            &key(if h.low.is_none() { "low" } else { "high" }),
            "missing: a number (or give `choices = [...]` for a categorical parameter)",
        ));
    };
    let scale = match h.scale.as_deref() {
        None | Some("linear") => Scale::Linear,
        Some("log") => Scale::Log,
        Some(other) => {
            return Err(c.err(
                &key("scale"),
                format!("unknown scale \"{other}\"; allowed: \"linear\", \"log\""),
            ));
        }
    };
    if !(low.is_finite() && high.is_finite() && low < high) {
        return Err(c.err(
            &key("low"),
            format!("need finite low < high, got [{low}, {high}]"),
        ));
    }
    if (positive || scale == Scale::Log) && low <= 0.0 {
        return Err(c.err(
            &key("low"),
            format!(
                "must be > 0 ({}), got {low}",
                if scale == Scale::Log {
                    "log scale"
                } else {
                    "the model needs a positive value"
                },
            ),
        ));
    }
    let integer = h.integer.unwrap_or(false);
    if integer && high.floor() < low.ceil() {
        return Err(c.err(&key("integer"), format!("[{low}, {high}] holds no integer")));
    }
    Ok(Param {
        name: h.name,
        low,
        high,
        scale,
        integer,
        choices: Vec::new(),
    })
}

/// A categorical hyperparameter: 2 to 64 distinct, non-empty choices that a program can be
/// handed as they are (no range, scale or rounding beside them).
#[allow(clippy::too_many_arguments)]
fn check_choices(
    c: &Check,
    key: &dyn Fn(&str) -> String,
    name: String,
    choices: Vec<String>,
    low: &Option<f64>,
    high: &Option<f64>,
    scale: &Option<String>,
    integer: &Option<bool>,
) -> Result<Param> {
    for (field, given) in [
        ("low", low.is_some()),
        ("high", high.is_some()),
        ("scale", scale.is_some()),
        ("integer", integer.is_some()),
    ] {
        if given {
            return Err(c.err(
                &key(field),
                "does not apply to a categorical parameter (one with `choices`)",
            ));
        }
    }
    if !(2..=64).contains(&choices.len()) {
        return Err(c.err(
            &key("choices"),
            format!("must list 2 to 64 choices, got {}", choices.len()),
        ));
    }
    for (i, ch) in choices.iter().enumerate() {
        if ch.is_empty()
            || ch.len() > 64
            || ch.chars().any(|x| x.is_control() || x == ',' || x == '"')
        {
            return Err(c.err(
                &key("choices"),
                format!(
                    "choice {ch:?} must be 1-64 characters without commas, quotes or control characters (it is written into CSV files and handed to your program)"
                ),
            ));
        }
        if choices[..i].contains(ch) {
            return Err(c.err(&key("choices"), format!("\"{ch}\" is listed twice")));
        }
    }
    Ok(Param::categorical(&name, choices))
}

/// `objective.bounds`: the box the function is searched on, the function's own unless given.
/// It must lie inside the function's own box (where its maximum is known) and contain the
/// maximiser, so the maximum, and with it every regret, stays exact. (Rosenbrock on the
/// common [-2.048, 2.048]^D instead of the Virtual Library's [-5, 10]^D, for instance.)
fn check_bounds(c: &Check, raw: Option<RawBounds>, f: Function) -> Result<Vec<(f64, f64)>> {
    let own = f.params();
    let pairs = match raw {
        None => return Ok(f.bounds()),
        Some(RawBounds::Every(pair)) => vec![pair; own.len()],
        Some(RawBounds::PerAxis(pairs)) if pairs.len() == own.len() => pairs,
        Some(RawBounds::PerAxis(pairs)) => {
            return Err(c.err(
                "objective.bounds",
                format!(
                    "gives {} pairs for a function of {} axes; give one [low, high] for every \
                     axis, or one pair per axis",
                    pairs.len(),
                    own.len()
                ),
            ));
        }
    };
    let inside = |p: &Param, a: f64, b: f64| {
        a.is_finite() && b.is_finite() && p.low <= a && a < b && b <= p.high
    };
    pairs
        .iter()
        .zip(&own)
        .zip(f.argmax())
        .map(|((pair, p), x)| match *pair.as_slice() {
            [a, b] if inside(p, a, b) && (a..=b).contains(&x) => Ok((a, b)),
            [a, b] if inside(p, a, b) => Err(c.err(
                "objective.bounds",
                format!(
                    "axis {} is [{a}, {b}], which leaves out the function's maximiser there \
                     ({x}); the box must contain it, so that regret is exact",
                    p.name
                ),
            )),
            _ => Err(c.err(
                "objective.bounds",
                format!(
                    "axis {} must be [low, high] with {} <= low < high <= {} (inside the \
                     function's own box), got {pair:?}",
                    p.name, p.low, p.high
                ),
            )),
        })
        .collect()
}

/// `objective.heterogeneity = h` (shift and rotation together), or `shift` and `rotation`
/// apart: a shift of up to that fraction of the box's width per coordinate, in [0, 1] (the
/// optimum kept in the box);
/// rotation angles up to that fraction of pi, in [0, 1].
fn check_heterogeneity(c: &Check, o: &RawObjective) -> Result<Heterogeneity> {
    let within = |key: &str, v: Option<f64>, hi: f64, what: &str| -> Result<f64> {
        match v {
            None => Ok(0.0),
            Some(x) if (0.0..=hi).contains(&x) => Ok(x),
            Some(x) => Err(c.err(
                &format!("objective.{key}"),
                format!("must be in [0, {hi}] ({what}), got {x}"),
            )),
        }
    };
    if o.heterogeneity.is_some() && (o.shift.is_some() || o.rotation.is_some()) {
        return Err(c.err(
            "objective.heterogeneity",
            "sets shift and rotation together; give either it or objective.shift / objective.rotation",
        ));
    }
    if o.heterogeneity.is_some() {
        let h = within(
            "heterogeneity",
            o.heterogeneity,
            1.0,
            "0: every agent sees the same function",
        )?;
        return Ok(Heterogeneity::both(h));
    }
    Ok(Heterogeneity {
        // In heterogeneity's units, where h shifts by up to h / 4 of the width; times 4 is
        // exact, so shift = h / 4 draws the very shifts heterogeneity = h draws.
        shift: 4.0 * within("shift", o.shift, 1.0, "a fraction of the box's width")?,
        rotation: within("rotation", o.rotation, 1.0, "a fraction of pi")?,
    })
}
