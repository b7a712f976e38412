#!/usr/bin/env python3
"""PyTorch reference for the Sinkhorn speed comparison (see main.go).

Usage:
    sinkhorn_torch.py DIR            check once, then time the step on its own
    sinkhorn_torch.py DIR --serve    answer commands on stdin (used by main.go)

DIR is written by the Go program: header.json gives the sizes and the names
of two raw little-endian float64 files, X and R, each of shape (B, N, N).
The step is the straightforward log-domain loop with autograd, in float64 on
torch.set_num_threads(threads):

    z = x / tau
    for l in range(L):
        z = z - logsumexp(z, dim=2, keepdim=True)   # rows
        z = z - logsumexp(z, dim=1, keepdim=True)   # columns
    S = exp(z); loss = sum(S * R); loss.backward()

(the loop of benchmarks/internal/torchref/sinkhorn.py, shared with the
other harnesses).

With "forward": true in header.json the step is the loop alone under
torch.no_grad(), and check writes S only.

Serve protocol (one command per line on stdin, one JSON line on stdout):
    check  -> {"loss": ...}; S and dloss/dX are written to DIR/s_torch.f64
              and DIR/grad_torch.f64
    step   -> {"wall": seconds, "cpu": seconds} of one forward+backward
    quit   -> exit
The first line printed is {"ready": true, "torch": version, "threads": n,
"blas": [paths of the BLAS libraries mapped]},
or {"error": ...} (exit status 3) when torch cannot be imported.
"""

import json
import os
import statistics
import sys
import time


# The shared Sinkhorn loop lives in benchmarks/internal/torchref; importing
# it must not leave __pycache__ directories in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal"))
from torchref.proto import blas_libraries, import_error, reply  # noqa: E402 (needs the path above)

try:
    import numpy as np
    import torch
    from torchref.sinkhorn import sinkhorn
except ImportError as e:  # reported to the Go side, which times Go alone
    import_error(e)


class Problem:
    def __init__(self, dir_):
        with open(os.path.join(dir_, "header.json")) as f:
            h = json.load(f)
        self.dir = dir_
        self.b, self.n = h["batch"], h["n"]
        self.iters, self.tau = h["iters"], h["tau"]
        self.threads = h["threads"]
        self.forward = h.get("forward", False)
        torch.set_num_threads(self.threads)
        shape = (self.b, self.n, self.n)
        self.x = self.load(h["x"], shape)
        self.r = self.load(h["r"], shape)

    def load(self, name, shape):
        a = np.fromfile(os.path.join(self.dir, name), dtype="<f8")
        return torch.from_numpy(a.reshape(shape).copy())

    def step(self):
        if self.forward:
            with torch.no_grad():
                s = sinkhorn(self.x / self.tau, self.iters)
            return s, None, (s * self.r).sum().item()
        x = self.x.clone().requires_grad_(True)
        s = sinkhorn(x / self.tau, self.iters)
        loss = (s * self.r).sum()
        loss.backward()
        return s.detach(), x.grad, loss.item()

    def check(self):
        s, g, loss = self.step()
        s.numpy().astype("<f8").tofile(os.path.join(self.dir, "s_torch.f64"))
        if g is not None:
            g.numpy().astype("<f8").tofile(os.path.join(self.dir, "grad_torch.f64"))
        return {"loss": loss}

    def timed(self):
        c0, w0 = time.process_time(), time.perf_counter()
        self.step()
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
    reply({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads(), "blas": blas_libraries(torch)})
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
