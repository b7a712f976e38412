#!/usr/bin/env python3
"""Reference PyTorch implementation of one Gumbel-Sinkhorn ELBO gradient step
on the C. elegans problem, for comparison with permlab (see README.md).

Usage:
    step_torch.py DIR            run the check, then time the step on its own
    step_torch.py DIR --serve    answer commands on stdin (used by main.go)

DIR is written by the Go program: header.json describes raw little-endian
float64 arrays (one .f64 file each). The step is written the straightforward
way, in float64 on torch.set_num_threads(threads):

    Gumbel noise g, z = (X + g) / tau with forbidden entries at -inf,
    L times: z -= logsumexp(z, rows); z -= logsumexp(z, columns),
    P = exp(z),
    w = mu + softplus(rho) * e scattered into the support of W,
    per worm: A = P W P^T, residual = Y[1:] - Y[:-1] A^T,
    loglik = -sum(residual^2) / (2 eta^2) - (T-1) N log(2 pi eta^2) / 2,
    KL_P = sum over allowed entries of the closed-form Gumbel-space KL,
    KL_W = closed-form KL of the mean-field normal to N(0, sigma_W^2),
    loss = -(loglik - KL_P - KL_W), autograd backward, Adam step.

Serve protocol (one command per line on stdin, one answer line on stdout):
    check  -> JSON with elbo, loglik, kl_p, kl_w at the initial parameters
              and the noise from Go; the gradients of the ELBO with respect
              to X, mu, rho are written to DIR/grad_{X,mu,rho}.f64
    step   -> JSON with the wall and CPU seconds of one step
    quit   -> exit
"""

import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

EULER_GAMMA = 0.57721566490153286060651209008240243


def load(dir_, header, name):
    spec = header["arrays"][name]
    a = np.fromfile(os.path.join(dir_, spec["file"]), dtype="<f8")
    return torch.from_numpy(a.reshape(spec["shape"]).copy())


class Problem:
    def __init__(self, dir_):
        with open(os.path.join(dir_, "header.json")) as f:
            h = json.load(f)
        self.dir = dir_
        self.h = h
        self.threads = h["threads"]
        torch.set_num_threads(self.threads)
        torch.manual_seed(h["seed"])
        self.n, self.worms, self.T = h["neurons"], h["worms"], h["T"]
        self.tau, self.tau_prior, self.iters = h["tau"], h["tau_prior"], h["iters"]
        self.eta2, self.sigma_w, self.lr = h["noise_var"], h["sigma_w"], h["lr"]
        self.y = load(dir_, h, "Y")  # (worms, T, N)
        if "mask" in h["arrays"]:
            self.mask = load(dir_, h, "mask") != 0  # (worms, N, N)
        else:
            self.mask = torch.ones(self.worms, self.n, self.n, dtype=torch.bool)
        sup = load(dir_, h, "support").long()  # (E, 2)
        self.rows, self.cols = sup[:, 0], sup[:, 1]
        self.e = sup.shape[0]
        self.x = load(dir_, h, "X0").requires_grad_()
        self.mu = load(dir_, h, "mu0").requires_grad_()
        self.rho = load(dir_, h, "rho0").requires_grad_()
        self.opt = torch.optim.Adam([self.x, self.mu, self.rho], lr=self.lr)
        r = self.tau_prior / self.tau
        self.kl_r = r
        self.kl_c = math.log(self.tau / self.tau_prior) - 1 + EULER_GAMMA * (r - 1)
        self.kl_lg = math.lgamma(1 + r)

    def elbo(self, gumbel, eps):
        """ELBO of one sample; returns (elbo, loglik, kl_p, kl_w)."""
        n = self.n
        z = (self.x + gumbel) / self.tau
        z = z.masked_fill(~self.mask, -math.inf)
        for _ in range(self.iters):
            z = z - torch.logsumexp(z, dim=-1, keepdim=True)
            z = z - torch.logsumexp(z, dim=-2, keepdim=True)
        p = torch.exp(z)
        sigma = F.softplus(self.rho)
        w = self.mu + sigma * eps
        wd = torch.zeros(n, n, dtype=torch.float64).index_put((self.rows, self.cols), w)
        ll = 0.0
        for j in range(self.worms):
            a = p[j] @ wd @ p[j].T
            y = self.y[j]
            res = y[1:] - y[:-1] @ a.T
            ll = ll - 0.5 / self.eta2 * (res * res).sum()
        ll = ll - 0.5 * self.worms * (self.T - 1) * n * math.log(2 * math.pi * self.eta2)
        xa = self.x[self.mask]
        r = self.kl_r
        kl_p = (self.kl_c + r * xa + torch.exp(self.kl_lg - r * xa)).sum()
        v = self.sigma_w ** 2
        kl_w = ((sigma * sigma + self.mu * self.mu) / (2 * v) - torch.log(sigma)).sum() \
            + self.e * (math.log(self.sigma_w) - 0.5)
        return ll - kl_p - kl_w, ll, kl_p, kl_w

    def check(self):
        gumbel = load(self.dir, self.h, "check_gumbel")
        eps = load(self.dir, self.h, "check_eps")
        self.opt.zero_grad(set_to_none=True)
        elbo, ll, kl_p, kl_w = self.elbo(gumbel, eps)
        elbo.backward()
        for name, t in (("X", self.x), ("mu", self.mu), ("rho", self.rho)):
            t.grad.numpy().astype("<f8").tofile(os.path.join(self.dir, "grad_" + name + ".f64"))
        self.opt.zero_grad(set_to_none=True)
        return {"elbo": elbo.item(), "loglik": ll.item(), "kl_p": kl_p.item(), "kl_w": kl_w.item()}

    def step(self):
        """One ELBO gradient step with fresh noise."""
        u = torch.rand(self.worms, self.n, self.n, dtype=torch.float64)
        u.clamp_(min=torch.finfo(torch.float64).tiny)
        gumbel = -torch.log(-torch.log(u))
        eps = torch.randn(self.e, dtype=torch.float64)
        self.opt.zero_grad(set_to_none=True)
        elbo, _, _, _ = self.elbo(gumbel, eps)
        (-elbo).backward()
        self.opt.step()
        return elbo.item()

    def timed_step(self):
        w0, c0 = time.perf_counter(), time.process_time()
        self.step()
        return time.perf_counter() - w0, time.process_time() - c0


def serve(prob):
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "check":
            out = prob.check()
        elif cmd == "step":
            wall, cpu = prob.timed_step()
            out = {"wall": wall, "cpu": cpu}
        elif cmd == "quit":
            return
        else:
            out = {"error": "unknown command %r" % cmd}
        print(json.dumps(out), flush=True)


def standalone(prob, warmup=3, reps=10):
    print("check:", json.dumps(prob.check()))
    for _ in range(warmup):
        prob.step()
    walls = [prob.timed_step()[0] for _ in range(reps)]
    print("torch %s, %d threads: median %.1f ms/step over %d reps (min %.1f, max %.1f)" % (
        torch.__version__, torch.get_num_threads(), 1e3 * statistics.median(walls), reps,
        1e3 * min(walls), 1e3 * max(walls)))


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: step_torch.py DIR [--serve]")
    prob = Problem(sys.argv[1])
    if "--serve" in sys.argv[2:]:
        serve(prob)
    else:
        standalone(prob)


if __name__ == "__main__":
    main()
