#!/usr/bin/env python3
"""Times scipy.optimize.linear_sum_assignment on the matrices written by
benchmarks/lap (main.go) and prints one JSON object on stdout.

Usage: lap_scipy.py REPS N1:PATH1 [N2:PATH2 ...]

Each PATH holds an N×N matrix of little-endian float64 in row-major order.
For every matrix the script solves the maximisation problem
(maximize=True) REPS times after one warm-up call and reports the median
wall time in seconds, all the times, and the optimal objective. If numpy or scipy cannot be
imported it prints {"error": "..."} and exits with status 3.
"""

import json
import statistics
import sys
import time


def main():
    try:
        import numpy as np
        import scipy
        from scipy.optimize import linear_sum_assignment
    except ImportError as exc:  # reported to the Go harness
        print(json.dumps({"error": "cannot import numpy/scipy: %s" % exc}))
        return 3

    reps = int(sys.argv[1])
    results = []
    for arg in sys.argv[2:]:
        n_str, path = arg.split(":", 1)
        n = int(n_str)
        x = np.fromfile(path, dtype="<f8").reshape(n, n)
        rows, cols = linear_sum_assignment(x, maximize=True)  # warm-up
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            rows, cols = linear_sum_assignment(x, maximize=True)
            times.append(time.perf_counter() - t0)
        results.append({
            "n": n,
            "median_s": statistics.median(times),
            "min_s": min(times),
            "times_s": times,
            "objective": float(x[rows, cols].sum()),
        })
    print(json.dumps({
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "results": results,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
