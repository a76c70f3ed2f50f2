"""BoTorch's side of the closed-form benchmark suite (issue 24), run by scripts/bench-botorch.sh.

For each problem folder (results/bench-botorch/<problem>/, where fbo wrote one run folder per
configuration, fbo-<label>/, all on the same seeds and initial points), BoTorch starts
every run from the very initial points fbo's run drew (read from the trace, and checked: the
function here must give fbo's noiseless value at each of them to 1e-9, so boxes and
definitions agree), observes the same noise level, and runs the same number of iterations with
  - ts:    SingleTaskGP (BoTorch's defaults: RBF kernel with ARD and Hvarfner et al.'s
           dimension-scaled priors, standardised outcomes), Thompson sampling by an exact joint
           posterior sample on 1000 Sobol candidates (MaxPosteriorSampling),
  - logei: the same model with qLogExpectedImprovement, optimize_acqf (10 restarts, 512 raw).
It writes <problem>/botorch.csv: run, method, iteration, simple regret (of the best
noiseless value among the points observed so far, as fbo's trace does) and CPU seconds.
Then `compare` prints, per problem, the paired differences at the final iteration between
each fbo algorithm and each BoTorch method (same runs), with a Wilcoxon signed-rank test and
Holm's correction over every comparison made.
"""

import argparse
import csv
import math
import os
import sys
import time
import warnings

import numpy as np


def problem(name, dim, embed=0):
    """The function on the unit cube (maximised, as fbo does) and its dimension; with embed
    > 0 hidden in that many dimensions, of which only the first dim count (`objective.embed`)."""
    import torch
    from botorch.test_functions import synthetic as s

    table = {
        "branin": lambda: s.Branin(),
        "hartmann3": lambda: s.Hartmann(dim=3),
        "hartmann6": lambda: s.Hartmann(dim=6),
        "shekel": lambda: s.Shekel(m=10),
        "ackley": lambda: s.Ackley(dim=dim),
        "levy": lambda: s.Levy(dim=dim),
        "rosenbrock": lambda: s.Rosenbrock(dim=dim),
        "griewank": lambda: s.Griewank(dim=dim),
        "rastrigin": lambda: s.Rastrigin(dim=dim),
        "styblinski-tang": lambda: s.StyblinskiTang(dim=dim),
        "michalewicz": lambda: s.Michalewicz(dim=dim),
    }
    f = table[name]()
    bounds = f.bounds.to(torch.double)
    d = f.dim
    # BoTorch's functions are minimised; fbo maximises their negation.
    value = lambda x_unit: -f.evaluate_true(bounds[0] + x_unit[..., :d] * (bounds[1] - bounds[0]))
    return value, max(d, embed)


def read_fbo(trace):
    """Per run: the initial points (unit coordinates), fbo's noiseless values there, the
    maximum (best_f + simple_regret of any row), and the number of iterations."""
    with open(trace, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    col = {name: i for i, name in reversed(list(enumerate(head)))}
    # Unit columns u0, u1, .. (x0, x1, .. in traces of older builds).
    prefix = "u" if "u0" in head else "x"
    x0 = head.index(prefix + "0")
    runs = {}
    for r in rows[1:]:
        run, it = int(r[col["run"]]), int(r[col["iteration"]])
        d = runs.setdefault(run, {"init": [], "f": [], "iters": 0, "algos": set()})
        d["algos"].add(r[col["algorithm"]])
        if r[col["agent"]] != "0":
            continue
        d["max"] = float(r[col["best_f"]]) + float(r[col["simple_regret"]])
        if it < 0 and r[col["algorithm"]] == rows[1][col["algorithm"]]:
            j = x0
            xs = []
            while j < len(head) and head[j] == f"{prefix}{len(xs)}":
                xs.append(float(r[j]))
                j += 1
            d["init"].append(xs)
            d["f"].append(float(r[col["f"]]))
        d["iters"] = max(d["iters"], it)
    return runs


def fbo_traces(folder):
    import glob

    traces = sorted(glob.glob(os.path.join(folder, "fbo-*", "trace.csv")))
    if not traces:
        sys.exit(f"{folder}: no fbo-*/trace.csv")
    return traces


def run_problem(folder, name, dim, noise_sd, methods, seed, embed=0, ts_candidates=1000):
    import torch
    from botorch.acquisition.logei import qLogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.generation.sampling import MaxPosteriorSampling
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from torch.quasirandom import SobolEngine

    torch.set_default_dtype(torch.double)
    # One thread, as fbo runs here (--threads 1): CPU seconds then compare like for like.
    torch.set_num_threads(1)
    # GPyTorch's jitter notices, one per fit on near-duplicate points, would drown the log.
    warnings.simplefilter("ignore")
    f, d = problem(name, dim, embed)
    runs = read_fbo(fbo_traces(folder)[0])
    out_path = os.path.join(folder, "botorch.csv")
    done = set()
    if os.path.exists(out_path):
        with open(out_path, newline="") as fh:
            for r in csv.DictReader(fh):
                done.add((int(r["run"]), r["method"]))
    new = not os.path.exists(out_path)
    out = open(out_path, "a", newline="")
    w = csv.writer(out)
    if new:
        w.writerow(["run", "method", "iteration", "simple_regret", "cpu_s"])
    unit = torch.stack([torch.zeros(d), torch.ones(d)])
    for run, info in sorted(runs.items()):
        x = torch.tensor(info["init"])
        fx = f(x)
        worst = (fx - torch.tensor(info["f"])).abs().max().item()
        if worst > 1e-9 * (1 + max(abs(v) for v in info["f"])):
            sys.exit(f"{folder}: run {run}: BoTorch's {name} differs from fbo's by {worst}")
        for method in methods:
            if (run, method) in done:
                continue
            gen = torch.Generator().manual_seed(seed * 1000 + run)
            torch.manual_seed(seed * 1000 + run)
            X = x.clone()
            F = fx.clone()
            Y = F + noise_sd * torch.randn(F.shape, generator=gen)
            rows = []
            for it in range(1, info["iters"] + 1):
                t0 = time.process_time()
                model = SingleTaskGP(X, Y.unsqueeze(-1), outcome_transform=Standardize(m=1))
                fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
                if method == "ts":
                    n = ts_candidates
                    cand = SobolEngine(d, scramble=True, seed=seed * 100003 + run * 101 + it).draw(n)
                    nxt = MaxPosteriorSampling(model=model, replacement=False)(cand, num_samples=1)
                else:
                    acq = qLogExpectedImprovement(model, best_f=Y.max())
                    nxt, _ = optimize_acqf(acq, bounds=unit, q=1, num_restarts=10, raw_samples=512)
                cpu = time.process_time() - t0
                fn = f(nxt)
                X = torch.cat([X, nxt])
                F = torch.cat([F, fn])
                Y = torch.cat([Y, fn + noise_sd * torch.randn(fn.shape, generator=gen)])
                rows.append([run, method, it, info["max"] - F.max().item(), cpu])
            w.writerows(rows)
            out.flush()
            print(f"{folder}: run {run} {method}: final regret {rows[-1][3]:.4g}", file=sys.stderr)
    out.close()


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adj[i] = running
    return adj


def compare(folders):
    from scipy.stats import wilcoxon

    lines = []
    for folder in folders:
        bt = {}
        with open(os.path.join(folder, "botorch.csv"), newline="") as fh:
            rows = list(csv.DictReader(fh))
        for trace in fbo_traces(folder):
            label = os.path.basename(os.path.dirname(trace))[len("fbo-"):]
            runs = read_fbo(trace)
            last = max(i["iters"] for i in runs.values())
            for r in rows:
                if int(r["iteration"]) == last:
                    bt[(r["method"], int(r["run"]))] = float(r["simple_regret"])
            fbo = {}
            with open(trace, newline="") as fh:
                for r in csv.DictReader(fh):
                    if int(r["iteration"]) == last and r["agent"] == "0":
                        fbo[(r["algorithm"], int(r["run"]))] = float(r["simple_regret"])
            for a in sorted({k[0] for k in fbo}):
                for m in sorted({k[0] for k in bt}):
                    pairs = [(fbo[(a, r)], bt[(m, r)]) for r in sorted(runs)
                             if (m, r) in bt and (a, r) in fbo]
                    if len(pairs) < 2:
                        continue
                    diff = np.array([p[0] - p[1] for p in pairs])
                    p = 1.0 if np.all(diff == 0) else wilcoxon(diff).pvalue
                    lines.append([os.path.basename(folder.rstrip("/")), f"{label}/{a}", m, len(pairs),
                                  np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs]),
                                  diff.mean(), diff.std(ddof=1) / math.sqrt(len(diff)),
                                  int(np.sum(diff < 0)), int(np.sum(diff > 0)), p])
    adj = holm([l[10] for l in lines])
    print("problem,fbo,botorch,n,fbo_mean,botorch_mean,mean_diff,se_diff,"
          "fbo_better,botorch_better,p_wilcoxon,p_holm")
    for l, h in zip(lines, adj):
        print(",".join(str(v) if isinstance(v, (int, str)) else f"{v:.6g}" for v in l + [h]))


def cpu(folders):
    """CPU seconds per agent-iteration: BoTorch's measured around each iteration (model fit
    and acquisition), fbo's the whole process's user + system time (cpu_s.txt, written by
    the shell script) over the agent-iterations of its trace."""
    print("problem,engine,cpu_s_per_iteration")
    for folder in folders:
        name = os.path.basename(folder.rstrip("/"))
        per = {}
        with open(os.path.join(folder, "botorch.csv"), newline="") as fh:
            for r in csv.DictReader(fh):
                per.setdefault(r["method"], []).append(float(r["cpu_s"]))
        for m, v in sorted(per.items()):
            print(f"{name},botorch-{m},{np.mean(v):.6g}")
        for trace in fbo_traces(folder):
            label = os.path.basename(os.path.dirname(trace))
            with open(trace, newline="") as fh:
                its = sum(1 for r in csv.DictReader(fh) if int(r["iteration"]) > 0)
            with open(os.path.join(os.path.dirname(trace), "cpu_s.txt")) as fh:
                total = float(fh.read())
            print(f"{name},{label},{total / its:.6g}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("folder")
    r.add_argument("--function", required=True)
    r.add_argument("--dimension", type=int, default=0)
    r.add_argument("--noise-sd", type=float, required=True)
    r.add_argument("--methods", default="ts,logei")
    r.add_argument("--seed", type=int, default=24)
    r.add_argument("--embed", type=int, default=0)
    # MaxPosteriorSampling on this many Sobol candidates: 1000, as BoTorch's Thompson-sampling
    # tutorial and issue 41's measurement of its defaults take it.
    r.add_argument("--ts-candidates", type=int, default=1000)
    c = sub.add_parser("compare")
    c.add_argument("folders", nargs="+")
    u = sub.add_parser("cpu")
    u.add_argument("folders", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run":
        run_problem(a.folder, a.function, a.dimension, a.noise_sd, a.methods.split(","), a.seed,
                    a.embed, a.ts_candidates)
    elif a.cmd == "cpu":
        cpu(a.folders)
    else:
        compare(a.folders)
