"""The training-step server shared by the PyTorch reference scripts of the
benchmark harnesses (benchmarks/nn, benchmarks/vae).

A Go harness writes a directory: header.json with the settings and raw
little-endian float64 files for the initial parameters and the constant
inputs. It then starts the script with --serve and talks to it one line at
a time: each command on stdin gets one JSON line on stdout. The first line
printed is {"ready": true, "torch": version, "threads": n}; a script that
cannot import torch prints {"error": ...} and exits with status 3 (see
proto.import_error), so that the Go side times permlab alone.

StepProblem holds what every step harness shares: the header, the float64
loader, the Adam optimiser and the check/timed commands. A subclass sets
self.params and defines loss(). serve() runs the command loop; extra
commands (such as the VAE's "reset NAME") come in as a dict.
"""

import json
import os
import sys
import time

import numpy as np
import torch

from torchref.proto import blas_libraries, reply


class StepProblem:
    """One training step (forward, autograd backward, Adam) read from DIR."""

    def __init__(self, dir_):
        with open(os.path.join(dir_, "header.json")) as f:
            self.h = json.load(f)
        self.dir = dir_
        torch.set_num_threads(self.h["threads"])
        # "dtype": "float32" runs the whole step in float32; the files are
        # float64 either way.
        self.dtype = torch.float32 if self.h.get("dtype") == "float32" else torch.float64
        self.inputs = {e["name"]: self.load(e["file"], e["shape"]) for e in self.h["inputs"]}
        self.params = None
        self.opt = None

    def load(self, name, shape):
        """Read DIR/name, raw little-endian float64, as a tensor of shape
        in the step's dtype."""
        a = np.fromfile(os.path.join(self.dir, name), dtype="<f8")
        return torch.from_numpy(a.reshape(shape).copy()).to(self.dtype)

    def init_params(self):
        """Load the initial parameters and start a fresh Adam on them."""
        self.params = [
            self.load(p["file"], p["shape"]).requires_grad_(True) for p in self.h["params"]
        ]
        self.opt = torch.optim.Adam(self.params, lr=self.h["lr"], betas=(0.9, 0.999), eps=1e-8)

    def loss(self):
        raise NotImplementedError

    def check(self):
        """One step; gradients and updated parameters go to DIR for Go to compare."""
        self.opt.zero_grad(set_to_none=False)
        loss = self.loss()
        loss.backward()
        grads = [p.grad.detach().clone() for p in self.params]
        self.opt.step()
        cat = lambda ts: torch.cat([t.reshape(-1) for t in ts]).double().numpy().astype("<f8")
        cat(grads).tofile(os.path.join(self.dir, "grad_torch.f64"))
        cat([p.detach() for p in self.params]).tofile(os.path.join(self.dir, "after_torch.f64"))
        return {"loss": loss.item()}

    def timed(self):
        """One step, timed: wall and process CPU seconds."""
        c0, w0 = time.process_time(), time.perf_counter()
        self.opt.zero_grad(set_to_none=False)
        self.loss().backward()
        self.opt.step()
        return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}


def serve(problem, extra=None):
    """Answer check, step, quit and the commands in extra (name -> f(arg))."""
    reply({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads(), "blas": blas_libraries(torch)})
    commands = {"check": lambda _: problem.check(), "step": lambda _: problem.timed()}
    commands.update(extra or {})
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "quit":
            return
        f = commands.get(cmd)
        if f is None:
            reply({"error": "unknown command %r" % line.strip()})
            continue
        try:
            reply(f(arg))
        except Exception as e:  # the Go side stops with this message
            reply({"error": "%s: %s" % (type(e).__name__, e)})
