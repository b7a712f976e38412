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
import time


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# The shared Sinkhorn loop lives in benchmarks/internal/torchref; importing
# it must not leave __pycache__ directories in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal"))

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torchref.sinkhorn import sinkhorn
except ImportError as e:  # reported to the Go side, which times Go alone
    reply({"error": "cannot import torch/numpy/torchref: %s" % e})
    sys.exit(3)


class Problem:
    def __init__(self, dir_):
        with open(os.path.join(dir_, "header.json")) as f:
            h = json.load(f)
        self.dir = dir_
        self.h = h
        torch.set_num_threads(h["threads"])
        self.params = [
            self.load(p["file"], p["shape"]).requires_grad_(True) for p in h["params"]
        ]
        self.inputs = {e["name"]: self.load(e["file"], e["shape"]) for e in h["inputs"]}
        self.opt = torch.optim.Adam(self.params, lr=h["lr"], betas=(0.9, 0.999), eps=1e-8)
        self.case = h["case"]

    def load(self, name, shape):
        a = np.fromfile(os.path.join(self.dir, name), dtype="<f8")
        return torch.from_numpy(a.reshape(shape).copy())

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

    def step(self):
        self.opt.zero_grad(set_to_none=False)
        loss = self.loss()
        loss.backward()
        grads = [p.grad.detach().clone() for p in self.params]
        self.opt.step()
        return loss.item(), grads

    def check(self):
        loss, grads = self.step()
        cat = lambda ts: torch.cat([t.reshape(-1) for t in ts]).numpy().astype("<f8")
        cat(grads).tofile(os.path.join(self.dir, "grad_torch.f64"))
        cat([p.detach() for p in self.params]).tofile(os.path.join(self.dir, "after_torch.f64"))
        return {"loss": loss}

    def timed(self):
        c0, w0 = time.process_time(), time.perf_counter()
        self.opt.zero_grad(set_to_none=False)
        self.loss().backward()
        self.opt.step()
        return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    p = Problem(sys.argv[1])
    if "--serve" not in sys.argv[2:]:
        print(json.dumps(p.check()))
        for _ in range(3):
            p.timed()
        walls = [p.timed()["wall"] for _ in range(11)]
        print("median wall %.2f ms" % (1e3 * statistics.median(walls)))
        return
    reply({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()})
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "check":
            reply(p.check())
        elif cmd == "step":
            reply(p.timed())
        elif cmd == "quit":
            return
        else:
            reply({"error": "unknown command %r" % cmd})


if __name__ == "__main__":
    main()
