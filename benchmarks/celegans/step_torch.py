#!/usr/bin/env python3
"""Reference PyTorch implementations of one Gumbel-Sinkhorn ELBO gradient
step on the C. elegans problem, for comparison with permlab (see README.md).

Usage:
    step_torch.py DIR [--variant V]            check, then time the step on its own
    step_torch.py DIR --serve                  answer commands on stdin (used by main.go)

V is naive, suffstats or both (the default). DIR is written by the Go
program: header.json describes raw little-endian float64 arrays (one .f64
file each). Both variants take the step in float64 on
torch.set_num_threads(threads) and share everything but the likelihood:

    Gumbel noise g, z = (X + g) / tau with forbidden entries at -inf,
    L times: z -= logsumexp(z, rows); z -= logsumexp(z, columns),
    P = exp(z),
    w = mu + softplus(rho) * e scattered into the support of a dense W,
    loglik (below),
    KL_P = sum over allowed entries of the closed-form Gumbel-space KL,
    KL_W = closed-form KL of the mean-field normal to N(0, sigma_W^2),
    loss = -(loglik - KL_P - KL_W), autograd backward, Adam step.

With A_j = P_j W P_j^T and eta^2 the noise variance, the likelihood of the
linear dynamics y_{t+1} = A_j y_t + e_t, e_t ~ N(0, eta^2 I), is

    naive:     per worm, residual = Y_j[1:] - Y_j[:-1] A_j^T over all T steps,
               loglik = -sum_j sum(residual^2) / (2 eta^2) - c
    suffstats: Sxx_j = Y_j[:-1]^T Y_j[:-1], Syx_j = Y_j[1:]^T Y_j[:-1] and
               tr Syy_j = sum(Y_j[1:]^2), computed once when the problem is
               loaded, then for all worms at once (batched matmul)
               loglik = -sum_j (tr Syy_j - 2 <A_j, Syx_j> + <A_j Sxx_j, A_j>)
                        / (2 eta^2) - c

with c = worms (T-1) N log(2 pi eta^2) / 2 and <U, V> = sum(U * V). The
two are the same function (the sum of squared residuals expanded); the
second costs two N x N x N products per worm, whatever T.

Each variant has its own parameters, Adam state and random generator (seeded
with header.json's seed), all starting from the same values.

Serve protocol (one command per line on stdin, one answer line on stdout;
VARIANT is naive or suffstats, naive when left out):
    check VARIANT -> JSON with elbo, loglik, kl_p, kl_w at the initial
                     parameters and the noise from Go; the gradients of the
                     ELBO with respect to X, mu, rho are written to
                     DIR/grad_VARIANT_{X,mu,rho}.f64
    step VARIANT  -> JSON with the wall and CPU seconds of one step
    quit          -> exit
The first line printed is {"ready": true, "torch": version, "threads": n,
"blas": [paths of the BLAS libraries mapped]},
or {"error": ...} (exit status 3) when torch cannot be imported.
"""

import json
import math
import os
import statistics
import sys
import time


# The shared Sinkhorn loop lives in benchmarks/internal/torchref.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal"))
from torchref.proto import blas_libraries, import_error, reply  # noqa: E402 (needs the path above)
try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torchref.sinkhorn import log_sinkhorn
except ImportError as e:  # reported to the Go side, which times Go alone
    import_error(e)

EULER_GAMMA = 0.57721566490153286060651209008240243
VARIANTS = ("naive", "suffstats")


def load(dir_, header, name):
    spec = header["arrays"][name]
    a = np.fromfile(os.path.join(dir_, spec["file"]), dtype="<f8")
    return torch.from_numpy(a.reshape(spec["shape"]).copy())


class Problem:
    """The data, masks and settings that the variants share."""

    def __init__(self, dir_):
        with open(os.path.join(dir_, "header.json")) as f:
            h = json.load(f)
        self.dir = dir_
        self.h = h
        self.threads = h["threads"]
        torch.set_num_threads(self.threads)
        self.seed = h["seed"]
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
        self.ll_const = 0.5 * self.worms * (self.T - 1) * self.n * math.log(2 * math.pi * self.eta2)
        r = self.tau_prior / self.tau
        self.kl_r = r
        self.kl_c = math.log(self.tau / self.tau_prior) - 1 + EULER_GAMMA * (r - 1)
        self.kl_lg = math.lgamma(1 + r)
        self._stats = None

    def stats(self):
        """Sxx, Syx (worms, N, N) and tr Syy (worms,), computed on first use."""
        if self._stats is None:
            prev, nxt = self.y[:, :-1], self.y[:, 1:]
            sxx = prev.transpose(1, 2) @ prev
            syx = nxt.transpose(1, 2) @ prev
            tr_yy = (nxt * nxt).sum(dim=(1, 2))
            self._stats = (sxx, syx, tr_yy)
        return self._stats


class Reference:
    """One variant's parameters, optimizer and step."""

    def __init__(self, prob, variant):
        if variant not in VARIANTS:
            raise ValueError("unknown variant %r (want one of %s)" % (variant, ", ".join(VARIANTS)))
        self.prob = prob
        self.variant = variant
        h = prob.h
        self.x = load(prob.dir, h, "X0").requires_grad_()
        self.mu = load(prob.dir, h, "mu0").requires_grad_()
        self.rho = load(prob.dir, h, "rho0").requires_grad_()
        self.opt = torch.optim.Adam([self.x, self.mu, self.rho], lr=prob.lr)
        self.gen = torch.Generator().manual_seed(prob.seed)
        if variant == "suffstats":
            prob.stats()  # computed once, outside the timed steps
            self.loglik = self.loglik_suffstats
        else:
            self.loglik = self.loglik_naive

    def loglik_naive(self, p, wd):
        pr = self.prob
        ll = 0.0
        for j in range(pr.worms):
            a = p[j] @ wd @ p[j].T
            y = pr.y[j]
            res = y[1:] - y[:-1] @ a.T
            ll = ll - 0.5 / pr.eta2 * (res * res).sum()
        return ll - pr.ll_const

    def loglik_suffstats(self, p, wd):
        pr = self.prob
        sxx, syx, tr_yy = pr.stats()
        a = p @ wd @ p.transpose(1, 2)  # (worms, N, N)
        cross = (a * syx).sum()
        quad = ((a @ sxx) * a).sum()
        return -0.5 / pr.eta2 * (tr_yy.sum() - 2 * cross + quad) - pr.ll_const

    def elbo(self, gumbel, eps):
        """ELBO of one sample; returns (elbo, loglik, kl_p, kl_w)."""
        pr = self.prob
        z = (self.x + gumbel) / pr.tau
        z = z.masked_fill(~pr.mask, -math.inf)
        p = torch.exp(log_sinkhorn(z, pr.iters))
        sigma = F.softplus(self.rho)
        w = self.mu + sigma * eps
        wd = torch.zeros(pr.n, pr.n, dtype=torch.float64).index_put((pr.rows, pr.cols), w)
        ll = self.loglik(p, wd)
        xa = self.x[pr.mask]
        r = pr.kl_r
        kl_p = (pr.kl_c + r * xa + torch.exp(pr.kl_lg - r * xa)).sum()
        v = pr.sigma_w ** 2
        kl_w = ((sigma * sigma + self.mu * self.mu) / (2 * v) - torch.log(sigma)).sum() \
            + pr.e * (math.log(pr.sigma_w) - 0.5)
        return ll - kl_p - kl_w, ll, kl_p, kl_w

    def check(self):
        """The ELBO and its gradient at the current parameters with Go's
        noise; the gradients go to DIR/grad_VARIANT_{X,mu,rho}.f64."""
        pr = self.prob
        gumbel = load(pr.dir, pr.h, "check_gumbel")
        eps = load(pr.dir, pr.h, "check_eps")
        self.opt.zero_grad(set_to_none=True)
        elbo, ll, kl_p, kl_w = self.elbo(gumbel, eps)
        elbo.backward()
        grads = {}
        for name, t in (("X", self.x), ("mu", self.mu), ("rho", self.rho)):
            grads[name] = t.grad.detach().clone()
            t.grad.numpy().astype("<f8").tofile(
                os.path.join(pr.dir, "grad_%s_%s.f64" % (self.variant, name)))
        self.opt.zero_grad(set_to_none=True)
        out = {"elbo": elbo.item(), "loglik": ll.item(), "kl_p": kl_p.item(), "kl_w": kl_w.item()}
        return out, grads

    def step(self):
        """One ELBO gradient step with fresh noise."""
        pr = self.prob
        u = torch.rand(pr.worms, pr.n, pr.n, dtype=torch.float64, generator=self.gen)
        u.clamp_(min=torch.finfo(torch.float64).tiny)
        gumbel = -torch.log(-torch.log(u))
        eps = torch.randn(pr.e, dtype=torch.float64, generator=self.gen)
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
    refs = {}

    def ref(name):
        if name not in refs:
            refs[name] = Reference(prob, name)
        return refs[name]

    reply({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads(), "blas": blas_libraries(torch)})
    for line in sys.stdin:
        words = line.split()
        cmd = words[0] if words else ""
        if cmd == "quit":
            return
        if len(words) > 2:
            reply({"error": "bad command %r" % line.strip()})
            continue
        variant = words[1] if len(words) == 2 else "naive"
        try:
            if cmd == "check":
                out, _ = ref(variant).check()
            elif cmd == "step":
                wall, cpu = ref(variant).timed_step()
                out = {"wall": wall, "cpu": cpu}
            else:
                out = {"error": "unknown command %r" % line.strip()}
        except ValueError as e:
            out = {"error": str(e)}
        reply(out)


def rel_diff(a, b):
    return (a - b).abs().max().item() / max(b.abs().max().item(), 1e-300)


def standalone(prob, variants, warmup=3, reps=10):
    refs = [Reference(prob, v) for v in variants]
    checks = []
    for r in refs:
        out, grads = r.check()
        checks.append((out, grads))
        print("check %s: %s" % (r.variant, json.dumps(out)))
    if len(refs) == 2:
        (o1, g1), (o2, g2) = checks
        print("%s against %s: ELBO %.2e relative; gradients (max abs diff / max abs) X %.2e, mu %.2e, rho %.2e" % (
            refs[1].variant, refs[0].variant, abs(o2["elbo"] - o1["elbo"]) / abs(o1["elbo"]),
            rel_diff(g2["X"], g1["X"]), rel_diff(g2["mu"], g1["mu"]), rel_diff(g2["rho"], g1["rho"])))
    for r in refs:
        for _ in range(warmup):
            r.step()
        walls = [r.timed_step()[0] for _ in range(reps)]
        print("torch %s, %s, %d threads: median %.1f ms/step over %d reps (min %.1f, max %.1f)" % (
            torch.__version__, r.variant, torch.get_num_threads(), 1e3 * statistics.median(walls), reps,
            1e3 * min(walls), 1e3 * max(walls)))


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit("usage: step_torch.py DIR [--serve | --variant naive|suffstats|both]")
    variants = list(VARIANTS)
    if "--variant" in args:
        i = args.index("--variant")
        if i + 1 >= len(args) or args[i + 1] not in VARIANTS + ("both",):
            sys.exit("--variant needs one of naive, suffstats, both")
        if args[i + 1] != "both":
            variants = [args[i + 1]]
    prob = Problem(args[0])
    if "--serve" in args[1:]:
        serve(prob)
    else:
        standalone(prob, variants)


if __name__ == "__main__":
    main()
