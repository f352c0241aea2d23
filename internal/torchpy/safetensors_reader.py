"""A reader of safetensors files, for the scripts that open extensor's
checkpoints in PyTorch: the safetensors package is not installable on our
machines (no PyPI, no Debian package), and this stands in for its
load_file. It follows the format's specification as the package checks
it: an 8-byte little-endian header length, a JSON header, data offsets
that cover the data exactly and in order.
"""
import json
import struct

import torch

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "F16": (torch.float16, 2), "I32": (torch.int32, 4)}


def load_file(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than the header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > 100_000_000 or 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} does not fit the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, end = {}, 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        dtype, size = DTYPES[e["dtype"]]
        start, stop = e["data_offsets"]
        count = 1
        for d in e["shape"]:
            count *= d
        if start != end or stop - start != count * size:
            raise ValueError(f"{path}: {name}: offsets {start}, {stop} for {count} elements after byte {end}")
        end = stop
        buf = bytearray(data[start:stop])
        t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(e["shape"])
    if end != len(data):
        raise ValueError(f"{path}: the tensors cover {end} of {len(data)} data bytes")
    return tensors, metadata
