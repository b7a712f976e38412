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
