//! The DP-FTS-DE family end to end.

mod common;
use common::*;
use fbo::run::runner::run_one;
use fbo::spec::Spec;
use std::collections::HashMap;
use std::fs;
use std::path::Path;

fn spec(text: &str) -> Spec {
    Spec::parse(text, Path::new("dp.toml")).unwrap()
}

fn landscape(s: &Spec) -> std::sync::Arc<fbo::objective::Landscape> {
    fbo::objective::synthetic::landscapes(&s.objective, s.total_agents(), s.seed).unwrap()[0]
        .clone()
}

#[test]
fn every_agent_is_traced_and_starts_in_its_sub_region() {
    let s = spec(SMALL_DP);
    let out = run_one(&s, 1, 0, landscape(&s)).unwrap();
    let mut per_agent: HashMap<usize, usize> = HashMap::new();
    for r in &out.rows {
        *per_agent.entry(r.agent).or_default() += 1;
        if r.source == "init" {
            // Agent n explores sub-region n mod 2: [0, 0.5] or (0.5, 1].
            let x = r.x[0];
            if r.agent % 2 == 0 {
                assert!(x <= 0.5, "agent {} init at {x}", r.agent);
            } else {
                assert!(x > 0.5, "agent {} init at {x}", r.agent);
            }
        }
    }
    assert_eq!(per_agent.len(), 12);
    assert!(per_agent.values().all(|&c| c == 3 + 8));
    assert_eq!(out.server.len(), 8, "one server round per iteration");
}

#[test]
fn domain_init_and_p_equal_one_reproduce_ts_for_every_agent() {
    // With p_t = 1 nobody uses the server, and with initial points from the whole domain the
    // agents are TS agents on the same streams.
    let text = SMALL_DP
        .replace("p_t = \"1-1/sqrt(t)\"", "p_t = 1.0")
        .replace("clip = 3.0", "clip = 3.0\ninit = \"domain\"");
    let s = spec(&text);
    let ts = run_one(&s, 0, 1, landscape(&s)).unwrap().rows;
    let dp = run_one(&s, 1, 1, landscape(&s)).unwrap().rows;
    let key = |rows: &[fbo::run::output::TraceRow]| {
        let mut v: Vec<(usize, i64, Option<usize>)> = rows
            .iter()
            .map(|r| (r.agent, r.iteration, r.x_index))
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&ts), key(&dp));
}

#[test]
fn agents_using_the_server_in_a_round_query_the_same_point() {
    let text = SMALL_DP.replace("p_t = \"1-1/sqrt(t)\"", "p_t = 0.1");
    let s = spec(&text);
    let rows = run_one(&s, 1, 2, landscape(&s)).unwrap().rows;
    let mut by_iter: HashMap<i64, Vec<Option<usize>>> = HashMap::new();
    for r in rows.iter().filter(|r| r.source == "server") {
        by_iter.entry(r.iteration).or_default().push(r.x_index);
    }
    assert!(
        by_iter.len() >= 6,
        "most iterations use the server at p_t = 0.1"
    );
    for (t, xs) in by_iter {
        assert!(xs.windows(2).all(|w| w[0] == w[1]), "iteration {t}: {xs:?}");
    }
}

/// `follow = "signal"` (docs/algorithms.md): where the noise drowns the release (z = 1000)
/// the agents mostly keep to their own samples, where the papers' rule follows the server in
/// most rounds at p_t = 0.1 (on pure noise rho is positive whenever a draw's energy exceeds
/// its expectation; on these 2 x 16 coordinates its mean is 0.075, so about 7% of the papers'
/// rows remain); where there is almost no noise (z = 1e-6) the two rules make the same choices.
#[test]
fn agents_follow_the_server_by_the_releases_signal_share() {
    let server_rows = |z: &str, follow: &str| {
        let text = SMALL_DP
            .replace("p_t = \"1-1/sqrt(t)\"", "p_t = 0.1")
            .replace("z = 1.0", &format!("z = {z}\n{follow}"));
        let s = spec(&text);
        let rows = run_one(&s, 1, 2, landscape(&s)).unwrap().rows;
        let server: Vec<(usize, i64)> = rows
            .iter()
            .filter(|r| r.source == "server")
            .map(|r| (r.agent, r.iteration))
            .collect();
        (server, rows)
    };
    let (drowned, _) = server_rows("1000.0", "follow = \"signal\"");
    let (papers, _) = server_rows("1000.0", "");
    assert!(papers.len() > 12 * 8 / 2, "{}", papers.len());
    assert!(
        5 * drowned.len() < papers.len(),
        "{} of {}",
        drowned.len(),
        papers.len()
    );
    let (signal, a) = server_rows("1e-6", "follow = \"signal\"");
    let (schedule, b) = server_rows("1e-6", "follow = \"schedule\"");
    assert!(signal.len() > 12 * 8 / 2, "{}", signal.len());
    assert_eq!(signal, schedule);
    let xs = |rows: &[fbo::run::output::TraceRow]| -> Vec<Option<usize>> {
        rows.iter().map(|r| r.x_index).collect()
    };
    assert_eq!(xs(&a), xs(&b));
}

/// `spec` run with --no-timing on 1 and on 2 threads, into `dir`/t1 and `dir`/t2, each of
/// `files` asserted byte-identical between the two.
fn run_on_one_and_two_threads(spec: &Path, dir: &Path, files: &[&str]) -> Vec<std::path::PathBuf> {
    let outs: Vec<std::path::PathBuf> = ["1", "2"]
        .iter()
        .map(|threads| {
            let out = dir.join(format!("t{threads}"));
            fbo_ok("run", spec, &out, &["--no-timing", "--threads", threads]);
            out
        })
        .collect();
    for f in files {
        assert!(
            fs::read(outs[0].join(f)).unwrap() == fs::read(outs[1].join(f)).unwrap(),
            "{f}"
        );
    }
    outs
}

#[test]
fn run_writes_server_and_privacy_files_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let spec_path = write(dir.path(), "dp.toml", SMALL_DP);
    let outs = run_on_one_and_two_threads(
        &spec_path,
        dir.path(),
        &["trace.csv", "summary.csv", "server.csv", "privacy.csv"],
    );
    // server.csv: 3 runs x 8 rounds for the one algorithm with a server.
    let server = fs::read_to_string(outs[0].join("server.csv")).unwrap();
    assert_eq!(server.lines().count(), 1 + 3 * 8);
    for line in server.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (sel, clipped): (usize, usize) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        assert!(sel <= 12 && clipped <= sel);
    }
    // privacy.csv: epsilon grows with iterations for each accountant; rdp <= rdp-int.
    let privacy = fs::read_to_string(outs[0].join("privacy.csv")).unwrap();
    let mut curves: HashMap<(String, String), Vec<f64>> = HashMap::new();
    for line in privacy.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] == "0" {
            curves
                .entry((f[0].into(), f[3].into()))
                .or_default()
                .push(f[10].parse().unwrap());
        }
    }
    let int = &curves[&("DP-FTS-DE P=2 q=0.5 z=1 S=3".into(), "rdp-int".into())];
    let rdp = &curves[&("DP-FTS-DE P=2 q=0.5 z=1 S=3".into(), "rdp".into())];
    assert_eq!(int.len(), 8);
    assert!(int.windows(2).all(|w| w[1] > w[0]));
    assert!(rdp.iter().zip(int).all(|(a, b)| a <= b));
}

/// Under `server.secure` the server sees only the cohort's sum, in fixed point: on this grid
/// the argmax never moves, so the run's trace and server records equal the plain server's,
/// on any number of threads, except the clipping counts, which the secure server cannot know
/// (each agent clips its own vector): blank in its server.csv.
#[test]
fn secure_aggregation_reproduces_the_plain_server() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP.replace(
        "[[algorithm]]\nkind = \"dp-fts-de\"",
        "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"plain\"\n\n[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"secure\"\nserver = { secure = true }",
    );
    assert_ne!(text, SMALL_DP);
    let spec_path = write(dir.path(), "dp.toml", &text);
    let outs = run_on_one_and_two_threads(
        &spec_path,
        dir.path(),
        &["trace.csv", "server.csv", "privacy.csv"],
    );
    for f in ["trace.csv", "server.csv"] {
        let text = fs::read_to_string(outs[0].join(f)).unwrap();
        let rows = |label: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with(&format!("{label},")))
                .map(|l| l.split_once(',').unwrap().1.to_string())
                .collect()
        };
        assert!(!rows("plain").is_empty());
        if f == "trace.csv" {
            assert_eq!(rows("plain"), rows("secure"), "{f}");
            continue;
        }
        // server.csv without its label: run, round, selected, clipped, clipped_fraction, ...
        let without_clips = |label: &str| -> Vec<String> {
            rows(label)
                .iter()
                .map(|r| {
                    let f: Vec<&str> = r.split(',').collect();
                    [&f[..3], &f[5..]].concat().join(",")
                })
                .collect()
        };
        assert_eq!(without_clips("plain"), without_clips("secure"));
        for r in rows("secure") {
            let f: Vec<&str> = r.split(',').collect();
            assert_eq!((f[3], f[4]), ("", ""), "{r}");
        }
        assert!(
            rows("plain")
                .iter()
                .all(|r| !r.split(',').nth(3).unwrap().is_empty())
        );
    }
}

/// `output.server_view`: server_view.csv holds every message the server received in each
/// secure round and the sum it recovered, byte-identical on 1 and 2 threads, and asking for it
/// changes no other output. Per round: one public key per cohort member (the server's sample
/// here: q = 0.5 of 12), a masked input per member whose vector arrived, shares of the
/// survivors' self-mask seeds only (no agent dropped, so no secret key). The masked words look
/// uniform (a chi-square test on their top 4 bits, 16 bins) and none decodes to a value of the
/// size of a clipped, weighted vector, while the recovered sums all do.
#[test]
fn the_server_view_shows_masked_inputs_and_only_their_sum_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP.replace(
        "[[algorithm]]\nkind = \"dp-fts-de\"",
        "[[algorithm]]\nkind = \"dp-fts-de\"\nserver = { secure = true }",
    );
    let plain = write(dir.path(), "plain.toml", &text);
    let viewed = write(
        dir.path(),
        "viewed.toml",
        &format!("{text}\n[output]\nserver_view = true\n"),
    );
    let outs = run_on_one_and_two_threads(&viewed, dir.path(), &["server_view.csv", "trace.csv"]);
    let without = dir.path().join("plain");
    fbo_ok("run", &plain, &without, &["--no-timing"]);
    for f in ["trace.csv", "server.csv", "privacy.csv"] {
        assert_eq!(
            fs::read(outs[0].join(f)).unwrap(),
            fs::read(without.join(f)).unwrap(),
            "{f}"
        );
    }
    assert!(!without.join("server_view.csv").exists());

    let view = fs::read_to_string(outs[0].join("server_view.csv")).unwrap();
    let mut lines = view.lines();
    assert_eq!(
        lines.next(),
        Some("algorithm,run,round,step,agent,about,payload")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(
        rows.iter()
            .all(|r| r.len() == 7 && r[0].starts_with("DP-FTS-DE"))
    );
    let server = fs::read_to_string(outs[0].join("server.csv")).unwrap();
    let words = |hex: &str| -> Vec<u64> {
        assert_eq!(hex.len() % 16, 0);
        (0..hex.len() / 16)
            .map(|k| u64::from_str_radix(&hex[16 * k..16 * k + 16], 16).unwrap())
            .collect()
    };
    // Clipped to S / sqrt(P), weighted by phi <= 1 and scaled by 1 / q: far below 2^20.
    let small = |w: u64| ((w as i64) as f64 / 2f64.powi(32)).abs() < 1e6;
    let mut bins = [0usize; 16];
    let (mut masked_words, mut rounds) = (0usize, 0usize);
    for line in server.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (run, round) = (f[1], f[2]);
        let cohort: Vec<&str> = f[10].split(';').filter(|a| !a.is_empty()).collect();
        let of = |step: &str| -> Vec<&Vec<&str>> {
            rows.iter()
                .filter(|r| r[1] == run && r[2] == round && r[3] == step)
                .collect()
        };
        let adverts: Vec<&str> = of("advertise").iter().map(|r| r[4]).collect();
        assert_eq!(
            adverts, cohort,
            "run {run} round {round}: one key per member"
        );
        assert!(of("advertise").iter().all(|r| r[6].len() == 64));
        let masked = of("masked");
        assert_eq!(masked.len(), cohort.len(), "no agent dropped");
        for m in &masked {
            let w = words(m[6]);
            assert_eq!(w.len(), 2 * 16, "P M words");
            assert!(
                w.iter().filter(|&&v| small(v)).count() <= 1,
                "masked words look random"
            );
            for v in w {
                bins[(v >> 60) as usize] += 1;
                masked_words += 1;
            }
        }
        assert!(
            of("reveal-key").is_empty(),
            "nobody dropped: no secret key revealed"
        );
        for r in of("reveal-seed") {
            assert!(cohort.contains(&r[4]) && cohort.contains(&r[5]));
        }
        if !cohort.is_empty() {
            let sum = of("sum");
            assert_eq!(sum.len(), 1);
            assert!(words(sum[0][6]).into_iter().all(small), "the sum decodes");
            rounds += 1;
        }
    }
    assert!(rounds >= 20, "{rounds} secure rounds");
    let expected = masked_words as f64 / 16.0;
    let chi2: f64 = bins
        .iter()
        .map(|&b| (b as f64 - expected).powi(2) / expected)
        .sum();
    // 15 degrees of freedom: P(chi2 > 37.7) = 0.001.
    assert!(
        chi2 < 37.7,
        "chi2 {chi2} over {masked_words} words: {bins:?}"
    );
}

/// `server.noise = "distributed"`: the agents add discrete Gaussian shares before masking.
/// The run is byte-identical on 1 and 2 threads; privacy.csv accounts it with every
/// accountant (pld through its Gaussian stand-in, at most 1e-6 above the central epsilon),
/// writes the amplified epsilon against those who see the releases and, the server drawing
/// the sample, the unamplified one against the server; with self-sampling the amplified one
/// holds against the server itself. The same selection and the same total noise s.d. as the
/// central server's.
#[test]
fn distributed_noise_runs_and_says_whom_each_epsilon_holds_against() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("accountants = [\"rdp-int\", \"rdp\"]", "")
        .replace(
            "[[algorithm]]\nkind = \"dp-fts-de\"",
            "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"central\"\n\n\
             [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"distributed\"\n\
             server = { secure = true, secure_dropout = 0.2, noise = \"distributed\" }\n\n\
             [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"self\"\n\
             server = { secure = true, noise = \"distributed\", self_sampling = true }",
        );
    let spec_path = write(dir.path(), "dp.toml", &text);
    let outs = run_on_one_and_two_threads(
        &spec_path,
        dir.path(),
        &["trace.csv", "server.csv", "privacy.csv"],
    );
    let privacy = fs::read_to_string(outs[0].join("privacy.csv")).unwrap();
    let last = |label: &str, acc: &str, against: &str| -> (f64, f64) {
        let row: Vec<String> = privacy
            .lines()
            .rfind(|l| {
                let f: Vec<&str> = l.split(',').collect();
                f[0] == label && f[2] == "8" && f[3] == acc && f[9] == against
            })
            .unwrap_or_else(|| panic!("{label} {acc} {against}"))
            .split(',')
            .map(String::from)
            .collect();
        (row[6].parse().unwrap(), row[10].parse().unwrap())
    };
    for l in privacy
        .lines()
        .filter(|l| !l.starts_with("central,"))
        .skip(1)
    {
        assert!(l.contains(",distributed,"), "{l}");
    }
    let (_, central_pld) = last("central", "pld", "outsiders");
    let (_, distributed_pld) = last("distributed", "pld", "outsiders");
    assert!(
        distributed_pld >= central_pld && distributed_pld <= central_pld * (1.0 + 1e-6),
        "{distributed_pld} vs {central_pld}"
    );
    let (_, central) = last("central", "rdp", "outsiders");
    let (q, outsiders) = last("distributed", "rdp", "outsiders");
    let (q_server, server) = last("distributed", "rdp", "server");
    let (_, self_sampled) = last("self", "rdp", "server");
    assert_eq!((q, q_server), (0.5, 1.0));
    // The stand-in's (tighter here than KLS's general bound) is the central epsilon at a
    // noise multiplier 3e-9 below z; the server, knowing the sample, gets no amplification.
    assert!(
        outsiders >= central && outsiders <= central * (1.0 + 1e-6),
        "{outsiders} vs {central}"
    );
    assert!(server > 1.5 * outsiders, "{server} vs {outsiders}");
    assert_eq!(self_sampled, outsiders);
    // server.csv's column `index` for one algorithm, round by round.
    let server_csv = fs::read_to_string(outs[0].join("server.csv")).unwrap();
    let column = |label: &str, index: usize| -> Vec<String> {
        server_csv
            .lines()
            .filter(|l| l.starts_with(&format!("{label},")))
            .map(|l| l.split(',').nth(index).unwrap().to_string())
            .collect()
    };
    // The same noise s.d. (column 8) as the central server's.
    let noise = |label: &str| column(label, 8);
    assert!(!noise("central").is_empty());
    assert_eq!(noise("central"), noise("distributed"));
    assert_eq!(noise("central"), noise("self"));
    // The server draws the central noise it does not add, so it selects the same cohorts
    // (selected_agents, column 10).
    assert_eq!(column("central", 10), column("distributed", 10));
}

#[test]
fn server_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, expect) in [
        (
            "q = 0.5",
            "q = 1.5",
            "key `server.q`: must be a sampling rate in (0, 1], got 1.5",
        ),
        ("clip = 3.0", "clip = -1.0", "key `server.clip`"),
        (
            "subregions = 2",
            "subregions = 0",
            "key `server.subregions`",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nserver = { dp = false, q = 0.3 }",
            "key `algorithm[1].server.q`: applies only with dp = true",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nweights = \"soft\"",
            "unknown weights \"soft\"",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nserver = { dp = false, follow = \"signal\" }",
            "key `algorithm[1].server.follow`: applies only with dp = true",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nfollow = \"noise\"",
            "key `server.follow`: unknown follow rule \"noise\"; allowed: \"schedule\"",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nsecure = true\nsecure_dropout = 0.5",
            "key `server.secure_dropout`: must be a fraction in [0, 0.5)",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nserver = { secure_dropout = 0.2 }",
            "key `algorithm[1].server.secure_dropout`: applies only with secure = true",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nnoise = \"distributed\"",
            "key `server.noise`: needs secure = true",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nsecure = true\nnoise = \"local\"",
            "key `server.noise`: unknown noise \"local\"; allowed: \"central\"",
        ),
        (
            "clip = 3.0",
            // Shares of 0.8 lattice steps, a total of 2.9: KLS's bound holds, and no Gaussian
            // stand-in is near enough for pld.
            "clip = 8e-9\nsecure = true\nnoise = \"distributed\"\nmax_epsilon = 5.0\nbudget_accountant = \"pld\"",
            "key `server.budget_accountant`: the pld accountant accounts distributed discrete Gaussian noise through the continuous Gaussian mechanism it stands close to, which needs a total noise s.d. above 4 lattice steps",
        ),
        (
            "clip = 3.0\n\n[privacy]\naccountants = [\"rdp-int\", \"rdp\"]",
            "clip = 8e-9\nsecure = true\nnoise = \"distributed\"\n\n[privacy]\naccountants = [\"rdp-int\", \"pld\"]",
            "key `server.noise`: the pld accountant accounts distributed discrete Gaussian noise through the continuous Gaussian mechanism it stands close to, which needs a total noise s.d. above 4 lattice steps (z S 2^32 / N) and shares above about 2 steps (z S 2^32 / N^1.5); use rdp or rdp-int, or raise z or clip (privacy.accountants[1] = \"pld\")",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nsecure = true\nself_sampling = true\nsampling = \"fixed\"\nadjacency = \"replace-one\"",
            "key `server.self_sampling`: needs sampling = \"poisson\"",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nself_sampling = true",
            "key `server.self_sampling`: needs secure = true",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nsecure = true\nsecure_neighbours = 3",
            "key `server.secure_neighbours`: must be an even number >= 2",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nserver = { secure_neighbours = 4 }",
            "key `algorithm[1].server.secure_neighbours`: applies only with secure = true",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nshared = \"agreed\"\nserver = { secure = true, self_sampling = true }",
            "key `algorithm[1].server.self_sampling`: under self-sampling the server must not learn who took part",
        ),
        (
            "[privacy]",
            "[output]\nserver_view = true\n\n[privacy]",
            "key `output.server_view`: shows what a server sees under secure aggregation, and no algorithm has one",
        ),
        (
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\nserver = { dp = false, noise = \"distributed\" }",
            "key `algorithm[1].server.noise`: applies only with dp = true",
        ),
        (
            "clip = 3.0",
            "clip = 1e-9\nsecure = true\nnoise = \"distributed\"",
            "raise z or clip",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nsampling = \"fixed\"\nadjacency = \"add-remove\"",
            "key `server.adjacency`: fixed-size sampling is analysed under replace-one adjacency only",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nadjacency = \"replace-one\"",
            "the rdp-int accountant has no replace-one analysis of Poisson sampling; use pld",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nmax_epsilon = -1.0",
            "key `server.max_epsilon`: must be a finite number > 0, got -1",
        ),
        (
            "dp = true\nq = 0.5\nz = 1.0\nclip = 3.0",
            "dp = false\nmax_epsilon = 2.0",
            "key `server.max_epsilon`: applies only with dp = true, and no algorithm of this spec is private",
        ),
        (
            "dp = true\nq = 0.5\nz = 1.0\nclip = 3.0",
            "dp = false\nadjacency = \"replace-one\"",
            "key `server.adjacency`: applies only with dp = true, and no algorithm of this spec is private",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nbudget_accountant = \"rdp\"",
            "key `server.budget_accountant`: applies only with max_epsilon",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nmax_epsilon = 2.0\nbudget_accountant = \"rdp\"\nadjacency = \"replace-one\"",
            "key `server.budget_accountant`: the rdp accountant has no replace-one analysis",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\ndrop = 1.0",
            "key `server.drop`: must be a probability in [0, 1), got 1",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\ndrop = [0.1, 0.2]",
            "has 2 entries; give one drop probability per agent (12) or a single number",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nlatency = 2.0",
            "key `server.deadline`: latency (the mean of an exponential delay) and deadline go together",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\noutage = 0.1\noutage_agents = 13",
            "key `server.outage_agents`: must be an integer in [1, 12], got 13",
        ),
        (
            "clip = 3.0",
            "clip = 3.0\nadjacency = \"neighbours\"",
            "unknown adjacency \"neighbours\"; allowed: \"add-remove\", \"replace-one\"",
        ),
        (
            "kind = \"ts\"",
            "kind = \"ts\"\nserver = { subregions = 2 }",
            "TS uses no federation",
        ),
    ] {
        let text = SMALL_DP.replace(from, to);
        let p = write(dir.path(), "bad.toml", &text);
        let o = validate(&p);
        assert_eq!(o.status.code(), Some(2), "{expect}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(expect),
            "expected {expect:?} in {}",
            stderr(&o)
        );
    }
}

#[test]
fn fixed_size_sampling_is_accounted_at_the_rate_the_server_realises() {
    // N = 30, q = 0.35: the server selects round(10.5) = 11 agents, rate 11/30. Reference:
    // Wang, Balle & Kasiviswanathan (2019, Thm. 9) with eps(j) = 2 j / z^2 and the classic
    // conversion over orders 2..=32, written independently in Python with mpmath (50 digits):
    // T = 8, z = 1, delta = 30^-1.1 gives 25.760831706309 at q = 11/30 (25.066102571507 at the
    // nominal 0.35, which is what fbo wrote before). The optimal order is 2, where Thm. 27
    // (what fbo now uses) and Thm. 9 coincide.
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("agents = 12", "agents = 30")
        .replace("q = 0.5", "q = 0.35")
        .replace("clip = 3.0", "clip = 3.0\nsampling = \"fixed\"")
        .replace("runs = 3", "runs = 1")
        .replace(
            "accountants = [\"rdp-int\", \"rdp\"]",
            "accountants = [\"rdp-int\"]",
        );
    let spec_path = write(dir.path(), "dp.toml", &text);
    let out = dir.path().join("out");
    fbo_ok("run", &spec_path, &out, &["--no-timing"]);
    let privacy = fs::read_to_string(out.join("privacy.csv")).unwrap();
    assert!(privacy.starts_with(
        "algorithm,run,iteration,accountant,sampling,adjacency,q,delta,noise,against,epsilon\n"
    ));
    let last: Vec<&str> = privacy.lines().last().unwrap().split(',').collect();
    assert_eq!(
        (last[2], last[3], last[4], last[5]),
        ("8", "rdp-int", "fixed", "replace-one")
    );
    assert!((last[6].parse::<f64>().unwrap() - 11.0 / 30.0).abs() < 1e-15);
    let eps: f64 = last[10].parse().unwrap();
    assert!((eps - 25.760831706309).abs() < 1e-6, "{eps}");
    // Every server round selected exactly those 11.
    let server = fs::read_to_string(out.join("server.csv")).unwrap();
    assert!(
        server
            .lines()
            .skip(1)
            .all(|l| l.split(',').nth(3) == Some("11"))
    );
}

#[test]
fn fixed_size_sampling_that_selects_nobody_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("q = 0.5", "q = 0.04")
        .replace("clip = 3.0", "clip = 3.0\nsampling = \"fixed\"");
    let out = validate(&write(dir.path(), "dp.toml", &text));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("key `server.q`") && err.contains("selects none"),
        "{err}"
    );
}

#[test]
fn a_run_with_a_vanishing_noise_multiplier_finishes_and_reports_no_finite_epsilon() {
    // z = 1e-200: rdp's fractional series used to loop forever on NaN here, and pld to report
    // ln(f64::MAX) = 709.78. Every accountant now writes +inf: no finite guarantee.
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("z = 1.0", "z = 1e-200")
        .replace("runs = 3", "runs = 1")
        .replace(
            "accountants = [\"rdp-int\", \"rdp\"]",
            "accountants = [\"rdp-int\", \"rdp\", \"pld\"]",
        );
    let spec_path = write(dir.path(), "dp.toml", &text);
    let out = dir.path().join("out");
    fbo_ok("run", &spec_path, &out, &["--no-timing"]);
    let privacy = fs::read_to_string(out.join("privacy.csv")).unwrap();
    let rows: Vec<&str> = privacy.lines().skip(1).collect();
    assert_eq!(rows.len(), 3 * 8);
    assert!(rows.iter().all(|r| r.ends_with(",inf")), "{privacy}");
    assert!(
        rows[0].starts_with("DP-FTS-DE P=2 q=0.5 z=1e-200 S=3,"),
        "{}",
        rows[0]
    );
}

/// Exact epsilon of one round of the Poisson-subsampled Gaussian at rate r and noise z
/// (add/remove adjacency): delta(eps) = r delta_G(u) with e^eps = 1 - r + r e^u, where
/// delta_G(u) = Phi(-z u + 1/(2z)) - e^u Phi(-z u - 1/(2z)) is the Gaussian mechanism's curve
/// (Balle & Wang 2018); the add direction never exceeds it above 0. Bisection on u.
fn one_round_epsilon(r: f64, z: f64, delta: f64) -> f64 {
    let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
    let dg = |u: f64| phi(-z * u + 0.5 / z) - u.exp() * phi(-z * u - 0.5 / z);
    let (mut a, mut b) = (0.0, 50.0);
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        if r * dg(m) > delta { a = m } else { b = m }
    }
    (1.0 - r + r * b.exp()).ln()
}

#[test]
fn dropped_messages_keep_the_accounted_epsilon_an_upper_bound() {
    // 12 agents, q = 0.5, z = 1, every message dropped with probability 0.5: each round an
    // agent's message enters the aggregate with probability 0.25, the noise unchanged. The true
    // epsilon of one round is then the subsampled Gaussian's at rate 0.25 (closed form above);
    // fbo accounts at the nominal 0.5, which must not be below it, and must write the same
    // epsilons as without dropouts. A server that rescaled its noise to what arrived, or an
    // accountant given an "effective" rate while the noise shrank, fails here.
    let dir = tempfile::tempdir().unwrap();
    let base = SMALL_DP
        .replace("runs = 3", "runs = 4")
        .replace("iterations = 8", "iterations = 20")
        .replace(
            "accountants = [\"rdp-int\", \"rdp\"]",
            "accountants = [\"pld\"]\ndelta = 1e-5",
        );
    let lossy = base.replace("clip = 3.0", "clip = 3.0\ndrop = 0.5");
    let mut outs = Vec::new();
    for (name, text) in [("full", &base), ("lossy", &lossy)] {
        let spec_path = write(dir.path(), &format!("{name}.toml"), text);
        let out = dir.path().join(name);
        fbo_ok("run", &spec_path, &out, &["--no-timing"]);
        outs.push(out);
    }
    let read = |d: &Path, f: &str| fs::read_to_string(d.join(f)).unwrap();
    assert_eq!(read(&outs[0], "privacy.csv"), read(&outs[1], "privacy.csv"));
    let rows = |d: &Path| -> Vec<Vec<String>> {
        read(d, "server.csv")
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect())
            .collect()
    };
    let (full, lossy) = (rows(&outs[0]), rows(&outs[1]));
    assert_eq!(full.len(), lossy.len());
    let (mut arrived, mut selected) = (0usize, 0usize);
    for (f, l) in full.iter().zip(&lossy) {
        // Same selection, same noise; the missing agents are among the selected ones.
        assert_eq!((&f[3], &f[8], &f[10]), (&l[3], &l[8], &l[10]));
        let sel: Vec<&str> = l[10].split(';').filter(|s| !s.is_empty()).collect();
        let missing: Vec<&str> = l[11].split(';').filter(|s| !s.is_empty()).collect();
        assert!(missing.iter().all(|m| sel.contains(m)));
        assert_eq!(l[9].parse::<usize>().unwrap() + missing.len(), sel.len());
        arrived += l[9].parse::<usize>().unwrap();
        selected += sel.len();
    }
    let kept = arrived as f64 / selected as f64;
    assert!((kept - 0.5).abs() < 0.1, "{kept}");
    // The first round's epsilon against the exact one at the effective rate 0.25, and at 0.5.
    let first: f64 = read(&outs[1], "privacy.csv")
        .lines()
        .nth(1)
        .unwrap()
        .rsplit(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (effective, nominal) = (
        one_round_epsilon(0.25, 1.0, 1e-5),
        one_round_epsilon(0.5, 1.0, 1e-5),
    );
    assert!(
        first >= nominal - 1e-3 && first <= nominal * 1.01,
        "{first} vs {nominal}"
    );
    assert!(first > effective, "{first} vs {effective}");
}

#[test]
fn a_privacy_budget_stops_the_server_before_it_would_be_exceeded() {
    // SMALL_DP's DP-FTS-DE (q = 0.5, z = 1, N = 12, delta = 12^-1.1) with epsilon <= 3 (pld):
    // the rounds that fit are found here by a plain scan of the accountant.
    let delta = 12f64.powf(-1.1);
    let mech = |t: u64| fbo::privacy::Mechanism {
        q: 0.5,
        z: 1.0,
        steps: t,
        sampling: fbo::privacy::Sampling::Poisson,
        adjacency: fbo::privacy::Adjacency::AddRemove,
        noise: fbo::privacy::Noise::Gaussian,
    };
    let eps = |t: u64| {
        fbo::privacy::epsilon(fbo::privacy::Accountant::Pld, &mech(t), delta)
            .unwrap()
            .epsilon
    };
    let fit = (0..=8u64).take_while(|&t| eps(t) <= 3.0).last().unwrap();
    assert!(
        fit > 0 && fit < 8,
        "the setting must stop the server part-way: {fit}"
    );
    let text = SMALL_DP
        .replace("clip = 3.0", "clip = 3.0\nmax_epsilon = 3.0")
        .replace(
            "accountants = [\"rdp-int\", \"rdp\"]",
            "accountants = [\"rdp\", \"pld\"]",
        );
    let dir = tempfile::tempdir().unwrap();
    let spec_path = write(dir.path(), "dp.toml", &text);
    // It says so, before anything runs.
    let v = validate(&spec_path);
    assert!(v.status.success(), "{}", stderr(&v));
    let said = String::from_utf8_lossy(&v.stdout).to_string();
    assert!(
        said.contains(&format!(
            "allows {fit} of 8 rounds; its server stops after round {fit}"
        )),
        "{said}"
    );
    let out = dir.path().join("out");
    fbo_ok("run", &spec_path, &out, &["--no-timing"]);
    // Only the rounds within the budget were released, in every run.
    let server = fs::read_to_string(out.join("server.csv")).unwrap();
    assert_eq!(server.lines().count(), 1 + 3 * fit as usize);
    // Epsilon stops growing there, within the budget for its accountant, and no later query
    // comes from the server.
    let privacy = fs::read_to_string(out.join("privacy.csv")).unwrap();
    for line in privacy.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (t, e): (u64, f64) = (f[2].parse().unwrap(), f[10].parse().unwrap());
        if f[3] == "pld" {
            assert!(e <= 3.0, "{line}");
            assert!((e - eps(t.min(fit))).abs() < 1e-9, "{line}");
        }
    }
    let s = spec(&text);
    let rows = run_one(&s, 1, 0, landscape(&s)).unwrap().rows;
    assert!(rows.iter().any(|r| r.source == "server"));
    assert!(
        rows.iter()
            .filter(|r| r.iteration > fit as i64)
            .all(|r| r.source != "server")
    );
}

/// A run whose server clips most messages says so at its end, naming the key to raise; one
/// that clips few says nothing. (The README's first spec clipped every vector at S = 5.)
#[test]
fn a_run_that_clips_most_messages_warns() {
    let dir = tempfile::tempdir().unwrap();
    for (clip, warns) in [("5.0", true), ("15.0", false)] {
        let spec = write(
            dir.path(),
            "c.toml",
            &format!(
                "name = \"c\"\nseed = 1\nruns = 2\niterations = 10\ninitial_points = 2\n[objective]\nkind = \"synthetic-dp\"\ngrid = 300\nlength_scale = 0.05\n[federation]\nagents = 10\n[server]\nsubregions = 2\ndp = true\nq = 0.5\nz = 1.0\nclip = {clip}\n[[algorithm]]\nkind = \"ts\"\n[[algorithm]]\nkind = \"dp-fts-de\"\n"
            ),
        );
        let o = fbo()
            .arg("run")
            .arg(&spec)
            .arg("--out")
            .arg(dir.path().join(clip))
            .arg("--no-timing")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(
            err.contains("warning: DP-FTS-DE P=2 q=0.5 z=1") && err.contains("raise server.clip"),
            warns,
            "S = {clip}: {err}"
        );
    }
}

/// privacy.csv's epsilons, one per line after the header.
fn epsilons(out: &Path) -> Vec<String> {
    fs::read_to_string(out.join("privacy.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().to_string())
        .collect()
}

#[test]
fn an_agreed_shared_model_is_accounted_with_its_agreement() {
    // The agreement rides on each round's selection: the round is one Gaussian mechanism of
    // multiplier (z^-2 + z_h^-2)^-1/2. z = 3 and z_h = 4 give exactly 2.4, so a run with the
    // agreement must write the epsilons of a run at z = 2.4 without it, and more than at z = 3.
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, text: String| {
        let spec_path = write(dir.path(), &format!("{name}.toml"), &text);
        let out = dir.path().join(name);
        fbo_ok("run", &spec_path, &out, &["--no-timing"]);
        epsilons(&out)
    };
    let base = SMALL_DP.replace("runs = 3", "runs = 1");
    let agreed = run(
        "agreed",
        base.replace("z = 1.0", "z = 3.0\nagreement_z = 4.0")
            .replace("features = 16", "features = 16\nshared = \"agreed\""),
    );
    let equivalent = run("equivalent", base.replace("z = 1.0", "z = 2.4"));
    let plain = run("plain", base.replace("z = 1.0", "z = 3.0"));
    assert_eq!(agreed.len(), 16);
    assert_eq!(agreed, equivalent);
    for (a, p) in agreed.iter().zip(&plain) {
        assert!(a.parse::<f64>().unwrap() > p.parse::<f64>().unwrap());
    }
    // By default the agreement's multiplier is 3 z: z 3 / sqrt(10) = 0.949 z in all.
    let default = run(
        "default",
        base.replace("features = 16", "features = 16\nshared = \"agreed\""),
    );
    let pair = fbo::surrogate::agreement::effective_z(1.0, 3.0);
    assert!((pair - 3.0 / 10f64.sqrt()).abs() < 1e-15);
    let equal = run("equal", base.replace("z = 1.0", &format!("z = {pair:?}")));
    assert_eq!(default, equal);
}

#[test]
fn agreement_keys_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expect) in [
        (
            SMALL_DP.replace("clip = 3.0", "clip = 3.0\nagreement_z = 2.0"),
            "key `server.agreement_z`: agreement_z and agreement_clip apply only with shared = \"agreed\"",
        ),
        (
            SMALL_DP
                .replace("clip = 3.0", "clip = 3.0\nagreement_clip = -1.0")
                .replace("features = 16", "features = 16\nshared = \"agreed\""),
            "key `server.agreement_clip`: must be a finite number > 0, got -1",
        ),
        (
            SMALL_DP.replace("features = 16", "features = 16\nshared = \"learned\""),
            "key `surrogate.shared`: unknown shared model \"learned\"; allowed: \"fixed\", \"agreed\"",
        ),
        (
            SMALL_DP.replace("kind = \"ts\"", "kind = \"ts\"\nshared = \"agreed\""),
            "key `algorithm[0].shared`: applies only to kinds whose messages are random-feature weights",
        ),
    ] {
        let o = validate(&write(dir.path(), "bad.toml", &text));
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert_says(&o, expect);
    }
}

#[test]
fn the_shared_model_defaults_to_agreed_only_where_it_was_measured() {
    use fbo::spec::SharedModel::{Agreed, Fixed};
    let base = "name = \"s\"\niterations = 2\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n[federation]\nagents = 3\n[[algorithm]]\nkind = \"dp-fts-de\"\n[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"private\"\nserver = { dp = true, q = 1.0 }\n[[algorithm]]\nkind = \"fts\"\n[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"secure\"\nserver = { dp = true, q = 1.0, secure = true }\n[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"allocated\"\nserver = { dp = true, sampling = \"allocation\" }\n";
    let kinds = |text: &str| -> Vec<_> { spec(text).algorithms.iter().map(|a| a.shared).collect() };
    // A function: agreed for the server form, private too, where the agreement is built
    // (not under secure aggregation or random allocation); the agreement's noise 3 z.
    assert_eq!(kinds(base), [Agreed, Agreed, Fixed, Fixed, Fixed]);
    let private = &spec(base).algorithms[1];
    let dp = private.server.as_ref().unwrap().dp.as_ref().unwrap();
    assert_eq!(dp.agreement.map(|a| (a.z, a.clip)), Some((3.0, 3.0)));
    // Pinned features keep the papers' model; a written choice holds for all.
    let pinned = base.replace(
        "[federation]",
        "[surrogate]\nlength_scale = 0.2\n[federation]",
    );
    assert_eq!(kinds(&pinned), [Fixed; 5]);
    let written = base
        .replace(
            "[federation]",
            "[surrogate]\nshared = \"agreed\"\n[federation]",
        )
        .replace(
            "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"secure\"",
            "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"secure\"\nshared = \"fixed\"",
        )
        .replace(
            "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"allocated\"",
            "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"allocated\"\nshared = \"fixed\"",
        );
    assert_eq!(kinds(&written), [Agreed, Agreed, Agreed, Fixed, Fixed]);
    // The papers' objectives keep theirs.
    let synthetic = base.replace(
        "kind = \"function\"\nfunction = \"branin\"",
        "kind = \"synthetic-dp\"\ngrid = 50\nfunctions = 1",
    );
    assert_eq!(kinds(&synthetic), [Fixed; 5]);
}

/// `server.follow` unwritten: "signal" on a function or command objective, the papers' rule
/// on theirs; written, as written.
#[test]
fn the_follow_rule_defaults_to_signal_only_beyond_the_papers_objectives() {
    use fbo::spec::Follow::{Schedule, Signal};
    let follow = |text: &str| {
        let s = spec(text);
        s.algorithms[1].server.as_ref().unwrap().dp.unwrap().follow
    };
    let function = "name = \"s\"\niterations = 2\n[objective]\nkind = \"function\"\nfunction = \"branin\"\n[federation]\nagents = 3\n[[algorithm]]\nkind = \"ts\"\n[[algorithm]]\nkind = \"dp-fts-de\"\nserver = { dp = true }\n";
    assert_eq!(follow(function), Signal);
    assert!(
        spec(function).algorithms[1]
            .label
            .ends_with("follow=signal")
    );
    let written = function.replace("dp = true }", "dp = true, follow = \"schedule\" }");
    assert_eq!(follow(&written), Schedule);
    assert_eq!(follow(SMALL_DP), Schedule);
    assert_eq!(
        follow(&SMALL_DP.replace("z = 1.0", "z = 1.0\nfollow = \"signal\"")),
        Signal
    );
}

#[test]
fn a_batch_per_round_adds_own_samples_and_keeps_one_message_per_round() {
    let one = spec(SMALL_DP);
    let three = spec(&SMALL_DP.replace("initial_points = 3", "initial_points = 3\nbatch = 3"));
    let (r1, r3) = (
        run_one(&one, 1, 0, landscape(&one)).unwrap(),
        run_one(&three, 1, 0, landscape(&three)).unwrap(),
    );
    // Every agent: its 3 initial points, then 8 rounds of 3 evaluations (iterations 1..=24).
    for a in 0..12 {
        let its: Vec<i64> = r3
            .rows
            .iter()
            .filter(|r| r.agent == a)
            .map(|r| r.iteration)
            .collect();
        assert_eq!(its, (-2..=24).collect::<Vec<i64>>(), "agent {a}");
        // The round's first query is the unbatched algorithm's (same streams so far); the
        // others are the agent's own samples, so the server's point comes at most once.
        let first = |rows: &[fbo::run::output::TraceRow]| {
            rows.iter()
                .find(|r| r.agent == a && r.iteration == 1)
                .map(|r| (r.x_index, r.source.clone()))
        };
        assert_eq!(first(&r1.rows), first(&r3.rows), "agent {a}");
        for round in r3
            .rows
            .iter()
            .filter(|r| r.agent == a && r.iteration >= 1)
            .collect::<Vec<_>>()
            .chunks(3)
        {
            assert!(round[1..].iter().all(|r| r.source == "own"));
        }
    }
    // One server round (and one message per agent) per round, whatever the batch.
    assert_eq!(r3.server.len(), 8);
    let refused = SMALL_DP
        .replace(
            "initial_points = 3",
            "initial_points = 3\nbatch = 2\n[clock]",
        )
        .replace(
            "kind = \"dp-fts-de\"",
            "kind = \"dp-fts-de\"\npace = \"asynchronous\"",
        );
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "async-batch.toml", &refused);
    assert_refused(&p, "dp-fts-de in rounds");
}

/// SMALL_DP with random allocation: 2 runs of 10 rounds, each agent in 3 (periods of 4, 3
/// and 3 rounds), z = 2, delta = 1e-5.
fn allocating_spec() -> String {
    SMALL_DP
        .replace("iterations = 8", "iterations = 10")
        .replace("runs = 3", "runs = 2")
        .replace(
            "q = 0.5\n",
            "sampling = \"allocation\"\nrounds_per_agent = 3\n",
        )
        .replace("z = 1.0", "z = 2.0")
        .replace("accountants = [\"rdp-int\", \"rdp\"]", "delta = 1e-5")
}

/// `server.sampling = "allocation"`: every agent takes part in exactly `rounds_per_agent`
/// rounds, one in each period (rounds 1-4, 5-7, 8-10 of 10), as server.csv's selected agents
/// show; privacy.csv is random allocation's accountant, one epsilon per period (a period
/// counts in full from its first round), ending at the whole allocation's.
#[test]
fn random_allocation_takes_each_agent_in_k_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let text = allocating_spec();
    let spec = write(dir.path(), "alloc.toml", &text);
    let out = dir.path().join("out");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let server = Csv::read(&out.join("server.csv"));
    for run in ["0", "1"] {
        let rounds: Vec<_> = server.records().filter(|r| r.get("run") == run).collect();
        assert_eq!(rounds.len(), 10);
        let mut taken = vec![Vec::new(); 12];
        for r in &rounds {
            let round: usize = r.get("round").parse().unwrap();
            let agents = r.get("selected_agents");
            for a in agents.split(';').filter(|a| !a.is_empty()) {
                taken[a.parse::<usize>().unwrap()].push(round);
            }
            assert_eq!(
                r.num("selected") as usize,
                agents.split(';').filter(|a| !a.is_empty()).count()
            );
        }
        // Rounds are numbered from 0 in server.csv: periods 0-3, 4-6, 7-9.
        for (agent, rounds) in taken.iter().enumerate() {
            let periods: Vec<usize> = rounds
                .iter()
                .map(|&t| match t {
                    0..=3 => 0,
                    4..=6 => 1,
                    _ => 2,
                })
                .collect();
            assert_eq!(periods, [0, 1, 2], "agent {agent} in rounds {rounds:?}");
        }
    }
    let privacy = Csv::read(&out.join("privacy.csv"));
    let curve: Vec<f64> = privacy
        .records()
        .filter(|r| r.get("run") == "0")
        .map(|r| {
            assert_eq!(r.get("accountant"), "allocation");
            assert_eq!(r.get("sampling"), "allocation");
            r.num("epsilon")
        })
        .collect();
    assert_eq!(curve.len(), 10);
    let whole = fbo::privacy::allocation::epsilon(2.0, 10, 3, 1e-5).unwrap();
    let first = fbo::privacy::allocation::epsilon(2.0, 4, 1, 1e-5).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b;
    assert!(
        close(curve[0], first) && close(curve[3], first),
        "{curve:?}"
    );
    assert!(curve[4] > curve[3] && curve[4] == curve[6] && curve[7] > curve[6]);
    assert!(close(curve[9], whole), "{} against {whole}", curve[9]);
}

/// Random allocation with distributed noise under secure aggregation: the central server's
/// allocation (server.csv's selected agents), random allocation's epsilon against
/// outsiders through the Gaussian stand-in (at most 1e-6 above the central one, every
/// iteration), and against the server, which draws the allocation, each period begun one
/// unsampled round of the Gaussian (q = 1: 1 round by iteration 4, 2 by 7, 3 by 10).
#[test]
fn random_allocation_with_distributed_noise_says_what_holds_against_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let text = allocating_spec().replace(
        "[[algorithm]]\nkind = \"dp-fts-de\"",
        "[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"central\"\n\n\
         [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"distributed\"\n\
         server = { secure = true, noise = \"distributed\" }",
    );
    let spec = write(dir.path(), "alloc.toml", &text);
    let out = dir.path().join("out");
    fbo_ok("run", &spec, &out, &["--no-timing"]);
    let server = Csv::read(&out.join("server.csv"));
    let selected = |label: &str| -> Vec<String> {
        server
            .records()
            .filter(|r| r.get("algorithm") == label)
            .map(|r| r.get("selected_agents").to_string())
            .collect()
    };
    // Each of the 12 agents in 3 rounds of each run, the same rounds under either server.
    assert_eq!(selected("central"), selected("distributed"));
    for label in ["central", "distributed"] {
        let rows = selected(label);
        assert_eq!(rows.len(), 20);
        let mut taken = vec![0; 12];
        for a in rows
            .iter()
            .flat_map(|r| r.split(';'))
            .filter(|a| !a.is_empty())
        {
            taken[a.parse::<usize>().unwrap()] += 1;
        }
        assert_eq!(taken, vec![6; 12], "{label}");
    }
    let privacy = Csv::read(&out.join("privacy.csv"));
    let curve = |label: &str, acc: &str, against: &str| -> Vec<f64> {
        privacy
            .records()
            .filter(|r| r.get("run") == "0" && r.get("algorithm") == label)
            .filter(|r| r.get("accountant") == acc && r.get("against") == against)
            .map(|r| r.num("epsilon"))
            .collect()
    };
    let central = curve("central", "allocation", "outsiders");
    let distributed = curve("distributed", "allocation", "outsiders");
    assert_eq!((central.len(), distributed.len()), (10, 10));
    for (d, c) in distributed.iter().zip(&central) {
        assert!(*d >= *c && *d <= c * (1.0 + 1e-6), "{d} vs {c}");
    }
    let server_pld = curve("distributed", "pld", "server");
    assert_eq!(server_pld.len(), 10);
    let unsampled = |rounds: u64| {
        let m = fbo::privacy::Mechanism {
            q: 1.0,
            z: 2.0,
            steps: rounds,
            sampling: fbo::privacy::Sampling::Poisson,
            adjacency: fbo::privacy::Adjacency::AddRemove,
            noise: fbo::privacy::Noise::Gaussian,
        };
        fbo::privacy::epsilon(fbo::privacy::Accountant::Pld, &m, 1e-5)
            .unwrap()
            .epsilon
    };
    for (t, e) in server_pld.iter().enumerate() {
        let rounds = match t + 1 {
            1..=4 => 1,
            5..=7 => 2,
            _ => 3,
        };
        let g = unsampled(rounds);
        assert!(
            *e >= g && *e <= g * (1.0 + 1e-6),
            "iteration {}: {e} vs {g}",
            t + 1
        );
    }
    assert!(
        server_pld[9] > distributed[9],
        "{server_pld:?} vs {distributed:?}"
    );
}

/// The keys random allocation has no use for, and the accountants and forms without an
/// analysis of it, are refused by name.
#[test]
fn random_allocation_refuses_what_it_has_no_analysis_of() {
    let dir = tempfile::tempdir().unwrap();
    let text = allocating_spec();
    let refused = |name: &str, text: String, want: &str| {
        assert_refused(&write(dir.path(), name, &text), want);
    };
    refused(
        "q.toml",
        text.replace("rounds_per_agent = 3\n", "rounds_per_agent = 3\nq = 0.5\n"),
        "key `server.q`: does not apply with sampling = \"allocation\"",
    );
    refused(
        "k.toml",
        SMALL_DP.replace("q = 0.5\n", "q = 0.5\nrounds_per_agent = 2\n"),
        "key `server.rounds_per_agent`: applies only with sampling = \"allocation\"",
    );
    refused(
        "rdp.toml",
        text.replace("delta = 1e-5", "accountants = [\"rdp\"]\ndelta = 1e-5"),
        "the rdp accountant has no analysis of random allocation",
    );
    refused(
        "many.toml",
        text.replace("rounds_per_agent = 3", "rounds_per_agent = 11"),
        "key `server.rounds_per_agent`: random allocation takes each agent in 1 to min(rounds, 64) rounds, got 11 of 10",
    );
    refused(
        "replace.toml",
        text.replace(
            "rounds_per_agent = 3\n",
            "rounds_per_agent = 3\nadjacency = \"replace-one\"\n",
        ),
        "random allocation is analysed under add-remove adjacency only",
    );
    refused(
        "agreed.toml",
        text.replace("features = 16\n", "features = 16\nshared = \"agreed\"\n"),
        "key `server.sampling`: random allocation is not built with shared = \"agreed\"",
    );
    // Shares too narrow for the Gaussian stand-in, random allocation's only analysis of them.
    refused(
        "narrow.toml",
        text.replace(
            "clip = 3.0",
            "clip = 4e-9\nsecure = true\nnoise = \"distributed\"",
        ),
        "key `server.noise`: the allocation accountant accounts distributed discrete Gaussian noise through the continuous Gaussian mechanism",
    );
}

/// A sweep over rounds per agent: sweep.csv gains epsilon_allocation (a sweep with no
/// allocating algorithm keeps its columns), each point at its whole allocation's epsilon.
#[test]
fn a_sweep_over_rounds_per_agent_reports_each_allocations_epsilon() {
    let dir = tempfile::tempdir().unwrap();
    let text = allocating_spec();
    let sweep = write(
        dir.path(),
        "sweep.toml",
        &(text.replace("runs = 2", "runs = 1")
            + "\n[sweep]\npoints = [ { \"server.rounds_per_agent\" = 1 }, { \"server.rounds_per_agent\" = 3 } ]\n"),
    );
    fbo_ok("sweep", &sweep, &dir.path().join("sweep"), &["--no-timing"]);
    let rows = Csv::read(&dir.path().join("sweep").join("sweep.csv"));
    let eps: Vec<f64> = rows
        .records()
        .filter(|r| r.get("sampling") == "allocation")
        .map(|r| r.num("epsilon_allocation"))
        .collect();
    assert_eq!(eps.len(), 2);
    for (e, k) in eps.iter().zip([1, 3]) {
        let want = fbo::privacy::allocation::epsilon(2.0, 10, k, 1e-5).unwrap();
        assert!(
            (e - want).abs() <= 1e-6 * want,
            "k = {k}: {e} against {want}"
        );
    }
}
