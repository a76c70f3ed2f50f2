//! Every way a spec can be wrong is refused before any work starts: exit status 2, one line
//! that names the file and the key, and no output folder.

mod common;
use common::*;

/// (description, spec text, text the message must contain)
fn cases() -> Vec<(&'static str, String, &'static str)> {
    let with = |from: &str, to: &str| {
        assert!(SMALL.contains(from), "fixture lacks {from}");
        SMALL.replacen(from, to, 1)
    };
    vec![
        (
            "malformed toml",
            with("runs = 4", "runs = = 4"),
            "invalid spec",
        ),
        (
            "unknown top-level key",
            with("runs = 4", "runs = 4\nrunz = 3"),
            "unknown field `runz`",
        ),
        (
            "unknown nested key",
            with("features = 20", "features = 20\nfeaturez = 1"),
            "unknown field `featurez`",
        ),
        ("wrong type", with("runs = 4", "runs = \"four\""), "runs"),
        (
            "M = 0",
            with("features = 20", "features = 0"),
            "key `surrogate.features`: must be an integer in [1, 10000], got 0",
        ),
        (
            "M_target = 0",
            with("features = 30", "features = 0"),
            "key `surrogate.own.features`",
        ),
        ("runs = 0", with("runs = 4", "runs = 0"), "key `runs`"),
        (
            "N = 0",
            with("agents = 3", "agents = 0"),
            "key `federation.agents`: must be an integer in [1, 100000], got 0",
        ),
        (
            "p_t > 1",
            with("observations = 10", "observations = 10\np_t = 1.5"),
            "key `federation.p_t`: must be a probability in (0, 1], got 1.5",
        ),
        (
            "p_t = 0",
            with("observations = 10", "observations = 10\np_t = 0.0"),
            "key `federation.p_t`: must be a probability in (0, 1], got 0",
        ),
        (
            "p_t list entry",
            with("observations = 10", "observations = 10\np_t = [0.5, -0.1]"),
            "key `federation.p_t[1]`",
        ),
        (
            "p_t list too short",
            with("observations = 10", "observations = 10\np_t = [0.5, 0.6]"),
            "lists 2 probabilities but the spec runs 12 iterations",
        ),
        (
            "p_t list too long",
            with(
                "observations = 10",
                &format!("observations = 10\np_t = [{}]", vec!["0.5"; 13].join(", ")),
            ),
            "lists 13 probabilities but the spec runs 12 iterations",
        ),
        (
            "too many sub-regions for the grid",
            SMALL_DP.replace("subregions = 2", "subregions = 100"),
            "100 sub-regions of this grid leave one with 1 grid points",
        ),
        (
            "name escaping the results folder",
            with("name = \"small\"", "name = \"..\""),
            "key `name`",
        ),
        (
            "p_t unknown name",
            with("observations = 10", "observations = 10\np_t = \"1-1/t^3\""),
            "unknown schedule \"1-1/t^3\"",
        ),
        (
            "length scale <= 0",
            with("features = 20", "features = 20\nlength_scale = 0.0"),
            "key `surrogate.length_scale`: must be a finite number > 0, got 0",
        ),
        (
            "negative length scale of objective",
            with("grid = 200", "grid = 200\nlength_scale = -1.0"),
            "key `objective.length_scale`",
        ),
        (
            "lambda <= 0",
            with("features = 20", "features = 20\nlambda = -0.5"),
            "key `surrogate.lambda`",
        ),
        (
            "bad bounds",
            with(
                "features = 30",
                "features = 30\nlength_scale_bounds = [2.0, 1.0]",
            ),
            "key `surrogate.own.length_scale_bounds`",
        ),
        (
            "unknown kernel",
            with("features = 20", "features = 20\nkernel = \"rbf\""),
            "key `surrogate.kernel`: unknown kernel \"rbf\"; allowed: \"se\", \"matern52\", \"matern32\"",
        ),
        (
            "ard neither a bool, auto nor a count",
            with("ard = false", "ard = 0"),
            "key `surrogate.own.ard`: must be true, false, \"auto\", \"loo\" or a number of observations per axis in [1, 1000], got 0",
        ),
        (
            "a margin for a shape fixed in advance",
            with("ard = false", "ard = false\nard_margin = 3.0"),
            "key `surrogate.own.ard_margin`: applies to ard = \"loo\" (the default) only",
        ),
        (
            "a margin out of range",
            with("ard = false", "ard = \"loo\"\nard_margin = 101.0"),
            "key `surrogate.own.ard_margin`: must be in [0, 100] standard errors, got 101",
        ),
        (
            "unknown mean",
            with("mean = \"zero\"", "mean = \"linear\""),
            "key `surrogate.own.mean`: unknown mean \"linear\"; allowed: \"zero\", \"constant\"",
        ),
        (
            "unknown prior",
            with("prior = \"none\"", "prior = \"gamma\""),
            "key `surrogate.own.prior`: unknown prior \"gamma\"; allowed: \"none\", \"dimension-scaled\"",
        ),
        (
            "unknown algorithm",
            with("kind = \"fts\"", "kind = \"ftz\""),
            "key `algorithm[1].kind`: unknown algorithm \"ftz\"",
        ),
        (
            "no algorithm",
            SMALL.split("[[algorithm]]").next().unwrap().to_string(),
            "key `algorithm`: the spec lists no algorithm",
        ),
        (
            "duplicate labels",
            format!("{SMALL}\n[[algorithm]]\nkind = \"fts\"\n"),
            "label \"FTS M=20\" is used twice",
        ),
        (
            "ts with federation keys",
            with("kind = \"ts\"", "kind = \"ts\"\nfeatures = 10"),
            "TS uses no federation",
        ),
        (
            "unknown objective",
            with("kind = \"synthetic-fts\"", "kind = \"branin\""),
            "key `objective.kind`: unknown objective \"branin\"",
        ),
        (
            "alpha on fts family",
            with("grid = 200", "grid = 200\nalpha = 0.5"),
            "key `objective.alpha`",
        ),
        (
            "a function's key on another kind",
            with("grid = 200", "grid = 200\nrotation = 0.1"),
            "key `objective.rotation`: applies only to kind = \"function\"",
        ),
        (
            "a command's key on another kind",
            with("grid = 200", "grid = 200\ntimeout_s = 5"),
            "key `objective.timeout_s`: applies only to kind = \"command\" (and \"external\")",
        ),
        (
            "a model's key on another kind",
            with("grid = 200", "grid = 200\nepochs = 2"),
            "key `objective.epochs`: applies only to kind = \"model\"",
        ),
        (
            "drawn functions on a box",
            with(
                "kind = \"synthetic-fts\"\ngrid = 200\nfunctions = 2",
                "kind = \"function\"\nfunction = \"branin\"\nfunctions = 2",
            ),
            "key `objective.functions`: does not apply to kind = \"function\" (no functions are drawn",
        ),
        (
            "too many initial points",
            with("initial_points = 2", "initial_points = 500"),
            "key `initial_points`: must be at most the domain size 200",
        ),
        (
            "bad message mode",
            with(
                "observations = 10",
                "observations = 10\nmessages = \"sometimes\"",
            ),
            "key `federation.messages`",
        ),
        (
            "weights of wrong length",
            with(
                "observations = 10",
                "observations = 10\nagent_weights = [1, 2]",
            ),
            "key `federation.agent_weights`: must list one weight per agent other than the target (3)",
        ),
        (
            "p_t on a meta-learner",
            with("kind = \"fts\"", "kind = \"rgpe\"\np_t = 0.5"),
            "key `algorithm[1].p_t`: RGPE and TAF choose every query by their acquisition function",
        ),
        (
            "own sample on a meta-learner",
            with(
                "kind = \"fts\"",
                "kind = \"taf\"\nown_sample = \"pathwise\"",
            ),
            "key `algorithm[1].own_sample`: RGPE and TAF use the exact GP posterior",
        ),
        (
            "unknown own sample",
            with("kind = \"fts\"", "kind = \"fts\"\nown_sample = \"exact\""),
            "key `algorithm[1].own_sample`: unknown own sample \"exact\"; allowed: \"rff\", \"pathwise\"",
        ),
        (
            "samples on taf",
            with("kind = \"fts\"", "kind = \"taf\"\nsamples = 10"),
            "key `algorithm[1].samples`: applies only to kind = rgpe, cgp or design-density",
        ),
        (
            "bandwidth out of range",
            with("kind = \"fts\"", "kind = \"taf\"\nbandwidth = 0"),
            "key `algorithm[1].bandwidth`: must be in (0, 10], got 0",
        ),
        (
            "rgpe samples out of range",
            with("kind = \"fts\"", "kind = \"rgpe\"\nsamples = 0"),
            "key `algorithm[1].samples`",
        ),
        (
            "every-iteration messages with a meta-learner",
            with("kind = \"fts\"", "kind = \"rgpe\"\n[federation.x]")
                .replace(
                    "observations = 10",
                    "observations = 10\nmessages = \"every-iteration\"",
                )
                .replace("\n[federation.x]", ""),
            "key `federation.messages`: RGPE and TAF receive one message per agent",
        ),
        (
            "nan",
            with("features = 20", "features = 20\nlambda = nan"),
            "key `surrogate.lambda`: must be a finite number > 0, got NaN",
        ),
    ]
}

#[test]
fn every_invalid_spec_is_refused_with_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (what, text, expect) in cases() {
        let spec = write(dir.path(), "bad.toml", &text);
        let out_dir = dir.path().join("out");
        for sub in ["validate", "run"] {
            let mut cmd = fbo();
            cmd.arg(sub).arg(&spec);
            if sub == "run" {
                cmd.arg("--out").arg(&out_dir).arg("--quiet");
            }
            let o = cmd.output().unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{what} ({sub}): {err}");
            assert!(
                err.contains("bad.toml"),
                "{what}: message does not name the file: {err}"
            );
            assert!(
                err.contains(expect),
                "{what}: expected {expect:?} in: {err}"
            );
            assert!(!out_dir.exists(), "{what}: an invalid spec created output");
        }
    }
}

#[test]
fn a_valid_spec_validates() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "ok.toml", SMALL);
    let o = validate(&spec);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("ok: 4 runs (seeds) x 12 iterations, 4 agents, algorithms: TS, FTS M=20"),
        "{out}"
    );
}

#[test]
fn a_missing_spec_file_is_an_input_error() {
    let o = fbo()
        .args(["run", "/nonexistent/spec.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/spec.toml: cannot read the spec"));
}

#[test]
fn shipped_configs_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let o = validate(&p);
            assert!(o.status.success(), "{}: {}", p.display(), stderr(&o));
            n += 1;
        }
    }
    assert!(
        n >= 4,
        "expected the main config and the Fig. 1 panels, found {n}"
    );
}

/// A reader that stops early (`fbo validate SPEC | head`) ends fbo quietly: exit 0, no panic.
/// The pipe's read end is closed before fbo starts, so its first print meets a closed pipe.
#[test]
fn a_closed_stdout_ends_fbo_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = common::fbo()
        .arg("validate")
        .arg("configs/dp-landmine-sweep.toml")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `fbo validate BAD 2>&1 | head -c 10`: stdout and stderr on one pipe the reader closed.
/// No panic (exit 101): a refused spec still exits 2, a good one 0.
#[test]
fn a_closed_stderr_is_no_panic_and_keeps_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let bad = common::write(dir.path(), "bad.toml", "runs = 0\n");
    for (spec, want) in [
        (bad.as_path(), 2),
        (std::path::Path::new("configs/dp-landmine-sweep.toml"), 0),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = common::fbo()
            .arg("validate")
            .arg(spec)
            .stdout(writer.try_clone().unwrap())
            .stderr(writer)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(want), "{}", spec.display());
    }
}

/// Estimates that erred short: FedGP's rounds x local_steps were left out of the cost ("about
/// 1 s" for 10^4 x 10^4), and a large sweep was checked point by point in silence.
#[test]
fn estimates_count_fedgp_rounds_and_a_large_sweep_says_it_is_being_checked() {
    let dir = tempfile::tempdir().unwrap();
    let fedgp = |rounds: u32| {
        format!(
            "name = \"fg\"\nruns = 1\niterations = 5\ninitial_points = 3\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n[federation]\nagents = 4\n[[algorithm]]\nkind = \"fedgp\"\nsolver = \"fedavg\"\nrounds = {rounds}\nlocal_steps = {rounds}\n"
        )
    };
    let spec = common::write(dir.path(), "fg.toml", &fedgp(10_000));
    let o = common::validate(&spec);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // 5 iterations x 10^8 gradients x 4 agents at about 2.7 us each (measured): over an hour.
    let minutes = out
        .split("about ")
        .last()
        .and_then(|e| e.split(" min on").next())
        .and_then(|m| m.trim().parse::<f64>().ok());
    assert!(
        minutes.is_some_and(|m| m >= 60.0) || out.contains(" h on ") || out.contains("days on"),
        "{out}"
    );
    // A sweep of 20,000 points says it is checking them before the silence.
    let values = |n: usize| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sweep = format!(
        "name = \"big\"\nruns = 1\niterations = 1\ninitial_points = 1\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n[[algorithm]]\nkind = \"ts\"\n[sweep]\nseed = [{}]\ninitial_points = [{}]\n",
        values(1000),
        values(20)
    );
    let spec = common::write(dir.path(), "big.toml", &sweep);
    let o = common::validate(&spec);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("checking the 20000 points of this sweep"),
        "{}",
        common::stderr(&o)
    );
}

/// `surrogate.own.noise_variance_known`: a variance, one per agent, or the objective's own
/// simulated noise; each misuse named with its key.
#[test]
fn known_noise_is_checked_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let base = "name = \"k\"\nseed = 1\nruns = 1\niterations = 3\ninitial_points = 2\n\
                [objective]\nkind = \"function\"\nfunction = \"branin\"\nNOISE\n\
                [federation]\nagents = 2\n[surrogate.own]\nKNOWN\n[[algorithm]]\nkind = \"ei\"\n";
    let spec = |noise: &str, known: &str| {
        write(
            dir.path(),
            "k.toml",
            &base.replace("NOISE", noise).replace("KNOWN", known),
        )
    };
    for (noise, known, want) in [
        (
            "",
            "noise_variance_known = \"objective\"",
            "objective.noise_var, which is 0 here",
        ),
        (
            "",
            "noise_variance_known = [1.0]",
            "one variance per agent (2), got 1",
        ),
        ("", "noise_variance_known = -1.0", "must be a variance > 0"),
    ] {
        let o = validate(&spec(noise, known));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("surrogate.own.noise_variance_known") && err.contains(want),
            "{err}"
        );
    }
    let s = spec("noise_var = 0.5", "noise_variance_known = \"objective\"");
    fbo_ok("run", &s, &dir.path().join("o"), &["--no-timing"]);
    let s = spec("", "noise_variance_known = [0.01, 2]");
    fbo_ok("run", &s, &dir.path().join("p"), &["--no-timing"]);
}
