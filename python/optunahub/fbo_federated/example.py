"""Three sites tune a learning rate and a depth, each on its own data (here: its own optimum),
with DP-FTS-DE; each site keeps its own Optuna study."""

import math
import pathlib
import tempfile

import optuna

import fbo.optuna


def objective_of(site):
    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        depth = trial.suggest_int("depth", 1, 8)
        return (math.log10(lr) + 2.0 + 0.3 * site) ** 2 + 0.1 * (depth - 3 - site) ** 2

    return objective


if __name__ == "__main__":
    work = pathlib.Path(tempfile.mkdtemp())
    space = {
        "lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True),
        "depth": optuna.distributions.IntDistribution(1, 8),
    }
    spec = fbo.optuna.spec_from_search_space(
        work / "spec.toml",
        space,
        agents=3,
        direction="minimize",
        algorithm={"kind": "dp-fts-de", "server": {"subregions": 2, "dp": True, "q": 1.0, "z": 1.0}},
        iterations=15,
    )
    fed = fbo.optuna.Federation(spec, work / "fed")
    studies = [optuna.create_study(sampler=fed.sampler(a), direction="minimize") for a in range(3)]
    fbo.optuna.optimize(fed, studies, [objective_of(a) for a in range(3)])
    for a, s in enumerate(studies):
        print(f"site {a}: best {s.best_value:.4f} at {s.best_params}")
    print(f"fbo's outputs (trace.csv, summary.csv, privacy.csv): {work / 'fed'}")
