#!/usr/bin/env python3
"""One trace of a sweep's points, each point's algorithm column replaced by a label, so that
`fbo compare` pairs the points as algorithms (they share seeds, initial points and noise).

    label_points.py SWEEP_FOLDER LABEL1 LABEL2 ... > trace.csv   # points in order p000, p001, ...
"""
import csv
import glob
import os
import sys

folder, labels = sys.argv[1], sys.argv[2:]
points = sorted(glob.glob(os.path.join(folder, "points", "p*")))
if len(points) != len(labels):
    sys.exit(f"{folder}: {len(points)} points, {len(labels)} labels")
w = csv.writer(sys.stdout, lineterminator="\n")
for n, (label, point) in enumerate(zip(labels, points)):
    with open(os.path.join(point, "trace.csv"), newline="") as f:
        r = csv.reader(f)
        h = next(r)
        if n == 0:
            w.writerow(h)
        ia = h.index("algorithm")
        for row in r:
            row[ia] = label
            w.writerow(row)
