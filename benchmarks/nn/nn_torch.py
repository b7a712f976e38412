#!/usr/bin/env python3
"""PyTorch reference for the Sinkhorn-network training step (see main.go).

Usage:
    nn_torch.py DIR            check once, then time the step on its own
    nn_torch.py DIR --serve    answer commands on stdin (used by main.go)

DIR is written by the Go program: header.json names the case ("sorting",
"jigsaw3x3", "jigsaw4x4"), its settings, and raw little-endian float64 files
for the initial parameters (in the Go order) and the constant inputs. One
step, in float64 on torch.set_num_threads(threads), is the forward pass, the
backward pass by autograd, and one torch.optim.Adam update:

    sorting: g = relu(input @ W1 + b1) @ W2 + b2         (B, n, n)
             P = sinkhorn((g tiled S times per list + noise) / tau)
             loss = mean((xs @ P - target)^2)
    jigsaw:  h = flatten(max_pool2d(relu(conv2d(scrambled, W, b, pad)), s))
             g = h @ Wd + bd                              (B, n, n)
             P = sinkhorn((g tiled S times, sample-major + noise) / tau)
             loss = mean((P^T @ xt - x)^2)

with sinkhorn the log-domain loop (rows, then columns, L times, then exp) of
benchmarks/internal/torchref/sinkhorn.py.

Serve protocol (one command per line on stdin, one JSON line on stdout):
    check  -> {"loss": ...}; the gradients and the parameters after the
              Adam update are written to DIR/grad_torch.f64 and
              DIR/after_torch.f64, parameters one after the other
    step   -> {"wall": seconds, "cpu": seconds} of one training step
    quit   -> exit
The first line printed is {"ready": true, "torch": version, "threads": n},
or {"error": ...} (exit status 3) when torch cannot be imported.
"""

import json
import os
import statistics
import sys

# The shared Sinkhorn loop and step server live in benchmarks/internal/torchref;
# importing them must not leave __pycache__ directories in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal"))

try:
    import torch
    import torch.nn.functional as F
    from torchref.serve import StepProblem, serve
    from torchref.sinkhorn import sinkhorn
except ImportError as e:  # reported to the Go side, which times Go alone
    from torchref.proto import import_error

    import_error(e)


class Problem(StepProblem):
    def __init__(self, dir_):
        super().__init__(dir_)
        self.init_params()
        self.case = self.h["case"]

    def loss(self):
        h, x = self.h, self.inputs
        b, n, s = h["batch"], h["n"], h["samples"]
        if self.case == "sorting":
            w1, b1, w2, b2 = self.params
            g = (torch.relu(x["input"] @ w1 + b1) @ w2 + b2).reshape(b, n, n)
            g = g.repeat_interleave(s, dim=0) + x["noise"]
            p = sinkhorn(g / h["tau"], h["iters"])
            return ((x["xs"] @ p - x["target"]) ** 2).mean()
        w, bc, wd, bd = self.params
        k = h["kernel"]
        y = F.conv2d(x["scrambled"], w.reshape(w.shape[0], -1, k, k), bc, padding=h["pad"])
        y = F.max_pool2d(torch.relu(y), h["pool"])
        g = (y.flatten(1) @ wd + bd).reshape(b, n, n)
        g = g.repeat(s, 1, 1) + x["noise"]
        p = sinkhorn(g / h["tau"], h["iters"])
        return ((p.transpose(1, 2) @ x["xt"] - x["x"]) ** 2).mean()


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    p = Problem(sys.argv[1])
    if "--serve" in sys.argv[2:]:
        serve(p)
        return
    print(json.dumps(p.check()))
    for _ in range(3):
        p.timed()
    walls = [p.timed()["wall"] for _ in range(11)]
    print("median wall %.2f ms" % (1e3 * statistics.median(walls)))


if __name__ == "__main__":
    main()
