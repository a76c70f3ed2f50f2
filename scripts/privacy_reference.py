"""Reference epsilons for tests/privacy_reference.rs, made with Google's dp_accounting.

    python3 -m venv /tmp/dpa && /tmp/dpa/bin/pip install dp-accounting==0.4.4 scipy==1.17.1
    /tmp/dpa/bin/python scripts/privacy_reference.py > tests/fixtures/privacy_reference.csv

Rows:
- poisson: the PLD accountant (connect-the-dots, pessimistic, loss grid 1e-5 or the finest
  that finishes) of T compositions of the Poisson-subsampled Gaussian, add/remove adjacency,
  sensitivity 1, noise z: an upper bound within its discretisation of the true epsilon.
- fixed-lower: the same PLD at rate m/N and noise z/2 (sensitivity 2 under replace-one, both
  directions, larger epsilon): attained by a concrete pair of datasets under fixed-size
  sampling, so a lower bound on the true epsilon there.
- fixed-rdp: the RDP accountant with SampledWithoutReplacementDpEvent under REPLACE_ONE
  (Wang, Balle & Kasiviswanathan Thm. 27), integer orders 2..256.
"""
import math
import sys
import dp_accounting
from dp_accounting.pld import privacy_loss_distribution as pldlib
from dp_accounting import rdp

def pld_eps(q, z, steps, delta, interval):
    pld = pldlib.from_gaussian_mechanism(
        standard_deviation=z, sensitivity=1.0, sampling_prob=q,
        value_discretization_interval=interval, use_connect_dots=True,
        pessimistic_estimate=True)
    return pld.self_compose(steps).get_epsilon_for_delta(delta)

print("kind,q,z,steps,delta,agents,reference")
delta = 1e-5
for q in [1e-3, 0.01, 0.1, 0.25, 0.5, 1.0]:
    for z in [0.5, 1.0, 2.0, 5.0]:
        for steps in [1, 40, 1000, 10000]:
            interval = 1e-4 if steps >= 1000 or z < 1 else 1e-5
            e = pld_eps(q, z, steps, delta, interval)
            print(f"poisson,{q},{z},{steps},{delta},,{e:.6f}")
            sys.stdout.flush()
for n, q in [(30, 0.35), (200, 0.25), (29, 0.1), (10, 0.5), (100, 0.01)]:
    m = math.floor(n * q + 0.5)  # fbo's round(N q): halves go up (Python's round would not)
    for z in [0.8, 1.0, 2.0]:
        for steps in [1, 60, 1000]:
            e = pld_eps(m / n, z / 2, steps, delta, 1e-4)
            print(f"fixed-lower,{q},{z},{steps},{delta},{n},{e:.6f}")
            acc = rdp.RdpAccountant(orders=list(range(2, 257)),
                neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
            acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(
                n, m, dp_accounting.GaussianDpEvent(z / 2)), steps)
            print(f"fixed-rdp,{q},{z},{steps},{delta},{n},{acc.get_epsilon(delta):.6f}")
            sys.stdout.flush()
