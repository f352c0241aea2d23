"""What the models' reference.py scripts share: writing tensors as
safetensors (F32, or BF16 for bfloat16 tensors), as transformers'
save_pretrained stores them."""

import json
import struct

import torch


def save(path, tensors):
    """safetensors, written out: a little-endian u64 header length, the
    JSON header (padded with spaces to 8 bytes), then the data."""
    header, data, off = {}, b"", 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            raw, dt = t.view(torch.int16).numpy().tobytes(), "BF16"
        else:
            raw, dt = t.numpy().tobytes(), "F32"
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        data, off = data + raw, off + len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def lora_adapter(shapes, r, seed):
    """PEFT LoRA weights for modules of shapes {name: (in, out)}: A [r, in]
    and B [out, r], both drawn (B too, so that a loaded adapter changes the
    output from the first step)."""
    g = torch.Generator().manual_seed(seed)
    return {name: (torch.randn(r, i, generator=g) * 0.3, torch.randn(o, r, generator=g) * 0.1)
            for name, (i, o) in sorted(shapes.items())}


def save_adapter(d, adapters, r, alpha, targets, fan_in_fan_out):
    """An adapter directory in PEFT's layout."""
    import os
    os.makedirs(d, exist_ok=True)
    tensors = {}
    for name, (a, b) in adapters.items():
        tensors[f"base_model.model.{name}.lora_A.weight"] = a.float()
        tensors[f"base_model.model.{name}.lora_B.weight"] = b.float()
    save(d + "/adapter_model.safetensors", tensors)
    with open(d + "/adapter_config.json", "w") as f:
        json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": alpha, "lora_dropout": 0.0,
                   "target_modules": targets, "fan_in_fan_out": fan_in_fan_out, "bias": "none",
                   "inference_mode": True, "base_model_name_or_path": "tiny"}, f, indent=2)


def train_lora(logits_of, adapters, rows, steps=5, lr=1e-2, wd=0.01):
    """AdamW steps (PyTorch's, float64) on the adapters only, on the
    next-token loss of rows; returns the losses before each step."""
    params = {n: (a.double().clone().requires_grad_(), b.double().clone().requires_grad_()) for n, (a, b) in adapters.items()}
    opt = torch.optim.AdamW([p for ab in params.values() for p in ab], lr=lr, weight_decay=wd)
    ids = torch.tensor(rows)
    x, y = ids[:, :-1], ids[:, 1:]
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = logits_of(x, params)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        losses.append(float(loss))
        loss.backward()
        opt.step()
    return losses
