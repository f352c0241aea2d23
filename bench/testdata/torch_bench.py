"""PyTorch's figures for the workloads of bench_test.go, for the side-by-side table.

Runs on CUDA when PyTorch sees a GPU, else on the CPU (all its threads).
Prints a first line "device <description>", then one line per workload:
    <workload> <value> <unit>
with the workload named as bench_test.go's sub-benchmarks are without their
device ("MatMul/1024", "Add/16M", "TrainStep/cnn") and the unit one of
GFLOP/s, GB/s, µs/op, ms/step. Each figure is the mean over about
`seconds` (argv[1], default 0.3) of calls after two warm-up calls.
"""
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchpy"))
from blas import blas  # noqa: E402

cuda = torch.cuda.is_available()
dev = torch.device("cuda" if cuda else "cpu")
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3


def sync():
    if cuda:
        torch.cuda.synchronize()


def per_call(fn, each_sync):
    """Seconds per call of fn, synchronising after each call or only at the end."""
    for _ in range(2):
        fn()
    sync()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or n < 3:
        fn()
        if each_sync:
            sync()
        n += 1
    sync()
    return (time.perf_counter() - start) / n


def out(name, value, unit):
    print("%s %.6g %s" % (name, value, unit), flush=True)


def main():
    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    if cuda:
        print("device PyTorch %s CUDA, %s" % (torch.__version__, torch.cuda.get_device_name()), flush=True)
    else:
        print("device PyTorch %s CPU, %d threads, BLAS %s" % (torch.__version__, torch.get_num_threads(), blas()), flush=True)

    sizes = [256, 512, 1024, 2048] + ([4096] if cuda else [])
    for n in sizes:
        a, b = torch.rand(n, n, device=dev) * 2 - 1, torch.rand(n, n, device=dev) * 2 - 1
        out("MatMul/%d" % n, 2 * n**3 / per_call(lambda: a @ b, False) / 1e9, "GFLOP/s")
        if n == 4096:  # float16 operands and result (cuBLAS: tensor cores, float32 accumulation)
            h, k = a.half(), b.half()
            out("MatMul/4096/f16", 2 * n**3 / per_call(lambda: h @ k, False) / 1e9, "GFLOP/s")
    a, b = torch.rand(64, 128, 128, device=dev), torch.rand(64, 128, 128, device=dev)
    out("MatMul/batch64x128", 2 * 64 * 128**3 / per_call(lambda: torch.bmm(a, b), False) / 1e9, "GFLOP/s")

    for n, tag in ((1 << 20, "1M"), (1 << 24, "16M")):
        x, y = torch.rand(n, device=dev) * 2 - 1, torch.rand(n, device=dev) * 2 - 1
        out("Add/" + tag, 12 * n / per_call(lambda: x + y, True) / 1e9, "GB/s")
    n = 1 << 24
    x, y = torch.rand(n, device=dev) * 2 - 1, torch.rand(n, device=dev) * 2 - 1
    out("AddQueued/16M", 12 * n / per_call(lambda: x + y, False) / 1e9, "GB/s")
    for name, fn, bytes_ in (
        ("Exp", lambda: torch.exp(x), 8),
        ("Sigmoid", lambda: torch.sigmoid(x), 8),
        ("Gelu", lambda: F.gelu(x), 8),
        ("Pow", lambda: torch.pow(x, y), 12),
        ("Softmax", lambda: torch.softmax(x.view(-1, 1024), -1), 8),
        ("Sum", lambda: x.sum(), 4),
        ("Max", lambda: x.max(), 4),
    ):
        out(name + "/16M", bytes_ * n / per_call(fn, True) / 1e9, "GB/s")

    xn = x.view(-1, 1024)
    out("LayerNorm/16M", 8 * n / per_call(lambda: F.layer_norm(xn, (1024,)), True) / 1e9, "GB/s")
    xb = x.view(64, 64, 64, 64)
    out("BatchNorm/16M", 8 * n / per_call(lambda: F.batch_norm(xb, None, None, training=True), True) / 1e9, "GB/s")

    # Causal self-attention, forward and backward (q, k, v's gradients):
    # composed as a model writes it, and fused where PyTorch has it (2.0+).
    for bt, h, l, d in ((8, 8, 512, 64), (8, 8, 1024, 64)):
        q, k, v = (torch.rand(bt, h, l, d, device=dev, requires_grad=True) for _ in range(3))
        g = torch.rand(bt, h, l, d, device=dev)
        above = torch.triu(torch.ones(l, l, dtype=torch.bool, device=dev), 1)
        tag = "%d,%d,%d,%d" % (bt, h, l, d)

        def composed():
            s = (q @ k.transpose(-1, -2)) / d**0.5
            torch.autograd.grad(torch.softmax(s.masked_fill(above, float("-inf")), -1) @ v, (q, k, v), g)
        out("Attention/composed/" + tag, per_call(composed, True) * 1e3, "ms/step")
        if hasattr(F, "scaled_dot_product_attention"):
            def fused():
                torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), g)
            out("Attention/fused/" + tag, per_call(fused, True) * 1e3, "ms/step")

    x, y = torch.ones(64, device=dev), torch.zeros(64, device=dev)
    out("TinyOp/64", per_call(lambda: y.add_(x), False) * 1e6, "µs/op")
    out("Sync/64", per_call(lambda: y.add_(x), True) * 1e6, "µs/op")

    for name, batch in (("mlp", 128), ("cnn", 64)):
        if name == "mlp":
            net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
            x = torch.rand(batch, 784, device=dev)
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
        else:
            net = nn.Sequential(
                nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Dropout(0.25),
                nn.Linear(128, 10)).to(dev)
            x = torch.rand(batch, 1, 28, 28, device=dev)
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        labels = torch.arange(batch, device=dev) % 10

        def step():
            opt.zero_grad()
            F.cross_entropy(net(x), labels).backward()
            opt.step()
        ms = per_call(step, True) * 1e3
        out("TrainStep/" + name, ms, "ms/step")
        if name == "mlp":
            # BenchmarkMLPStep: the same step, its batch uploaded each time.
            host = torch.rand(batch, 784)
            hy = torch.arange(batch) % 10

            def upload_step():
                xb, yb = host.to(dev), hy.to(dev)
                opt.zero_grad()
                F.cross_entropy(net(xb), yb).backward()
                opt.step()
            out("MLPStep/128", per_call(upload_step, True) * 1e3, "ms/step")

    # BenchmarkGPTStep: examples/gpt's model at its defaults, batch 8 of
    # random bytes; loss, backward, clipping by global norm, AdamW.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "gpt"))
    from torch_gpt import GPT
    c = {"vocab": 256, "context": 128, "width": 128, "heads": 4, "layers": 4, "dropout": 0.0}
    net = GPT(c).to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=0.01)
    tokens = torch.randint(0, 256, (8, 129), device=dev)
    x, y = tokens[:, :-1], tokens[:, 1:]

    def gpt_step():
        loss = net.loss(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
    out("GPTStep", per_call(gpt_step, True) * 1e3, "ms/step")

    gpt2_bench()


def gpt2_bench():
    """BenchmarkGPT2: GPT-2 small (124 M parameters) with random weights
    in GPT-2's layout, batch 1, written out as transformers' GPT-2 computes
    it, with a key-value cache: the prefill of 128 tokens and one token a
    step after it, the last logits read back each step; float32 (and
    float16 on CUDA: PyTorch 1.13's CPU has no half-precision matmul)."""
    src = torch.empty(64 << 20, device=dev)
    dst = torch.empty_like(src)
    copy = per_call(lambda: dst.copy_(src), True)
    out("GPT2/CopyBandwidth", src.numel() * 4 / copy / 1e9, "GB/s")
    del src, dst
    for V, suffix in ((50257, ""), (16384, "Vocab16k")):
        gpt2_model(V, suffix)


def gpt2_model(V, suffix):
    P, E, L, H = 1024, 768, 12, 12
    D = E // H
    for dt in [torch.float32] + ([torch.float16] if cuda else []):
        g = torch.Generator().manual_seed(1)

        def u(*shape):
            return (torch.rand(*shape, generator=g) * 0.04 - 0.02).to(dev, dt)

        def one(n):
            return torch.ones(n, device=dev, dtype=dt)

        wte, wpe, lnfw, lnfb = u(V, E), u(P, E), one(E), u(E)
        blocks = [dict(ln1w=one(E), ln1b=u(E), aw=u(E, 3 * E), ab=u(3 * E), pw=u(E, E), pb=u(E),
                       ln2w=one(E), ln2b=u(E), fw=u(E, 4 * E), fb=u(4 * E), mw=u(4 * E, E), mb=u(E)) for _ in range(L)]
        weights = sum(t.numel() for t in [wte, lnfw, lnfb] + [t for b in blocks for t in b.values()]) * wte.element_size() + E * wte.element_size()

        @torch.no_grad()
        def step(ids, cache):
            t = ids.shape[0]
            start = cache[0][0].shape[1] if cache else 0
            x = wte[ids] + wpe[start:start + t]
            allow = torch.arange(start + t, device=dev)[None, :] <= (start + torch.arange(t, device=dev))[:, None]
            for i, b in enumerate(blocks):
                a = F.layer_norm(x, (E,), b["ln1w"], b["ln1b"], 1e-5)
                q, k, v = (z.view(t, H, D).transpose(0, 1) for z in torch.addmm(b["ab"], a, b["aw"]).split(E, 1))
                if len(cache) > i:
                    k, v = torch.cat((cache[i][0], k), 1), torch.cat((cache[i][1], v), 1)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
                att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
                att = torch.softmax(att.masked_fill(~allow, float("-inf")), -1)
                o = (att @ v).transpose(0, 1).reshape(t, E)
                x = x + torch.addmm(b["pb"], o, b["pw"])
                m = F.layer_norm(x, (E,), b["ln2w"], b["ln2b"], 1e-5)
                x = x + torch.addmm(b["mb"], F.gelu(torch.addmm(b["fb"], m, b["fw"]), approximate="tanh"), b["mw"])
            x = F.layer_norm(x[-1:], (E,), lnfw, lnfb, 1e-5)
            return (x @ wte.T).float().cpu()

        prompt = (torch.arange(128, device=dev) * 389 + 7) % 16384
        name = "float32" if dt == torch.float32 else "float16"
        out("GPT2/Prefill128%s/%s" % (suffix, name), 128 / per_call(lambda: step(prompt, []), True), "tokens/s")
        cache = []
        step(prompt, cache)
        state = {"cache": cache, "i": 0}

        def decode():
            if state["cache"][0][0].shape[1] == P:
                state["cache"] = []
                step(prompt, state["cache"])
            state["i"] += 1
            step(torch.tensor([(state["i"] * 7919 + 11) % V], device=dev), state["cache"])

        rate = 1 / per_call(decode, True)
        out("GPT2/Decode%s/%s" % (suffix, name), rate, "tokens/s")
        out("GPT2/Decode%s/%s/weights" % (suffix, name), weights * rate / 1e9, "GB/s")


if __name__ == "__main__":
    main()
