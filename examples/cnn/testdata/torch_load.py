"""Opens an extensor checkpoint of examples/cnn in PyTorch.

Usage: torch_load.py CHECKPOINT IO

Reads CHECKPOINT (the safetensors file that examples/cnn saves) following
the format's specification as the safetensors package checks it (an 8-byte
little-endian header length, a JSON header, data offsets that cover the
data exactly and in order), loads its parameters into the same network
built in PyTorch with load_state_dict(strict=True), runs that network in
evaluation mode on the images "x" of IO (another safetensors file) and
prints, as JSON, the largest difference from IO's "logits" (extensor's
output for the same images), the metadata and the names of the tensors.

The safetensors package is not installable on our machines (no PyPI, no
Debian package): internal/torchpy/safetensors_reader.py stands in for its
load_file.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "internal", "torchpy"))
from safetensors_reader import load_file  # noqa: E402


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(1600, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))


def main():
    tensors, metadata = load_file(sys.argv[1])
    io, _ = load_file(sys.argv[2])
    params = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    net = cnn()
    net.load_state_dict(params, strict=True)
    net.eval()
    with torch.no_grad():
        logits = net(io["x"])
    print(json.dumps({
        "max_diff": (logits - io["logits"]).abs().max().item(),
        "metadata": metadata,
        "params": sorted(params),
        "optim": sorted(k for k in tensors if k.startswith("optim.")),
    }))


if __name__ == "__main__":
    main()
