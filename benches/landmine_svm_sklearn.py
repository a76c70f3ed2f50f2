"""The authors' live landmine evaluation, timed: scikit-learn's SVC(probability=True) (libsvm,
Platt scaling by internal 5-fold cross-validation) trained on fbo's split of a field and scored
by the validation AUC of predict_proba, at the points of a CSV (agent, C, gamma, ...), one
thread. The counterpart of `fbo bench --landmine-points CSV --landmine-data landmine.csv`.

Usage: OMP_NUM_THREADS=1 python benches/landmine_svm_sklearn.py POINTS.csv
"""
import gzip
import sys, csv, os, time, warnings
import numpy as np
from sklearn.svm import SVC
from sklearn.metrics import roc_auc_score
warnings.filterwarnings('ignore', category=FutureWarning)
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
raw = {}
with gzip.open(root + '/data/raw/landmine/landmine.csv.gz', 'rt') as f:
    r = csv.reader(f); next(r)
    for row in r:
        raw[(int(row[0]) - 1, int(row[1]))] = (int(row[2]), [float(v) for v in row[3:]])
split = {}
with open(root + '/data/landmine/split.csv') as f:
    r = csv.reader(f); next(r)
    for a, i, s in r:
        split.setdefault(int(a), {'train': [], 'valid': []})[s].append(int(i))
data = {}
for a in split:
    tr, va = split[a]['train'], split[a]['valid']
    data[a] = (np.array([raw[(a, i)][1] for i in tr]), np.array([raw[(a, i)][0] for i in tr]),
               np.array([raw[(a, i)][1] for i in va]), np.array([raw[(a, i)][0] for i in va]))
pts = []
with open(sys.argv[1]) as f:
    r = csv.reader(f); next(r)
    for row in r:
        pts.append((int(row[0]), float(row[1]), float(row[2])))
# The authors' settings (libsvm's default tol = 1e-3), then the tolerance at which libsvm
# reports the converged optimum fbo computes (tests/svm_reference.rs).
for name, prob, tol in [('auc', False, 1e-3), ('platt-auc', True, 1e-3),
                        ('auc-tol1e-12', False, 1e-12), ('platt-auc-tol1e-12', True, 1e-12)]:
    t0 = time.perf_counter()
    for a, C, g in pts:
        X, y, Xv, yv = data[a]
        m = SVC(kernel='rbf', C=C, gamma=g, probability=prob, tol=tol).fit(X, y)
        s = m.predict_proba(Xv)[:, 1] if prob else m.decision_function(Xv)
        roc_auc_score(yv, s)
    t = time.perf_counter() - t0
    print(f'{name},{t * 1e3 / len(pts):.3f},{t:.3f}')
