#!/usr/bin/env python3
"""PyTorch reference for the categorical VAE training step (see main.go).

Usage:
    vae_torch.py DIR            check each estimator once, then time its step
    vae_torch.py DIR --serve    answer commands on stdin (used by main.go)

DIR is written by the Go program: header.json gives the sizes (input D,
latents L, classes C, hidden widths), the temperature tau, the prior's
temperature tau_p, the Adam learning rate, the thread count, and raw
little-endian float64 files for the initial parameters (in the Go order:
encoder layers then decoder layers, each W of shape (in, out) then b) and
for the constant inputs: the binary images x (B, D) and the standard Gumbel
noise g (B, L, C). One step, in float64 on torch.set_num_threads(threads),
is the forward pass, the backward pass by autograd, and one
torch.optim.Adam update of the loss

    l   = encoder(x)                      ReLU network, logits (B, L, C)
    u   = (l + g) / tau                   Gumbel-space sample
    y   = softmax(u) over C               relaxed one-hot
    f   = decoder(y flattened)            ReLU network, Bernoulli logits (B, D)
    rec = sum_d [max(f, 0) - f x + log(1 + exp(-|f|))]    per image
    loss = mean_B(rec) + KL / B

with the KL term, summed over the batch, of the estimator:

    gumbel-softmax: sum q (log q + log C),  q = softmax(l), log q = log_softmax(l)
    concrete:       sum over the B·L latents of log q(lx) - log p(lx), where
                    lx = log_softmax(u) and, for logits a and temperature t,
                    the ExpConcrete log density is
                    log (C-1)! + (C-1) log t + sum_c (a_c - t lx_c)
                      - C logsumexp_c(a_c - t lx_c);
                    q has logits l and temperature tau, p logits 0 and tau_p
    gumbel-space:   sum over the B·L·C logits of
                    log(tau/tau_p) - 1 + gamma (r - 1) + r l + Gamma(1 + r) exp(-r l),
                    r = tau_p / tau, gamma the Euler-Mascheroni constant
                    (the closed-form KL between the Gumbel(l/tau, 1/tau) and
                    Gumbel(0, 1/tau_p) variables)

Serve protocol (one command per line on stdin, one JSON line on stdout):
    reset NAME -> {"ok": true}; reloads the initial parameters, starts a new
                  Adam and selects the estimator NAME
    check      -> {"loss": ...}; one step: the gradients and the parameters
                  after the Adam update are written to DIR/grad_torch.f64 and
                  DIR/after_torch.f64, parameters one after the other
    step       -> {"wall": seconds, "cpu": seconds} of one training step
    quit       -> exit
The first line printed is {"ready": true, "torch": version, "threads": n},
or {"error": ...} (exit status 3) when torch cannot be imported.
"""

import json
import math
import os
import statistics
import sys

# The step server lives in benchmarks/internal/torchref; importing it must
# not leave __pycache__ directories in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal"))

try:
    import torch
    from torchref.serve import StepProblem, serve
except ImportError as e:  # reported to the Go side, which times Go alone
    from torchref.proto import import_error

    import_error(e)

EULER_GAMMA = 0.57721566490153286060651209008240243
ESTIMATORS = ("gumbel-softmax", "concrete", "gumbel-space")


def mlp(h, layers):
    """Dense layers h @ W + b with ReLU between them (not after the last)."""
    for i, (w, b) in enumerate(layers):
        h = h @ w + b
        if i + 1 < len(layers):
            h = torch.relu(h)
    return h


def exp_concrete_log_prob(a, t, lx):
    """ExpConcrete log density of lx = log y, logits a, temperature t."""
    k = lx.shape[-1]
    s = a - t * lx
    const = math.lgamma(k) + (k - 1) * math.log(t)
    return const + s.sum(-1) - k * torch.logsumexp(s, -1)


def kl_term(estimator, l, u, tau, tau_p):
    c = l.shape[-1]
    if estimator == "gumbel-softmax":
        logq = torch.log_softmax(l, -1)
        return (torch.exp(logq) * (logq + math.log(c))).sum()
    if estimator == "concrete":
        lx = torch.log_softmax(u, -1)
        lq = exp_concrete_log_prob(l, tau, lx)
        lp = exp_concrete_log_prob(torch.zeros_like(l), tau_p, lx)
        return (lq - lp).sum()
    if estimator == "gumbel-space":
        r = tau_p / tau
        const = math.log(tau / tau_p) - 1 + EULER_GAMMA * (r - 1)
        return (const + r * l + torch.exp(math.lgamma(1 + r) - r * l)).sum()
    raise ValueError("unknown estimator %r" % estimator)


class Problem(StepProblem):
    def __init__(self, dir_):
        super().__init__(dir_)
        self.estimator = None

    def reset(self, estimator):
        if estimator not in ESTIMATORS:
            raise ValueError("unknown estimator %r" % estimator)
        self.estimator = estimator
        self.init_params()
        return {"ok": True}

    def loss(self):
        h = self.h
        x, g = self.inputs["x"], self.inputs["g"]
        b, lat, c = g.shape
        pairs = list(zip(self.params[0::2], self.params[1::2]))
        depth = len(h["hidden"]) + 1
        enc, dec = pairs[:depth], pairs[depth:]
        tau, tau_p = h["tau"], h["tau_prior"]
        l = mlp(x, enc).reshape(b, lat, c)
        u = (l + g) / tau
        y = torch.softmax(u, -1)
        f = mlp(y.reshape(b, lat * c), dec)
        rec = (torch.clamp(f, min=0) - f * x + torch.log1p(torch.exp(-f.abs()))).sum(1)
        return rec.mean() + kl_term(self.estimator, l, u, tau, tau_p) / b


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    p = Problem(sys.argv[1])
    if "--serve" not in sys.argv[2:]:
        for est in p.h["estimators"]:
            p.reset(est)
            print(est, json.dumps(p.check()))
            for _ in range(3):
                p.timed()
            walls = [p.timed()["wall"] for _ in range(11)]
            print("%s: median wall %.2f ms" % (est, 1e3 * statistics.median(walls)))
        return
    serve(p, {"reset": p.reset})


if __name__ == "__main__":
    main()
