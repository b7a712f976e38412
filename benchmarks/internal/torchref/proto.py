"""The line protocol between a Go benchmark harness and its PyTorch script,
without importing torch, so that a script can report a missing torch in
the protocol (see serve.py)."""

import json
import sys


def reply(obj):
    """Write obj as one JSON line on stdout and flush it."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def import_error(e):
    """Tell the Go side that torch cannot be imported and exit with status 3."""
    reply({"error": "cannot import torch/numpy/torchref: %s" % e})
    sys.exit(3)


def blas_libraries(torch):
    """The BLAS libraries mapped into this process after one float64 and one
    float32 product in torch, as a sorted list of paths. Debian's torch calls
    whatever libblas.so.3 the alternatives system points at; without
    libopenblas0 that is the reference BLAS, several times slower, and the
    Go side warns about it."""
    for dt in (torch.float64, torch.float32):
        a = torch.ones(64, 64, dtype=dt)
        torch.mm(a, a)
    found = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                name = path.rsplit("/", 1)[-1]
                if path.startswith("/") and ("blas" in name or "mkl_rt" in name or "blis" in name):
                    found.add(path)
    except OSError:
        return []
    return sorted(found)
