"""The log-domain Sinkhorn operator in PyTorch, shared by the reference
scripts of the benchmark harnesses (benchmarks/sinkhorn, benchmarks/nn), so
that every comparison with permlab's relax.SinkhornVar runs the same loop.

For a batch z of shape (B, N, N), already divided by the temperature,

    log_sinkhorn(z, L):  L times, z -= logsumexp over each row (dim 2),
                         then z -= logsumexp over each column (dim 1)
    sinkhorn(z, L)    =  exp(log_sinkhorn(z, L))

which is the L-step operator S^L of Mena et al. (2018) with rows normalised
before columns, the order relax.Sinkhorn uses. Gradients are autograd's
through the loop. A script imports it with

    sys.path.insert(0, <benchmarks/internal, found from __file__>)
    from torchref.sinkhorn import sinkhorn
"""

import torch


def log_sinkhorn(z, iters):
    """Return log S^L(z) for z of shape (B, N, N), L = iters."""
    for _ in range(iters):
        z = z - torch.logsumexp(z, dim=2, keepdim=True)  # rows
        z = z - torch.logsumexp(z, dim=1, keepdim=True)  # columns
    return z


def sinkhorn(z, iters):
    """Return S^L(z) = exp(log S^L(z)) for z of shape (B, N, N), L = iters."""
    return torch.exp(log_sinkhorn(z, iters))
