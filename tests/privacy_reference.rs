//! fbo's accountants against reference values made with Google's dp_accounting 0.4.4
//! (`scripts/privacy_reference.py`, which says how each row was made), one row per setting in
//! tests/fixtures/privacy_reference.csv. The references are written to 6 decimals, so each
//! comparison allows half a unit of the last one (ROUNDING).

use fbo::privacy::{self, Accountant, Adjacency, Mechanism, Noise, Sampling, pld};

mod common;
use common::{assert_exit, fbo, stderr};

const ROUNDING: f64 = 5e-7;

struct Row {
    kind: String,
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    agents: Option<usize>,
    reference: f64,
}

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/privacy_reference.csv");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Row {
                kind: f[0].to_string(),
                q: f[1].parse().unwrap(),
                z: f[2].parse().unwrap(),
                steps: f[3].parse().unwrap(),
                delta: f[4].parse().unwrap(),
                agents: (!f[5].is_empty()).then(|| f[5].parse().unwrap()),
                reference: f[6].parse().unwrap(),
            }
        })
        .collect()
}

#[test]
fn poisson_pld_brackets_the_reference_and_its_upper_end_is_within_two_percent() {
    // The reference is dp_accounting's pessimistic connect-the-dots PLD on a grid of 1e-5 or
    // 1e-4: an upper bound on the true epsilon, itself within its discretisation of the truth.
    // So fbo's lower end must not exceed it, and fbo's upper end must neither sit far below
    // it (that would be an under-report) nor far above it.
    let mut n = 0;
    for r in rows().iter().filter(|r| r.kind == "poisson") {
        let m = Mechanism {
            q: r.q,
            z: r.z,
            steps: r.steps,
            sampling: Sampling::Poisson,
            adjacency: Adjacency::AddRemove,
            noise: Noise::Gaussian,
        };
        let b = pld::epsilon_bounds(&m, r.delta, pld::DEFAULT_INTERVAL).unwrap();
        let what = format!(
            "q={} z={} T={}: {b:?} vs {}",
            r.q, r.z, r.steps, r.reference
        );
        assert!(b.lower <= r.reference + ROUNDING, "{what}");
        assert!(b.upper >= 0.995 * r.reference - ROUNDING, "{what}");
        assert!(b.upper <= 1.02 * r.reference + ROUNDING, "{what}");
        n += 1;
    }
    assert!(n >= 90, "{n} rows");
}

#[test]
fn fixed_size_pld_contains_the_concrete_pair_and_rdp_matches_theorem_27() {
    // fixed-lower: dp_accounting's PLD of the pair a concrete pair of datasets attains under
    // fixed-size sampling (rate m/N, noise z/2, both directions): fbo's bracket must contain
    // it, its lower end (the same pair) close to it. fixed-rdp: dp_accounting's RDP accountant
    // for sampling without replacement under replace-one (WBK Thm. 27), integer orders 2..256.
    let mut n = 0;
    for r in rows().iter().filter(|r| r.kind != "poisson") {
        let agents = r.agents.expect("fixed-size rows name N");
        let m = Mechanism::server(
            r.q,
            r.z,
            r.steps,
            Sampling::Fixed,
            Adjacency::ReplaceOne,
            agents,
        );
        let what = format!("N={agents} q={} z={} T={}", r.q, r.z, r.steps);
        match r.kind.as_str() {
            "fixed-lower" => {
                let b = pld::epsilon_bounds(&m, r.delta, pld::DEFAULT_INTERVAL).unwrap();
                assert!(
                    b.upper >= 0.995 * r.reference - ROUNDING,
                    "{what}: {b:?} vs {}",
                    r.reference
                );
                assert!(
                    b.lower <= r.reference + ROUNDING && b.lower >= 0.98 * r.reference - ROUNDING,
                    "{what}: {b:?} vs {}",
                    r.reference
                );
            }
            "fixed-rdp" => {
                let e = privacy::epsilon(Accountant::Rdp, &m, r.delta)
                    .unwrap()
                    .epsilon;
                assert!(
                    (e - r.reference).abs() < 1e-3 * r.reference + ROUNDING,
                    "{what}: {e} vs {}",
                    r.reference
                );
            }
            other => panic!("unknown row kind {other}"),
        }
        n += 1;
    }
    assert!(n >= 80, "{n} rows");
}

/// The distributed discrete Gaussian's accountant (`privacy::discrete`) against the same
/// bounds written independently in Python with scipy (tests/fixtures/distributed_reference.py):
/// Zhu & Wang's general Poisson bound and WBK's Thm. 9 on the Gaussian's RDP curve, min with the
/// unsampled curve, orders 2..=256, the improved conversion. Inflation 1 and tau d = 0 make the
/// curve exactly the Gaussian's; without a Gaussian stand-in (`near: None`) that curve is the
/// only bound, and pld refuses the mechanism.
#[test]
fn distributed_noise_matches_an_independent_general_bound() {
    let exact = privacy::discrete::Distributed {
        inflation: 1.0,
        tau_d: 0.0,
        near: None,
    };
    for (q, z, steps, delta, sampling, reference) in [
        (0.35, 2.0, 60, 1e-5, Sampling::Poisson, 12.178722090321884),
        (0.1, 1.0, 100, 1e-5, Sampling::Poisson, 9.823371301243004),
        (0.05, 1.0, 1000, 1e-5, Sampling::Poisson, 14.413135474269362),
        (0.2, 3.0, 50, 1e-5, Sampling::Fixed, 11.91834154396468),
        (0.05, 2.0, 200, 1e-6, Sampling::Fixed, 10.430778687021979),
    ] {
        let m = Mechanism {
            q,
            z,
            steps,
            sampling,
            adjacency: Adjacency::default_for(sampling),
            noise: Noise::Gaussian,
        }
        .distributed(exact);
        let got = privacy::epsilon(Accountant::Rdp, &m, delta)
            .unwrap()
            .epsilon;
        assert!(
            (got - reference).abs() < 1e-9 * reference,
            "q={q} z={z} T={steps}: {got} vs {reference}"
        );
        let err = privacy::epsilon(Accountant::Pld, &m, delta).unwrap_err();
        assert!(
            err.contains("through the continuous Gaussian mechanism"),
            "{err}"
        );
        // Never below the Gaussian's own RDP accounting of the same (q, z, T).
        let gaussian = Mechanism {
            noise: Noise::Gaussian,
            ..m
        };
        let g = privacy::epsilon(Accountant::Rdp, &gaussian, delta)
            .unwrap()
            .epsilon;
        assert!(got >= g - 1e-9, "{got} < {g}");
    }
}

/// DP-FTS-DE's distributed noise at landmine's sizes (N = 29, d = 400, S = 22, z = 1, 60
/// rounds) at rate q, under the sampling's own adjacency.
fn landmine_distributed(sampling: Sampling, q: f64) -> Mechanism {
    let d = privacy::discrete::Distributed::bound(29, 400, 22.0, 1.0, 32).unwrap();
    let adjacency = Adjacency::default_for(sampling);
    Mechanism::server(q, 1.0, 60, sampling, adjacency, 29).distributed(d)
}

/// The same mechanism with KLS's bound alone.
fn without_stand_in(m: Mechanism) -> Mechanism {
    let Noise::Distributed(d) = m.noise else {
        panic!("{m:?} has no distributed noise")
    };
    let near = None;
    Mechanism {
        noise: Noise::Distributed(privacy::discrete::Distributed { near, ..d }),
        ..m
    }
}

/// Distributed noise at landmine's sizes (N = 29, d = 400, S = 22, z = 1, 60 rounds, delta =
/// 29^-1.1) through its Gaussian stand-in: every accountant's epsilon at most 1e-6 above the
/// central mechanism's (the stand-in's noise multiplier is 3e-9 below z, its gap 60 x 6e-135)
/// and never below it; the RDP accountants' answer is the smaller of the stand-in's and KLS's
/// (here the stand-in's, 10% below KLS's under `rdp`).
#[test]
fn distributed_noise_is_accounted_at_the_central_mechanisms_epsilon() {
    let delta = 29f64.powf(-1.1);
    for (q, sampling) in [(0.35, Sampling::Poisson), (10.0 / 29.0, Sampling::Fixed)] {
        let distributed = landmine_distributed(sampling, q);
        let central = Mechanism {
            noise: Noise::Gaussian,
            ..distributed
        };
        let kls = without_stand_in(distributed);
        for acc in Accountant::ALL {
            if privacy::supports(acc, sampling, central.adjacency).is_err() {
                continue;
            }
            let c = privacy::epsilon(acc, &central, delta).unwrap().epsilon;
            let e = privacy::epsilon(acc, &distributed, delta).unwrap().epsilon;
            assert!(
                e >= c && e <= c * (1.0 + 1e-6),
                "{acc} {sampling:?}: {e} vs central {c}"
            );
            if acc != Accountant::Pld {
                let general = privacy::epsilon(acc, &kls, delta).unwrap().epsilon;
                assert!(
                    e <= general,
                    "{acc} {sampling:?}: {e} above KLS's {general}"
                );
            }
        }
    }
    let poisson = landmine_distributed(Sampling::Poisson, 0.35);
    let kls = without_stand_in(poisson);
    let near = privacy::epsilon(Accountant::Rdp, &poisson, delta)
        .unwrap()
        .epsilon;
    let general = privacy::epsilon(Accountant::Rdp, &kls, delta)
        .unwrap()
        .epsilon;
    assert!(near < 0.92 * general, "{near} vs {general}");
}

/// Random allocation through `fbo privacy`: Feldman and Shenfeld's published epsilon for one
/// round in two (sigma 1, delta 1e-3: 2.49944) to within 0.03 and not below the exact value
/// (2.4958, a quadrature of the exact densities); k of T rounds printed with its periods; the
/// rate-based keys refused with exit 2 and the key named.
#[test]
fn random_allocation_through_the_command_line() {
    let run = |args: &[&str]| fbo().arg("privacy").args(args).output().unwrap();
    let epsilon = |o: &std::process::Output| -> f64 {
        assert!(o.status.success(), "{}", stderr(o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("allocation epsilon "))
            .unwrap_or_else(|| panic!("{out}"));
        line.trim().parse().unwrap()
    };
    let base = ["--sampling", "allocation", "--z", "1", "--delta", "1e-3"];
    let one = epsilon(&run(&[&base[..], &["--steps", "2"]].concat()));
    assert!((2.4958..2.49944 + 0.03).contains(&one), "{one}");
    let o = run(&[&base[..], &["--steps", "10", "--per-agent", "3"]].concat());
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("3 period(s) of 4, 3, 3 rounds"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let three = epsilon(&o);
    assert!(three > one, "{three} against {one}");
    for (extra, key) in [
        (
            &["--steps", "2", "--q", "0.5"][..],
            "key `--q`: does not apply",
        ),
        (
            &["--steps", "2", "--per-agent", "3"][..],
            "key `--per-agent`",
        ),
        (&["--steps", "2000"][..], "key `--steps`"),
        (
            &["--steps", "2", "--noise", "distributed"][..],
            "key `--noise`: does not apply",
        ),
    ] {
        let o = run(&[&base[..], extra].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(key), "{extra:?}: {}", stderr(&o));
    }
    // The rate-based schemes: --per-agent refused, --q required.
    let rate = ["--steps", "2", "--z", "1", "--delta", "1e-3"];
    for (extra, key) in [
        (&["--q", "0.5", "--per-agent", "2"][..], "key `--per-agent`"),
        (&[][..], "key `--q`: --sampling poisson needs"),
    ] {
        let o = run(&[&rate[..], extra].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(key), "{extra:?}: {}", stderr(&o));
    }
}

/// Distributed noise through `fbo privacy --noise distributed`: the same epsilons as a spec's
/// privacy.csv computes (`privacy::epsilon` on `Distributed::bound`), printed rounded up, each
/// at or above the central line; its keys required with it and refused without it, and pld
/// refused by name where the shares are too narrow for the Gaussian stand-in.
#[test]
fn distributed_noise_through_the_command_line() {
    let run = |words: &str| {
        let delta = 29f64.powf(-1.1);
        let line = format!("--q 0.35 --z 1 --steps 60 --delta {delta} {words}");
        fbo()
            .arg("privacy")
            .args(line.split_whitespace())
            .output()
            .unwrap()
    };
    let epsilons = |o: &std::process::Output| -> Vec<(String, f64)> {
        assert!(o.status.success(), "{}", stderr(o));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let (acc, rest) = l.split_once(" epsilon ")?;
                let e = rest.split_whitespace().next()?.parse().ok()?;
                Some((acc.trim().to_string(), e))
            })
            .collect()
    };
    let central = epsilons(&run(""));
    let distributed = epsilons(&run("--noise distributed --agents 29 --clip 22 --dim 400"));
    let m = landmine_distributed(Sampling::Poisson, 0.35);
    assert_eq!(distributed.len(), 3, "{distributed:?}");
    for ((acc, e), (acc_c, c)) in distributed.iter().zip(&central) {
        assert_eq!(acc, acc_c);
        let a: Accountant = acc.parse().unwrap();
        let exact = privacy::epsilon(a, &m, 29f64.powf(-1.1)).unwrap().epsilon;
        let printed: f64 = privacy::show_upper(exact, 6).parse().unwrap();
        assert_eq!(*e, printed, "{acc}");
        assert!(e >= c, "{acc}: {e} below central {c}");
    }
    // Shares of 0.8 lattice steps, a total of 2.9: KLS's bound holds, no stand-in is near.
    let narrow = "--noise distributed --agents 12 --clip 8e-9 --dim 32";
    for (words, want) in [
        (
            "--noise distributed --agents 29 --dim 400",
            "key `--clip`: --noise distributed needs --clip",
        ),
        (
            "--noise distributed --clip 22 --dim 400",
            "key `--agents`: --noise distributed needs --agents",
        ),
        (
            "--clip 22",
            "key `--clip`: applies only with --noise distributed",
        ),
        (
            "--noise distributed --agents 12 --clip 1e-9 --dim 32",
            "key `--noise`: distributed noise needs each agent's discrete-Gaussian share",
        ),
        (
            &format!("{narrow} --accountant pld"),
            "key `--accountant`: the pld accountant accounts distributed discrete Gaussian noise through the continuous Gaussian mechanism",
        ),
    ] {
        assert_exit(&run(words), 2, want);
    }
    // Without naming an accountant: the RDP ones answer, pld is left out.
    let names: Vec<String> = epsilons(&run(narrow)).into_iter().map(|(a, _)| a).collect();
    assert_eq!(names, ["rdp-int", "rdp"]);
}
