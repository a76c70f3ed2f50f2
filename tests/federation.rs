//! Agents on machines of their own (issue 29): a federation of `Site`s and a `Federation`
//! server, every instruction and reply through JSON, writes the bytes `fbo run --no-timing`
//! writes; killed at any round and resumed from the journals, it still does, without
//! evaluating a query twice.

mod common;
use common::*;
use fbo::federation::{self, Federation, Instruction, SecureAsk, Site};
use std::fs;
use std::path::Path;

/// The DP family on a grid: TS, DP-FTS-DE with DP (Poisson q = 0.5, so the server's
/// selection matters) and FTS in the server form (one sub-region, no DP).
fn grid_spec() -> String {
    format!(
        "{SMALL_DP}\n[[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"FTS (server)\"\nserver = {{ subregions = 1, dp = false }}\n"
    )
}

/// DP-FTS-DE on Branin's box (four sub-regions), beside TS.
const BRANIN_DP: &str = include_str!("fixtures/specs/federation-branin-dp.toml");

/// The frameworks that run across machines, on Branin's box. Consensus, each agent sent its
/// own point: the linear schedule, the leader schedule under EI, and noised candidates from a
/// start with own weight. Design densities, each agent sent the others' centres: at the
/// incumbent, at Thompson samples, at the LCB design with the power beta / T. CGP-UCB, each
/// agent sent the others' (design, LCB) pairs: all others, or its random group of 2. FMTBO,
/// each agent sent the length scales averaged over its nearest rankings, used as they are or
/// as a refit's start.
const FRAMEWORKS: &str = include_str!("fixtures/frameworks-fed.toml");

/// Agreed shared models: the agents' fits travel after omega_n, the agreed hyperparameters
/// with the server's point (non-private, and with a private agreement under DP).
const AGREED: &str = include_str!("fixtures/agreed-fed.toml");

/// FedGP: before each broadcast the server's solver asks the agents its questions.
const FEDGP: &str = include_str!("fixtures/fedgp-fed.toml");

/// FTS's target-and-senders form: the senders' sites send omega_n, the server relays them.
const FTS: &str = include_str!("fixtures/fts-fed.toml");

/// FTS's senders agreeing on the shared model: their fits travel as the messages, the
/// server's question is the median, their omegas on the agreed features the answers.
fn fts_agreed() -> String {
    let out = FTS
        .replace(
            "messages = \"one-shot\"\n",
            "messages = \"one-shot\"\nshared = \"agreed\"\n",
        )
        .replace(
            "label = \"FTS every iteration\"\n",
            "label = \"FTS every iteration\"\nshared = \"agreed\"\n",
        );
    assert_eq!(out.matches("shared = \"agreed\"").count(), 2);
    out
}

/// RGPE and TAF with senders agreeing on the shared model: fits as messages, the median as
/// the question, the posteriors on the agreed features as the answers.
fn meta_agreed() -> String {
    let out = META
        .replace(
            "kind = \"rgpe\"\n",
            "kind = \"rgpe\"\nshared = \"agreed\"\n",
        )
        .replacen(
            "kind = \"taf\"\n",
            "kind = \"taf\"\nshared = \"agreed\"\n",
            2,
        );
    assert_eq!(out.matches("shared = \"agreed\"").count(), 3);
    out
}

/// RGPE and TAF: the senders' posteriors relayed once to the targets.
const META: &str = include_str!("fixtures/meta-fed.toml");

/// Three evaluations per site per round (`batch = 3`): TS's independent samples, EI's
/// fantasised batch, random draws and DP-FTS-DE's (the server's point, then the agent's own
/// samples), on Branin's box.
fn batch_on_a_box() -> String {
    let out = BRANIN_DP.replace("initial_points = 3\n", "initial_points = 3\nbatch = 3\n")
        + "\n[[algorithm]]\nkind = \"ei\"\n\n[[algorithm]]\nkind = \"random\"\n";
    assert!(out.contains("batch = 3"));
    out
}

/// The same on the DP grid (random draws without replacement across the batch).
fn batch_on_a_grid() -> String {
    let out = SMALL_DP.replace("initial_points = 3\n", "initial_points = 3\nbatch = 3\n")
        + "\n[[algorithm]]\nkind = \"random\"\n";
    assert!(out.contains("batch = 3"));
    out
}

/// `text` with its Branin box replaced by the grid objective `grid` (and no [acquisition]).
fn on_a_grid(text: &str, branin: &str, grid: &str) -> String {
    let out = text
        .replace(branin, grid)
        .replace("[acquisition]\ncandidates = 200\nstarts = 3\n", "");
    assert!(out.contains(grid) && !out.contains("[acquisition]"));
    out
}

const BRANIN: &str = "kind = \"function\"\nfunction = \"branin\"\nheterogeneity = 0.1";

/// The same algorithms on a grid (consensus's points snapped to the nearest grid point).
fn frameworks_on_a_grid() -> String {
    on_a_grid(
        FRAMEWORKS,
        BRANIN,
        "kind = \"synthetic-dp\"\ngrid = 100\nfunctions = 1",
    )
}

/// The paper's grid objective, one target (the other agents only send).
const FTS_GRID: &str =
    "kind = \"synthetic-fts\"\ngrid = 100\nfunctions = 1\nd = 0.05\ntargets = [0]";

/// FTS on the paper's grid objective, the senders' histories from their own TS.
fn fts_on_a_grid() -> String {
    on_a_grid(FTS, &format!("{BRANIN}\ntargets = [0, 1]"), FTS_GRID).replace(
        "observations = 5\n",
        "observations = 5\nobservations_from = \"ts\"\n",
    )
}

/// RGPE and TAF on the paper's grid objective.
fn meta_on_a_grid() -> String {
    on_a_grid(META, &format!("{BRANIN}\ntargets = [0, 1]"), FTS_GRID)
}

const FILES: [&str; 4] = ["trace.csv", "server.csv", "privacy.csv", "summary.csv"];

fn assert_same_files(a: &Path, b: &Path) {
    for f in FILES {
        let (x, y) = (a.join(f), b.join(f));
        if !x.exists() {
            assert!(!y.exists(), "{f} only in {}", b.display());
            continue;
        }
        let (x, y) = (fs::read(&x).unwrap(), fs::read(&y).unwrap());
        assert!(x == y, "{f} differs between fbo run and the federation");
    }
}

#[test]
fn a_federation_in_one_process_writes_the_bytes_of_fbo_run() {
    // A privacy budget that stops the server's releases after a few rounds: the agents go
    // on alone from the broadcast that says so.
    let budget = SMALL_DP.replace("clip = 3.0", "clip = 3.0\nmax_epsilon = 1.5");
    // Random allocation: the server's draw of each agent's round in a period, across sites.
    let allocation = SMALL_DP
        .replace(
            "q = 0.5\n",
            "sampling = \"allocation\"\nrounds_per_agent = 2\n",
        )
        .replace("[\"rdp-int\", \"rdp\"]", "[\"allocation\"]");
    // Agents that weigh the server's point by the release's signal share, which travels
    // after the agreed hyperparameters (little noise, so that the share is neither 0 nor 1).
    let signal = AGREED.replace(
        "z = 1.0, clip = 1.0, agreement_z = 1.0 }",
        "z = 0.05, clip = 1.0, agreement_z = 1.0, follow = \"signal\" }",
    );
    let signal_box = BRANIN_DP.replace("z = 1.0 }", "z = 0.05, follow = \"signal\" }");
    assert!(signal.contains("follow") && signal_box.contains("follow"));
    for (name, text) in [
        ("grid", grid_spec()),
        ("box", BRANIN_DP.to_string()),
        ("budget", budget),
        ("allocation", allocation),
        ("frameworks-box", FRAMEWORKS.to_string()),
        ("agreed", AGREED.to_string()),
        ("fedgp", FEDGP.to_string()),
        ("fts", FTS.to_string()),
        ("fts-grid", fts_on_a_grid()),
        ("meta", META.to_string()),
        ("meta-grid", meta_on_a_grid()),
        ("frameworks-grid", frameworks_on_a_grid()),
        ("batch-box", batch_on_a_box()),
        ("fts-agreed", fts_agreed()),
        ("meta-agreed", meta_agreed()),
        ("batch-grid", batch_on_a_grid()),
        ("signal", signal),
        ("signal-box", signal_box),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let spec = write(dir.path(), &format!("{name}.toml"), &text);
        let sim = dir.path().join("sim");
        fbo_ok("run", &spec, &sim, &["--no-timing"]);
        let fed = dir.path().join("fed");
        federation::run_in_process(&spec, &fed, &dir.path().join("state"), false)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same_files(&sim, &fed);
        if name.starts_with("signal") {
            let trace = fs::read_to_string(sim.join("trace.csv")).unwrap();
            assert!(
                trace.contains(",server,"),
                "{name}: some agents follow the server"
            );
        }
        if name == "budget" {
            let server = fs::read_to_string(sim.join("server.csv")).unwrap();
            let rounds = server.lines().filter(|l| l.contains("DP-FTS-DE")).count();
            assert!(
                rounds > 0 && rounds < 3 * 8,
                "the budget stops the releases early ({rounds} rounds over 3 runs)"
            );
        }
        assert!(
            !fed.join("parts").exists() && !fed.join("federation").exists(),
            "{name}: parts and journals are removed after the merge"
        );
    }
}

/// DP-FTS-DE under secure aggregation with central noise, with each member masking with two
/// neighbours only (SecAgg+), with the agents' distributed noise, and with distributed noise
/// and self-sampling (each site's own coin), and FTS's server form without DP under it,
/// beside the plain DP-FTS-DE: what `fbo run` writes.
fn secure_spec() -> String {
    SMALL_DP.replace(
        "[[algorithm]]\nkind = \"dp-fts-de\"",
        "[[algorithm]]\nkind = \"dp-fts-de\"\n\n\
         [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"secure\"\nserver = { secure = true }\n\n\
         [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"neighbours\"\n\
         server = { secure = true, secure_neighbours = 2 }\n\n\
         [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"distributed\"\n\
         server = { secure = true, secure_dropout = 0.2, noise = \"distributed\" }\n\n\
         [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"self-sampled\"\n\
         server = { secure = true, noise = \"distributed\", self_sampling = true }\n\n\
         [[algorithm]]\nkind = \"dp-fts-de\"\nlabel = \"secure FTS\"\nserver = { subregions = 1, dp = false, secure = true }",
    )
}

/// Secure aggregation across machines: the four steps as instructions and replies through
/// JSON, the federation's four files equal to `fbo run --no-timing`'s, and no reply of a
/// secure unit carries a vector: the server's journal holds only keys, sealed shares, masked
/// inputs and revealed shares (read back here before the merge removes it).
#[test]
fn secure_aggregation_runs_across_machines_with_the_simulations_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "secure.toml", &secure_spec());
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let (fed, state) = (dir.path().join("fed"), dir.path().join("state"));
    // Every unit through its first rounds, then a look at what the server received.
    assert!(!drive(&spec, &fed, &state, 70));
    let journals: Vec<_> = fs::read_dir(fed.join("federation"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl"))
        .collect();
    let mut steps = std::collections::BTreeMap::new();
    for j in &journals {
        for line in fs::read_to_string(j).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let secure_unit = v["replies"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.get("secure").is_some());
            if !secure_unit {
                continue;
            }
            for r in v["replies"].as_array().unwrap() {
                assert!(
                    r.get("message").is_none_or(|m| m.is_null()),
                    "a vector in the clear: {r}"
                );
                let step = r["secure"]["step"].as_str().unwrap().to_string();
                *steps.entry(step).or_insert(0) += 1;
            }
        }
    }
    for step in ["ready", "advertise", "share", "mask", "reveal"] {
        assert!(
            steps.get(step).is_some_and(|&n| n > 0),
            "no {step} answers: {steps:?}"
        );
    }
    while !drive(&spec, &fed, &state, 1000) {}
    assert_same_files(&sim, &fed);
}

/// Killed every few exchanges, in the middle of the masking steps too, and resumed from the
/// journals: the same bytes (a site draws a round's keys again from its stream).
#[test]
fn secure_aggregation_killed_every_few_steps_resumes_to_the_same_bytes() {
    killed_every_few_rounds(&secure_spec());
}

/// Under self-sampling the server's record says whom it asked (every agent) and not who took
/// part, across machines as in one process; the agents' coins are their own (a site draws
/// them, and the federation writes the simulation's bytes above).
#[test]
fn self_sampling_leaves_the_selection_out_of_the_servers_record() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "secure.toml", &secure_spec());
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let server = fs::read_to_string(sim.join("server.csv")).unwrap();
    let all: Vec<String> = (0..12).map(|a| a.to_string()).collect();
    let rows: Vec<&str> = server
        .lines()
        .filter(|l| l.starts_with("self-sampled,"))
        .collect();
    assert!(!rows.is_empty());
    for l in rows {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!((f[3], f[10]), ("12", all.join(";").as_str()), "{l}");
    }
}

/// A site masks only as its own spec says: a mask step that drops its self-sampling coin or
/// its noise shares (the server would then see its vector, un-noised, every round) is refused,
/// and the same step as the server planned it is answered.
#[test]
fn a_site_refuses_a_mask_step_without_its_coin_or_noise_shares() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("runs = 3", "runs = 1")
        .replace("[[algorithm]]\nkind = \"ts\"\n\n", "")
        .replace(
            "clip = 3.0",
            "clip = 3.0\nsecure = true\nnoise = \"distributed\"\nself_sampling = true",
        );
    let spec = write(dir.path(), "secure.toml", &text);
    let fed = Federation::open(&spec, &dir.path().join("fed"), false).unwrap();
    let n = fed.spec().total_agents();
    let mut sites: Vec<Site> = (0..n)
        .map(|a| Site::open(&spec, a, None).unwrap())
        .collect();
    let mut server = fed.server(fed.units()[0]).unwrap();
    for _ in 0..200 {
        let ins: Vec<Instruction> = (0..n).map(|a| server.instruction_for(a).unwrap()).collect();
        if let Some(SecureAsk::Mask { part, .. }) = &ins[0].secure {
            assert!(part.coin.is_some() && part.shares.is_some(), "{part:?}");
            for tamper in [0, 1] {
                let mut bad = ins[0].clone();
                if let Some(SecureAsk::Mask { part, .. }) = &mut bad.secure {
                    match tamper {
                        0 => part.coin = None,
                        _ => part.shares = None,
                    }
                }
                let e = sites[0].step(&bad).unwrap_err().to_string();
                assert!(e.contains("refused"), "{e}");
            }
            sites[0].step(&ins[0]).unwrap();
            return;
        }
        let replies = ins
            .iter()
            .zip(&mut sites)
            .map(|(i, s)| s.step(i).unwrap())
            .collect();
        server.receive(replies).unwrap();
    }
    panic!("no mask step in 200 exchanges");
}

/// An agreement's fits travel beside the masked vector, so the agreed shared model under
/// secure aggregation is refused across machines by key.
#[test]
fn an_agreement_under_secure_aggregation_is_refused_across_machines_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("clip = 3.0", "clip = 3.0\nsecure = true")
        .replace("[surrogate]\n", "[surrogate]\nshared = \"agreed\"\n");
    let spec = write(dir.path(), "secure.toml", &text);
    let err = federation::run_in_process(
        &spec,
        &dir.path().join("fed"),
        &dir.path().join("state"),
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("surrogate.shared"), "{err}");
}

/// The federation of `out` opened again right after the last one was dropped. Its folder
/// lock (a flock) is released when that server closed it, unless another test of this
/// process forked a child for `fbo` in the meantime: until the child execs, it holds a copy
/// of every open file, the lock included. So a busy lock is waited for, briefly; any other
/// error fails at once.
fn reopen(spec: &Path, out: &Path) -> Federation {
    for _ in 0..100 {
        match Federation::open(spec, out, false) {
            Ok(fed) => return fed,
            Err(e) if e.to_string().contains("in use by another fbo process") => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("{}: still locked after 2 s", out.display())
}

/// Drives `rounds` rounds of every unfinished unit (then stops, as a killed server would),
/// with fresh sites resumed from their journals; true if every unit finished.
fn drive(spec: &Path, out: &Path, state: &Path, rounds: usize) -> bool {
    let fed = reopen(spec, out);
    let mut sites: Vec<Site> = (0..fed.spec().total_agents())
        .map(|a| Site::open(spec, a, Some(&state.join(format!("agent{a}")))).unwrap())
        .collect();
    federate(fed, &mut sites, Some(rounds))
}

#[test]
fn a_federation_killed_every_few_rounds_resumes_to_the_same_bytes() {
    killed_every_few_rounds(&grid_spec());
}

/// The frameworks' messages and what each agent received, replayed from the journals as
/// DP-FTS-DE's are.
#[test]
fn frameworks_killed_every_few_rounds_resume_to_the_same_bytes() {
    killed_every_few_rounds(FRAMEWORKS);
}

/// An agent resumed from its journal draws its features for the agreement it last followed.
#[test]
fn agreed_models_killed_every_few_rounds_resume_to_the_same_bytes() {
    killed_every_few_rounds(AGREED);
}

/// A server killed between FedGP's questions replays its journal to the same next question;
/// a site killed between them answers from its replayed data.
#[test]
fn fedgp_killed_between_its_questions_resumes_to_the_same_bytes() {
    killed_every_few_rounds(FEDGP);
}

/// A sender's site killed between rounds steps its TS again from its journal; a target's
/// holds the messages it was relayed.
#[test]
fn fts_killed_every_few_rounds_resumes_to_the_same_bytes() {
    killed_every_few_rounds(FTS);
    killed_every_few_rounds(&fts_on_a_grid());
    // A restarted sender draws its answer of round t from that round's stream.
    killed_every_few_rounds(&fts_agreed());
}

/// Sites killed between batches' rounds resume from their journals (a round's k values are
/// one journal line) to the same batches and bytes.
#[test]
fn batches_killed_every_few_rounds_resume_to_the_same_bytes() {
    killed_every_few_rounds(&batch_on_a_box());
}

/// A target resumed from its journal holds the posteriors it was relayed in round 0 again.
#[test]
fn meta_learners_killed_every_few_rounds_resume_to_the_same_bytes() {
    killed_every_few_rounds(META);
    killed_every_few_rounds(&meta_on_a_grid());
    killed_every_few_rounds(&meta_agreed());
}

fn killed_every_few_rounds(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "spec.toml", text);
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let (fed, state) = (dir.path().join("fed"), dir.path().join("state"));
    let mut restarts = 0;
    while !drive(&spec, &fed, &state, 4) {
        restarts += 1;
    }
    assert!(restarts >= 5, "the run was cut {restarts} times");
    assert_same_files(&sim, &fed);
    // Each agent journals every round it evaluated, once: a line per round of every unit
    // it takes part in (as many as fbo run traced for it, initial points in one round; a
    // sender of FTS, RGPE or TAF, which is traced nowhere, answers each of the unit's rounds).
    let trace = fs::read_to_string(sim.join("trace.csv")).unwrap();
    let loaded = fbo::spec::Spec::load(&spec).unwrap();
    let agents = loaded.total_agents();
    let senders = |a: usize| {
        let with_senders = loaded
            .algorithms
            .iter()
            .filter(|x| x.kind.has_senders())
            .count();
        let only_sends = !loaded.targets().contains(&a) && loaded.targets().iter().any(|&t| t != a);
        match only_sends {
            true => with_senders * loaded.runs * (loaded.iterations + 1),
            false => 0,
        }
    };
    for a in 0..agents {
        let rounds: std::collections::BTreeSet<(String, String, String)> = trace
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
            .filter(|c| c[2] == a.to_string())
            .map(|c| {
                // Round t holds a batch's iterations (t - 1) batch + 1 ..= t batch.
                let it: i64 = c[3].parse().unwrap();
                let round = (it.max(0) as usize).div_ceil(loaded.batch);
                (c[0].clone(), c[1].clone(), round.to_string())
            })
            .collect();
        let folder = state.join(format!("agent{a}"));
        let lines: usize = fs::read_dir(&folder)
            .unwrap()
            .map(|e| {
                fs::read_to_string(e.unwrap().path())
                    .unwrap()
                    .lines()
                    .count()
            })
            .sum();
        assert_eq!(
            lines,
            rounds.len() + senders(a),
            "agent {a}: one journal line per round"
        );
    }
}

/// A site whose evaluation fails is noted at once, naming the agent and its error, and is not
/// reported as a reply that did not arrive; a reply resets its count; the third failure in a
/// row stops the federation with an error naming the site, keeping what was journaled.
#[test]
fn a_site_that_keeps_failing_is_named_and_stops_the_federation() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "dp.toml", SMALL_DP);
    let out = dir.path().join("fed");
    let fed = Federation::open(&spec, &out, false).unwrap();
    let mut sites: Vec<Site> = (0..12)
        .map(|a| Site::open(&spec, a, None).unwrap())
        .collect();
    let unit = *fed
        .units()
        .iter()
        .find(|u| u.0 == 1)
        .expect("the DP-FTS-DE unit");
    let mut server = fed.server(unit).unwrap();
    // One round: agent 5's site fails (or, with `ok`, answers); the others answer.
    let mut round = |server: &mut federation::ServerNode, ok: bool| {
        let ins = server.instruction().unwrap();
        let mut replies = Vec::new();
        let mut result = Ok(());
        for a in server.agents().to_vec() {
            if a == 5 && !ok {
                result = server.site_failed(5, "ValueError: lr must be positive", 3);
            } else {
                replies.push(sites[a].step(&ins).unwrap());
            }
        }
        if result.is_ok() {
            server.receive(replies).unwrap();
        }
        result
    };
    round(&mut server, true).unwrap();
    round(&mut server, false).unwrap();
    round(&mut server, false).unwrap();
    round(&mut server, true).unwrap(); // a reply resets the count
    round(&mut server, false).unwrap();
    round(&mut server, false).unwrap();
    let e = round(&mut server, false).unwrap_err().to_string();
    assert!(
        e.contains("agent 5's site failed 3 rounds in a row")
            && e.contains("ValueError: lr must be positive"),
        "{e}"
    );
    let notes = fs::read_to_string(out.join(federation::NOTES)).unwrap();
    assert_eq!(notes.matches("agent 5's site failed").count(), 5, "{notes}");
    assert!(
        notes.contains("round 1: agent 5's site failed (1 in a row): ValueError"),
        "{notes}"
    );
    assert!(notes.contains("(3 in a row)"), "{notes}");
    assert!(!notes.contains("agent 5's reply did not arrive"), "{notes}");
}

/// While a federation runs, `fbo run --status` follows it: the last round kept of the spec's
/// iterations, who answered, and the epsilon spent so far, privacy.csv's value at that
/// iteration under each accountant. (The Flower ServerApp logs the same line every round.)
#[test]
fn status_follows_a_federation_round_by_round() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_DP
        .replace("runs = 3", "runs = 1")
        .replace("[[algorithm]]\nkind = \"ts\"\n\n", "");
    let spec = write(dir.path(), "dp.toml", &text);
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let (fed, state) = (dir.path().join("fed"), dir.path().join("state"));
    assert!(!drive(&spec, &fed, &state, 4));
    let o = fbo_ok("run", &spec, &fed, &["--status"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let privacy = fs::read_to_string(sim.join("privacy.csv")).unwrap();
    let eps = |accountant: &str| -> f64 {
        privacy
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|c| c[2] == "3" && c[3] == accountant)
            .unwrap()
            .last()
            .unwrap()
            .parse()
            .unwrap()
    };
    let want = format!(
        "federation: DP-FTS-DE P=2 q=0.5 z=1 S=3 run 0: round 3 of 8: 12 of 12 agents answered; \
         epsilon so far {:.4} (rdp-int, against outsiders); epsilon so far {:.4} (rdp, against outsiders)",
        eps("rdp-int"),
        eps("rdp")
    );
    assert!(out.contains(&want), "{out}\nwanted: {want}");
}

/// A reply lost in transit (the site evaluated and journaled the round; the server never got
/// it) is asked for again by the next instruction and re-sent from the site's memory with its
/// next reply: its rows are traced where they belong and noted as late, its message is not
/// aggregated. For TS, whose rounds need no message, the trace is then fbo run's to the byte;
/// a server killed after the late reply replays it from its journal.
#[test]
fn a_reply_lost_in_transit_is_resent_with_the_next_and_traced() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "dp.toml", SMALL_DP);
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let (out, state) = (dir.path().join("fed"), dir.path().join("state"));
    let open_sites = || -> Vec<Site> {
        (0..12)
            .map(|a| Site::open(&spec, a, Some(&state.join(format!("agent{a}")))).unwrap())
            .collect()
    };
    let fed = Federation::open(&spec, &out, false).unwrap();
    let mut sites = open_sites();
    for unit in fed.units().to_vec() {
        let mut server = fed.server(unit).unwrap();
        // Agent 5's replies to rounds 0 and 2 are lost; round 4 stops the server for good.
        while server.round() < 4 {
            let ins = server.instruction().unwrap();
            let lost = [0, 2].contains(&ins.round);
            assert_eq!(
                ins.unanswered_by(5),
                match ins.round {
                    1 => &[0][..],
                    3 => &[2][..],
                    _ => &[][..],
                },
                "round {}",
                ins.round
            );
            let mut replies = Vec::new();
            for a in server.agents().to_vec() {
                let r = sites[a].step(&ins).unwrap();
                if a == 5 && ins.round == 1 {
                    assert_eq!(r.late.len(), 1, "round 0 re-sent with round 1");
                }
                if !(a == 5 && lost) {
                    replies.push(r);
                }
            }
            server.receive(replies).unwrap();
        }
        let ins = server.instruction().unwrap();
        assert_eq!(ins.round, 4);
        assert_eq!(
            ins.unanswered_by(5),
            &[] as &[usize],
            "round 2 was re-sent at 3"
        );
    }
    drop(fed);
    // A new server process replays its journals (late replies included) and finishes.
    let fed = Federation::open(&spec, &out, false).unwrap();
    assert!(federate(fed, &mut open_sites(), None));
    let rows = |dir: &Path, label: &str| -> Vec<String> {
        fs::read_to_string(dir.join("trace.csv"))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with(&format!("{label},")))
            .map(String::from)
            .collect()
    };
    assert_eq!(
        rows(&sim, "TS"),
        rows(&out, "TS"),
        "TS is traced as fbo run"
    );
    let keys = |rows: Vec<String>| -> Vec<String> {
        rows.iter()
            .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
            .collect()
    };
    let dp = "DP-FTS-DE P=2 q=0.5 z=1 S=3";
    assert_eq!(
        keys(rows(&sim, dp)),
        keys(rows(&out, dp)),
        "every (run, agent, iteration) of DP-FTS-DE is traced once"
    );
    let notes = fs::read_to_string(out.join(federation::NOTES)).unwrap();
    for (label, late) in [("TS", 0), ("TS", 2), (dp, 0), (dp, 2)] {
        let want = format!(
            "{label} run 0: round {}: agent 5's reply to round {late} arrived late (re-sent from its journal): its trace rows kept, its message not aggregated",
            late + 1
        );
        assert!(notes.contains(&want), "{notes}\nwanted: {want}");
    }
    assert_eq!(
        notes.matches("agent 5's reply did not arrive").count(),
        2 * 2 * 3
    );
}

/// Under `output.site_traces` the sites keep their queries and values: replies carry only
/// messages, the server writes only server.csv and privacy.csv (fbo run's bytes), and the
/// traces the sites export, joined, are fbo run's trace.csv and summary.csv to the byte.
#[test]
fn sites_keep_their_values_and_their_merged_traces_are_fbo_runs() {
    sites_keep_their_values(SMALL_DP);
    // A batch's rows merge in the runner's order: by round, agent, then the batch's order.
    sites_keep_their_values(&batch_on_a_grid());
}

fn sites_keep_their_values(spec_text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let text = spec_text.replace("[privacy]", "[output]\nsite_traces = true\n\n[privacy]");
    assert!(text.contains("site_traces = true"));
    let spec = write(dir.path(), "dp.toml", &text);
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let (out, state) = (dir.path().join("fed"), dir.path().join("state"));
    let fed = Federation::open(&spec, &out, false).unwrap();
    let mut sites: Vec<Site> = (0..12)
        .map(|a| Site::open(&spec, a, Some(&state.join(format!("agent{a}")))).unwrap())
        .collect();
    // Every reply leaves its site without rows.
    let unit = fed.units()[0];
    let mut server = fed.server(unit).unwrap();
    let ins = server.instruction_for(0).unwrap();
    let reply = sites[0].step(&ins).unwrap();
    assert!(reply.rows.is_empty(), "{}", reply.rows);
    drop(server);
    assert!(federate(fed, &mut sites, None));
    assert!(!out.join("trace.csv").exists() && !out.join("summary.csv").exists());
    for f in ["server.csv", "privacy.csv"] {
        assert_eq!(
            fs::read(sim.join(f)).unwrap(),
            fs::read(out.join(f)).unwrap(),
            "{f}"
        );
    }
    // Each site exports its own trace (a new process: from its journals).
    let mut files = Vec::new();
    for a in (0..12).rev() {
        let mut site = Site::open(&spec, a, Some(&state.join(format!("agent{a}")))).unwrap();
        let trace = site.trace().unwrap();
        assert!(
            trace
                .lines()
                .skip(1)
                .all(|l| l.split(',').nth(2) == Some(&a.to_string()))
        );
        files.push(write(dir.path(), &format!("site{a}.csv"), &trace));
    }
    federation::merge_site_traces(&spec, &out, &files).unwrap();
    assert_same_files(&sim, &out);
    // An agent's rows in two files are refused, naming both.
    files.push(files[0].clone());
    let e = federation::merge_site_traces(&spec, &out, &files)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("agent 11's rows") && e.contains("site11.csv"),
        "{e}"
    );
}

/// FedGP's questions on the wire: before each broadcast the L-BFGS solver asks the agents
/// several times; the broadcast carries the shared hyperparameters and the rounds taken. An
/// agent whose answer does not arrive is noted and ends that solve where it is (the server
/// broadcasts at once), and an agent whose evaluation reply did not arrive is not asked.
#[test]
fn fedgp_asks_its_questions_and_a_missing_answer_ends_the_solve() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "fedgp.toml", FEDGP);
    let fed = Federation::open(&spec, &dir.path().join("fed"), false).unwrap();
    let mut sites: Vec<Site> = (0..3)
        .map(|a| Site::open(&spec, a, None).unwrap())
        .collect();
    let mut server = fed.server((0, 0)).unwrap();
    let mut asked_per_round = Vec::new();
    while server.round() < 4 {
        let round = server.round();
        let ins: Vec<Instruction> = (0..3).map(|a| server.instruction_for(a).unwrap()).collect();
        let question = ins[0].question.clone();
        if let Some(q) = &question {
            assert_eq!(asked_per_round.last().map(|(r, _)| *r), Some(round));
            asked_per_round.last_mut().unwrap().1 += 1;
            // [1 (value and gradient), 0, theta of 3 numbers] in 2-D before ARD starts.
            assert_eq!(q.ask.len(), 5, "{q:?}");
            assert_eq!(q.ask[0], 1.0);
        } else {
            asked_per_round.push((round + 1, 0));
            if round >= 1 {
                // theta (one length scale: 3 numbers) and the rounds taken.
                assert_eq!(ins[0].shared.len(), 4, "round {round}: {:?}", ins[0].shared);
            }
        }
        let mut replies = Vec::new();
        for (a, i) in ins.iter().enumerate() {
            let r = sites[a].step(i).unwrap();
            match (&question, round) {
                // Agent 2's evaluation reply of round 2 is lost: it is not asked before 3.
                (None, 2) if a == 2 => continue,
                (Some(_), 3) if a == 2 => {
                    assert!(i.question.as_ref().unwrap().ask.is_empty(), "idle");
                    assert!(r.answer.is_none());
                }
                // Agent 1's first answer of round 2 is lost: the solve ends there.
                (Some(q), 2) if a == 1 && q.step == 0 => continue,
                (Some(_), _) => assert_eq!(r.answer.as_ref().unwrap().len(), 4),
                _ => {}
            }
            replies.push(r);
        }
        server.receive(replies).unwrap();
    }
    // Round 1's L-BFGS took several questions; round 2's ended after its first.
    let asked: std::collections::BTreeMap<usize, usize> = asked_per_round.into_iter().collect();
    assert!(asked[&1] >= 3, "{asked:?}");
    assert_eq!(asked[&2], 1, "{asked:?}");
    assert!(asked[&3] >= 1, "{asked:?}");
    let notes = server.notes().join("\n");
    assert!(
        notes.contains("agent 1's reply did not arrive (question 0 before the broadcast)"),
        "{notes}"
    );
}

/// A site refuses a malformed question, naming it; an algorithm without questions refuses
/// one too.
#[test]
fn a_site_refuses_a_malformed_question() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "fedgp.toml", FEDGP);
    let fed = Federation::open(&spec, &dir.path().join("fed"), false).unwrap();
    let mut site = Site::open(&spec, 0, None).unwrap();
    let mut server = fed.server((0, 0)).unwrap();
    let ins = server.instruction_for(0).unwrap();
    let others: Vec<_> = (0..3)
        .map(|a| {
            let mut s = Site::open(&spec, a, None).unwrap();
            s.step(&ins).unwrap()
        })
        .collect();
    site.step(&ins).unwrap();
    server.receive(others).unwrap();
    let mut q = server.instruction_for(0).unwrap();
    assert!(q.question.is_some());
    q.question.as_mut().unwrap().ask = vec![1.0, 0.0, 0.1];
    let err = site.step(&q).unwrap_err().to_string();
    assert!(
        err.contains("a FedGP question") && err.contains("1 numbers"),
        "{err}"
    );
    q.question.as_mut().unwrap().ask = vec![7.0, 0.0, 0.1, 0.2, 0.3];
    let err = site.step(&q).unwrap_err().to_string();
    assert!(err.contains("is no question"), "{err}");
}

/// FTS senders measuring through a command, their sites killed every few rounds: the
/// senders' own TS steps (made outside the journal of rounds) are replayed from the site's
/// journal of evaluations, so no evaluation runs twice, and the run ends as `fbo run` ends.
#[test]
fn fts_senders_killed_every_few_rounds_measure_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let text = format!(
        "name = \"fts-cmd\"\nseed = 3\nruns = 1\niterations = 5\ninitial_points = 2\n\n\
         [objective]\nkind = \"command\"\ncommand = [\"env\", \"TOY_COUNT={}\", {:?}]\n\
         direction = \"maximize\"\n{BRANIN_BOX}\n\
         [acquisition]\ncandidates = 100\nstarts = 2\n\n[surrogate]\nfeatures = 20\n\n\
         [federation]\nagents = 3\nobservations = 3\nobservations_from = \"ts\"\n\n\
         [[algorithm]]\nkind = \"fts\"\nmessages = \"every-iteration\"\n",
        count.display(),
        toy().display().to_string()
    );
    let spec = write(dir.path(), "spec.toml", &text);
    let (fed, state) = (dir.path().join("fed"), dir.path().join("state"));
    let mut restarts = 0;
    while !drive(&spec, &fed, &state, 2) {
        restarts += 1;
    }
    assert!(restarts >= 2, "the run was cut {restarts} times");
    let made = fs::read_to_string(&count).unwrap();
    let lines: Vec<&str> = made.lines().collect();
    let once: std::collections::BTreeSet<&str> = lines.iter().copied().collect();
    assert_eq!(lines.len(), once.len(), "an evaluation ran twice:\n{made}");
    // Every agent is a target and a sender: its sender's history of 5 (2 initial points and
    // 3 TS steps), its 2 initial points and 5 queries as a target, and 4 sender steps before
    // iterations 2..=5.
    let of = |agent: &str| {
        lines
            .iter()
            .filter(|l| l.rsplit(' ').nth(1) == Some(agent))
            .count()
    };
    assert_eq!((of("0"), of("1"), of("2")), (16, 16, 16), "{made}");
    let sim = dir.path().join("sim");
    fbo_ok("run", &spec, &sim, &["--no-timing"]);
    let trace = |d: &Path| trace_columns(d, 14);
    assert_eq!(trace(&sim), trace(&fed));
}
