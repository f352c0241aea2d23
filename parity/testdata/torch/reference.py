#!/usr/bin/env python3
"""Records PyTorch's values on the parity cases: reference.json.

Usage (make torch-reference):
    go test ./parity -run 'TestTorchReference$' -args -torch-cases=CASES.json
    python3 reference.py CASES.json reference.json

CASES.json lists the cases that parity.ReferenceCases selects, with the
values the parity suite draws for them: each op's inputs, attributes and
upstream gradient. For each case this script computes the op in float64
with PyTorch (torch.nn.functional, torch.optim, the GradScaler's kernels)
and its gradients by torch.autograd, and writes them with the case's hash,
which the parity tests check, so that stale values fail.

Where extensor's documented convention differs from PyTorch's, the
functions below apply the convention on PyTorch's values and say so: the
gradient of an elementwise op at NaN is NaN; sign(NaN) is NaN; gelu(−Inf)
is 0; pow's gradient for the exponent is 0 where the base is at most 0;
kl_div's for a target of 0 is 0; var's over a row holding ±Inf or NaN is
NaN; a cast's gradient is the upstream cast back at full precision. Where
PyTorch's own formula loses what extensor keeps (elu and celu near 0,
which it computes without expm1; softplus past βx = 709 with threshold
+Inf, which overflows), its torch.expm1 and softplus's limit x stand in
at those elements. Where
PyTorch has no counterpart or fails (attention's seeded dropout, which no
PyTorch generator draws; max_pool2d's windows wholly in the padding, past
whose buffers torch 1.13 writes), the case is recorded as skipped, with
the reason. Written against torch 1.13 (Debian's python3-torch).
"""

import json
import math
import os
import sys

import warnings

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
warnings.filterwarnings("ignore", message="reduction: 'mean' divides")
F64 = torch.float64


def num(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return -0.0 if math.copysign(1, x) < 0 else 0
    # float32 precision is what the comparisons use.
    return float("%.9g" % x)


def parse(v):
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return float(v)


def tensor_of(inp):
    vals = [parse(v) for v in inp["values"]]
    if inp["int"]:
        return torch.tensor([int(v) for v in vals], dtype=torch.int64).reshape(inp["shape"])
    t = torch.tensor(vals, dtype=F64).reshape(inp["shape"])
    if inp["grad"]:
        t.requires_grad_(True)
    return t


def fval(a, k, default=0.0):
    v = a.get(k, default) if a else default
    return parse(v) if v is not None else default


def red(a):
    r = (a or {}).get("Reduction", "mean")
    return r


def axes_of(a, rank):
    ax = (a or {}).get("Axes")
    if ax is None:
        return list(range(rank))
    return [x % rank if rank else x for x in ax]


def window(a, n=2):
    st = [s or 1 for s in a.get("Stride", [1, 1])][:n]
    pad = list(a.get("Padding", [0, 0]))[:n]
    dil = [d or 1 for d in a.get("Dilation", [1, 1])][:n]
    groups = a.get("Groups") or 1
    return st, pad, dil, groups


def reduce_op(f):
    def run(x, a):
        keep = bool((a or {}).get("Keepdims"))
        dims = axes_of(a, x.dim())
        if x.dim() == 0:
            return f(x, None, keep)
        return f(x, dims, keep)
    return run


def sum_op(x, dims, keep):
    return x.sum() if dims is None else x.sum(dim=dims, keepdim=keep)


def mean_op(x, dims, keep):
    return x.mean() if dims is None else x.mean(dim=dims, keepdim=keep)


def amax_op(x, dims, keep):
    # amax splits the gradient among ties, as extensor does.
    return x.amax() if dims is None else x.amax(dim=dims, keepdim=keep)


def amin_op(x, dims, keep):
    return x.amin() if dims is None else x.amin(dim=dims, keepdim=keep)


def arg(f):
    def run(x, a):
        a = a or {}
        if a.get("All") or x.dim() == 0:
            return f(x.reshape(-1), 0, False).reshape([]) if x.numel() else None
        return f(x, a.get("Axis", 0), bool(a.get("Keepdims")))
    return run


def argmax(x, dim, keep):
    # NaN counts as the largest, the first among ties: PyTorch's argmax.
    return torch.argmax(x, dim=dim, keepdim=keep)


def argmin(x, dim, keep):
    return torch.argmin(x, dim=dim, keepdim=keep)


def class_loss(logits):
    def run(x, target, *rest, a=None):
        a = a or {}
        kw = {"reduction": red(a)}
        if rest:
            kw["weight"] = rest[0].detach()
        if a.get("Ignore"):
            kw["ignore_index"] = a.get("IgnoreIndex", -100)
        if logits:
            kw["label_smoothing"] = fval(a, "LabelSmoothing")
            return F.cross_entropy(x, target, **kw)
        return F.nll_loss(x, target, **kw)
    return run


def squeeze(x, a):
    axes = (a or {}).get("Axes")
    if axes is None:
        return x.squeeze()
    for ax in sorted([ax % x.dim() for ax in axes], reverse=True):
        x = x.squeeze(ax)
    return x


def slice_op(x, a):
    idx = [slice(None)] * x.dim()
    # A step past the axis's length picks the start alone; PyTorch's
    # indexing overflows on steps near 2⁶³, so it gets the length.
    step = min(a["Step"] or 1, max(1, x.shape[a["Axis"]]))
    idx[a["Axis"]] = slice(a["Start"], a["Stop"], step)
    return x[tuple(idx)]


def pad_op(x, a):
    pads = []
    for before, after in reversed(a["Pads"]):
        pads += [before, after]
    return F.pad(x, pads, value=fval(a, "Value"))


def norm_shape(a):
    return list(a.get("Shape") or [])


def rms_norm(x, *w, a=None):
    dims = list(range(x.dim() - len(norm_shape(a)), x.dim()))
    y = x * torch.rsqrt((x * x).mean(dim=dims, keepdim=True) + fval(a, "Eps"))
    return y * w[0] if w else y


def layer_norm(x, *wb, a=None):
    w = wb[0] if len(wb) > 0 else None
    b = wb[1] if len(wb) > 1 else None
    return F.layer_norm(x, norm_shape(a), w, b, fval(a, "Eps"))


def batch_norm(x, *wb, a=None):
    w = wb[0] if len(wb) > 0 else None
    b = wb[1] if len(wb) > 1 else None
    return F.batch_norm(x, None, None, w, b, training=True, eps=fval(a, "Eps"))


def group_norm(x, *wb, a=None):
    w = wb[0] if len(wb) > 0 else None
    b = wb[1] if len(wb) > 1 else None
    return F.group_norm(x, a["Groups"], w, b, fval(a, "Eps"))


def attention(q, k, v, *mask, a=None):
    a = a or {}
    if fval(a, "Dropout") != 0:
        raise Skip("dropout is drawn from extensor's seeded hash, which no PyTorch generator reproduces")
    scale = fval(a, "Scale") or 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-1, -2) * scale
    if mask:
        m = mask[0]
        if a.get("BoolMask"):
            s = s.masked_fill(m.detach() == 0, -math.inf)
        else:
            s = s + m
    if a.get("Causal"):
        lq, lk = s.shape[-2], s.shape[-1]
        allowed = torch.ones(lq, lk, dtype=torch.bool).tril()
        if not (torch.isfinite(k.detach()[..., :, :]).all() and torch.isfinite(v.detach()).all()):
            raise Skip("special values at keys a causal query never sees: PyTorch's composed attention multiplies "
                       "them by a probability of 0 (NaN), where extensor's kernel, as a fused (flash) one, skips them")
        s = s.masked_fill(~allowed, -math.inf)
    return torch.softmax(s, dim=-1) @ v


def multi_head_attention(qkv, *mask, a=None):
    h = a["Heads"]
    e = qkv.shape[-1] // 3
    lead, n = list(qkv.shape[:-2]), qkv.shape[-2]

    def split(x):
        return x.reshape(lead + [n, h, e // h]).transpose(-3, -2)

    q, k, v = (split(t) for t in qkv.split(e, dim=-1))
    return attention(q, k, v, *mask, a=a).transpose(-3, -2).reshape(lead + [n, e])


def interpolate(x, a):
    shape = list(a["Shape"])
    lead = list(x.shape[:-2])
    y = x.reshape([-1, 1] + list(x.shape[-2:]))
    if a.get("Mode", "nearest") in ("", "nearest"):
        y = F.interpolate(y, size=shape, mode="nearest")
    else:
        y = F.interpolate(y, size=shape, mode="bilinear", align_corners=bool(a.get("AlignCorners")))
    return y.reshape(lead + shape)


def adaptive_avg(x, a):
    lead = list(x.shape[:-2])
    y = F.adaptive_avg_pool2d(x.reshape([-1, 1] + list(x.shape[-2:])), list(a["Shape"]))
    return y.reshape(lead + list(a["Shape"]))


def conv2d(x, w, *b, a=None):
    st, pad, dil, groups = window(a)
    if w.shape[0] == 0:
        raise Skip("PyTorch 1.13 refuses a weight of no output channels, of which extensor computes the empty output")
    return F.conv2d(x, w, b[0] if b else None, st, pad, dil, groups)


def conv1d(x, w, *b, a=None):
    st, pad, dil, groups = window(a, 1)
    return F.conv1d(x, w, b[0] if b else None, st, pad, dil, groups)


def conv_transpose2d(x, w, *b, a=None):
    st, pad, dil, groups = window(a)
    return F.conv_transpose2d(x, w, b[0] if b else None, st, pad, list(a.get("OutputPadding", [0, 0])), groups, dil)


def max_pool(x, a):
    st, pad, dil, _ = window(a)
    k = list(a["Kernel"])
    for ax in (0, 1):
        n = x.shape[2 + ax]
        outs = (n + 2 * pad[ax] - dil[ax] * (k[ax] - 1) - 1) // st[ax] + 1
        for i in range(outs):
            if all(not 0 <= i * st[ax] - pad[ax] + dil[ax] * j < n for j in range(k[ax])):
                raise Skip("PyTorch 1.13's max_pool2d writes past its buffers (glibc: free(): invalid next size) "
                           "where a dilated window lies wholly in the padding (extensor: −Inf)")
    return F.max_pool2d(x, list(a["Kernel"]), st, pad, dil)


def avg_pool(x, a):
    st, pad, _, _ = window(a)
    return F.avg_pool2d(x, list(a["Kernel"]), st, pad, count_include_pad=True)


def joined(first, ts):
    parts = ([first.reshape(1)] if first is not None else []) + [t.reshape(-1) for t in ts]
    return torch.cat(parts) if parts else torch.zeros(0)


def clip_value(*gs, a=None):
    ps = [torch.zeros_like(g, requires_grad=True) for g in gs]
    for p, g in zip(ps, gs):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_value_(ps, fval(a, "Limit"))
    return joined(None, [p.grad for p in ps])


def clip_norm(*gs, a=None):
    ps = [torch.zeros_like(g, requires_grad=True) for g in gs]
    for p, g in zip(ps, gs):
        p.grad = g.clone()
    norm = torch.nn.utils.clip_grad_norm_(ps, fval(a, "Limit"))
    return joined(norm, [p.grad for p in ps])


def optimizer(a, params):
    h = a["Hyper"]
    lr, wd = parse(h["LR"]), parse(h["WeightDecay"])
    if a["Optimizer"] == "SGD":
        return torch.optim.SGD(params, lr=lr, momentum=parse(h["Momentum"]), dampening=parse(h["Dampening"]),
                               nesterov=h["Nesterov"], weight_decay=wd)
    kind = torch.optim.AdamW if h["Decoupled"] else torch.optim.Adam
    return kind(params, lr=lr, betas=(parse(h["Beta1"]), parse(h["Beta2"])), eps=parse(h["Eps"]),
                weight_decay=wd, amsgrad=h["AMSGrad"])


def trajectory(*ins, a=None):
    # ins: parameters and their targets in turn, stepped by one optimiser;
    # the trajectories one after another, flattened, for more than one.
    ps = [p0.detach().clone().requires_grad_(True) for p0 in ins[0::2]]
    ys = ins[1::2]
    opt = optimizer(a, ps)
    snaps = [[] for _ in ps]
    for _ in range(10):
        for p, y in zip(ps, ys):
            p.grad = (p - y).detach()
        opt.step()
        for k, p in enumerate(ps):
            snaps[k].append(p.detach().clone())
    trajs = [torch.stack(s) if p.numel() <= 1 << 20 else s[-1] for p, s in zip(ps, snaps)]
    return trajs[0] if len(ps) == 1 else joined(None, trajs)


def scaled_trajectory(*ins, a=None):
    # torch.cuda.amp.GradScaler (init_scale 2¹⁶, growth 2, backoff ½,
    # interval 2) around the optimiser, steps 1 and 4 overflowing (the
    # first parameter's gradient). Its kernels,
    # _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_,
    # have no CPU build in torch 1.13: their semantics
    # (aten/src/ATen/native/cuda/AmpKernels.cu) are written out here.
    ps = [p0.detach().clone().requires_grad_(True) for p0 in ins[0::2]]
    ys = ins[1::2]
    opt = optimizer(a, ps)
    scale, growth, skipped = 65536.0, 0, 0
    snaps = [[] for _ in ps]
    for t in range(1, 7):
        gs = []
        for k, (p, y) in enumerate(zip(ps, ys)):
            g = (p - y).detach() * scale
            if k == 0 and t in (1, 4):
                g = g * math.inf
            gs.append(g * (1 / scale))
        found = 0.0 if all(bool(torch.isfinite(g).all()) for g in gs) else 1.0
        if found == 0:
            for p, g in zip(ps, gs):
                p.grad = g
            opt.step()
        else:
            skipped += 1
        if found:
            scale, growth = scale * 0.5, 0
        else:
            growth += 1
            if growth == 2:
                scale, growth = scale * 2.0, 0
        for k, p in enumerate(ps):
            snaps[k].append(p.detach().clone())
    trajs = [torch.stack(s) if p.numel() <= 1 << 20 else s[-1] for p, s in zip(ps, snaps)]
    # update() starts the next step's record of Inf and NaN afresh.
    state = [0.0, float(growth), float(skipped)]
    return torch.cat([t.reshape(-1) for t in trajs] + [torch.tensor([scale] + state + [float(skipped)])])


def sgd(w, g, a=None):
    p = w.detach().clone().requires_grad_(True)
    p.grad = g.detach().clone()
    torch.optim.SGD([p], lr=fval(a, "LR")).step()
    return p.detach()


def scatter_add(x, idx, src, a=None):
    # Only src's elements within idx's shape are added; torch 1.13's
    # backward fails on a larger src, so it gets that part alone.
    used = src[tuple(slice(0, n) for n in idx.shape)]
    return x.scatter_add((a or {}).get("Axis", 0), idx, used)


def hardswish(x):
    # One element at a time: torch 1.13's vectorised loop takes the
    # gradient at x = 3 as 1 and its scalar loop as x/3 + ½ = 1.5
    # (extensor's); a one-element tensor takes the scalar loop.
    flat = x.reshape(-1)
    parts = [F.hardswish(flat[i:i + 1]) for i in range(flat.numel())]
    return (torch.cat(parts) if parts else flat * 0).reshape(x.shape)


def elu(x, alpha, celu=False):
    # PyTorch 1.13's elu and celu compute eˣ − 1 without expm1: 0 for x =
    # −1e-30, where extensor keeps x (its near-0 cases check relative
    # accuracy). There the script takes alpha·expm1(x/alpha), torch's
    # expm1; elsewhere torch's elu and celu.
    f = F.celu(x, alpha) if celu else F.elu(x, alpha)
    tiny = (x < 0) & (x > -1e-15)
    if not tiny.any():
        return f
    safe = torch.where(tiny, x, torch.zeros_like(x))  # no 0·Inf in the other branch's gradient
    return torch.where(tiny, alpha * torch.expm1(safe / alpha if celu else safe), f)


def softplus(x, a=None):
    # With threshold +Inf PyTorch computes ln(1 + e^(βx)) as it stands:
    # +Inf, and a NaN gradient, past βx = 709. There the script takes x,
    # softplus's value to float64's precision (and PyTorch's own form past
    # a finite threshold); elsewhere torch's softplus.
    beta, threshold = fval(a, "Beta"), fval(a, "Threshold")
    big = beta * x.detach() > 700
    if not (math.isinf(threshold) and big.any()):
        return F.softplus(x, beta, threshold)
    return torch.where(big, x, F.softplus(torch.where(big, torch.zeros_like(x), x), beta, threshold))


def pow_scalar(x, a=None):
    e = fval(a, "Exponent")
    if abs(e) == 0.5 and not torch.isfinite(x).all():
        raise Skip("PyTorch computes x^±0.5 through √x: NaN at −Inf, where IEEE pow (extensor's) gives +Inf, "
                   "and a gradient of −Inf·g at −0")
    return torch.pow(x, e)


def sign(x):
    # extensor: NaN at NaN, as NumPy (PyTorch gives 0).
    return torch.where(torch.isnan(x), x, torch.sign(x))


def cast(x, a):
    dt = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}[a["DType"]]
    return x.to(dt)


def arange(x, a):
    start, stop, step = fval(a, "Start"), fval(a, "Stop"), fval(a, "Step")
    if x.dtype == torch.int64:
        return torch.arange(int(start), int(stop), int(step))
    return torch.arange(start, stop, step, dtype=torch.float32)


def mse(p, t, a=None):
    return F.mse_loss(p, t, reduction=red(a))


def bce(p, t, a=None):
    # extensor clamps p to [2⁻²⁴, 1 − 2⁻²⁴]; PyTorch clamps ln p at −100.
    eps = 2.0 ** -24
    pc = p.clamp(eps, 1 - eps)
    if not ((p >= 0) & (p <= 1)).all():
        raise Skip("PyTorch refuses probabilities outside [0, 1], NaN and ±Inf among them")
    return F.binary_cross_entropy(pc, t, reduction=red(a))


def huber(p, t, a=None):
    return F.huber_loss(p, t, reduction=red(a), delta=fval(a, "Delta"))


def smooth_l1(p, t, a=None):
    return F.smooth_l1_loss(p, t, reduction=red(a), beta=fval(a, "Delta"))


def kl_div(x, t, a=None):
    return F.kl_div(x, t, reduction=red(a), log_target=bool((a or {}).get("LogTarget")))


def var(x, a, std=False):
    a = a or {}
    dims = axes_of(a, x.dim())
    f = torch.std if std else torch.var
    if x.dim() == 0:
        return f(x.reshape(1), dim=0, correction=int(fval(a, "Correction")))
    return f(x, dim=dims, correction=int(fval(a, "Correction")), keepdim=bool(a.get("Keepdims")))


def logsumexp(x, a):
    a = a or {}
    if x.dim() == 0:
        return x.clone()
    return torch.logsumexp(x, dim=axes_of(a, x.dim()), keepdim=bool(a.get("Keepdims")))


def cumsum(x, a):
    a = a or {}
    if x.dim() == 0:
        return x.clone()
    ax = a.get("Axis", 0)
    if a.get("Reverse"):
        return torch.flip(torch.cumsum(torch.flip(x, [ax]), ax), [ax])
    return torch.cumsum(x, ax)


def prelu(x, w):
    return torch.where(x > 0, x, x * (w if w.dim() == 0 or x.dim() < 2 else w.reshape([-1] + [1] * (x.dim() - 2))))


def unary(f):
    return lambda x, a=None: f(x)


def binary(f):
    return lambda x, y, a=None: f(x, y)


class Skip(Exception):
    pass


OPS = {
    "add": binary(torch.add),
    "sub": binary(torch.sub),
    "mul": binary(torch.mul),
    "div": binary(torch.div),
    "pow": binary(torch.pow),
    "floor_divide": binary(lambda x, y: torch.div(x, y, rounding_mode="floor")),
    "mod": binary(torch.remainder),
    "neg": unary(torch.neg),
    "exp": unary(torch.exp),
    "log": unary(torch.log),
    "log2": unary(torch.log2),
    "log10": unary(torch.log10),
    "sqrt": unary(torch.sqrt),
    "abs": unary(torch.abs),
    "sign": unary(sign),
    "sin": unary(torch.sin),
    "cos": unary(torch.cos),
    "clip": lambda x, a=None: torch.clamp(x, fval(a, "Lo"), fval(a, "Hi")),
    "ceil": unary(torch.ceil),
    "floor": unary(torch.floor),
    "round": unary(torch.round),
    "trunc": unary(torch.trunc),
    "maximum": binary(torch.maximum),
    "minimum": binary(torch.minimum),
    "relu": unary(torch.relu),
    "leaky_relu": lambda x, a=None: F.leaky_relu(x, fval(a, "Slope")),
    "prelu": binary(prelu),
    "sigmoid": unary(torch.sigmoid),
    "tanh": unary(torch.tanh),
    "gelu": unary(lambda x: torch.where(x == -math.inf, torch.zeros_like(x), F.gelu(x))),
    "gelu_tanh": unary(lambda x: torch.where(x == -math.inf, torch.zeros_like(x), F.gelu(x, approximate="tanh"))),
    "ndtr": unary(torch.special.ndtr),
    "silu": unary(F.silu),
    "softplus": softplus,
    "elu": lambda x, a=None: elu(x, fval(a, "Alpha")),
    "celu": lambda x, a=None: elu(x, fval(a, "Alpha"), celu=True),
    "hardswish": unary(hardswish),
    "mish": unary(F.mish),
    "pow_scalar": pow_scalar,
    "softmax": lambda x, a=None: torch.softmax(x, (a or {}).get("Axis", 0)) if x.dim() else torch.softmax(x, 0),
    "log_softmax": lambda x, a=None: torch.log_softmax(x, (a or {}).get("Axis", 0)) if x.dim() else torch.log_softmax(x, 0),
    "sum": reduce_op(sum_op),
    "mean": reduce_op(mean_op),
    "max": reduce_op(amax_op),
    "min": reduce_op(amin_op),
    "argmax": arg(argmax),
    "argmin": arg(argmin),
    "mse": mse,
    "bce": bce,
    "bce_with_logits": lambda x, t, a=None: F.binary_cross_entropy_with_logits(x, t, reduction=red(a)),
    "cross_entropy": class_loss(True),
    "nll": class_loss(False),
    "matmul": binary(torch.matmul),
    "dot": binary(torch.dot),
    "outer": binary(torch.outer),
    "transpose": lambda x, a=None: x.permute(list(reversed(range(x.dim())))).clone(),
    "permute": lambda x, a=None: x.permute(list(a["Perm"] or [])),
    "slice": slice_op,
    "pad": pad_op,
    "concat": lambda *xs, a=None: torch.cat(xs, (a or {}).get("Axis", 0)),
    "stack": lambda *xs, a=None: torch.stack(xs, (a or {}).get("Axis", 0)),
    "reshape": lambda x, a=None: x.reshape(a["Shape"]),
    "squeeze": squeeze,
    "unsqueeze": lambda x, a=None: x.unsqueeze((a or {}).get("Axis", 0)),
    "flatten": lambda x, a=None: torch.flatten(x, (a or {}).get("Start", 0), (a or {}).get("End", 0)),
    "broadcast_to": lambda x, a=None: torch.broadcast_to(x, a["Shape"]),
    "sum_to": lambda x, a=None: x.sum_to_size(a["Shape"]) if a["Shape"] else x.sum(),
    "cast": cast,
    "linear": lambda x, w, *b, a=None: F.linear(x, w, b[0] if b else None),
    "conv2d": conv2d,
    "embedding": lambda idx, table, a=None: F.embedding(idx, table),
    "max_pool2d": max_pool,
    "avg_pool2d": avg_pool,
    "clip_grad_value": clip_value,
    "clip_grad_norm": clip_norm,
    "sgd_momentum": trajectory,
    "adam": trajectory,
    "loss_scaling": scaled_trajectory,
    "sgd": sgd,
    "huber": huber,
    "smooth_l1": smooth_l1,
    "kl_div": kl_div,
    "conv1d": conv1d,
    "var": lambda x, a=None: var(x, a),
    "std": lambda x, a=None: var(x, a, std=True),
    "logsumexp": logsumexp,
    "cumsum": cumsum,
    "layer_norm": layer_norm,
    "rms_norm": rms_norm,
    "batch_norm": batch_norm,
    "group_norm": group_norm,
    "where": lambda c, x, y, a=None: torch.where(c.detach() != 0, x, y),
    "masked_fill": lambda x, m, a=None: x.masked_fill(m.detach() != 0, fval(a, "Value")),
    "tril": lambda x, a=None: torch.tril(x, (a or {}).get("Diagonal", 0)),
    "triu": lambda x, a=None: torch.triu(x, (a or {}).get("Diagonal", 0)),
    "index_select": lambda x, idx, a=None: torch.index_select(x, (a or {}).get("Axis", 0), idx),
    "one_hot": lambda idx, a=None: F.one_hot(idx, a["Classes"]),
    "arange": arange,
    "scaled_dot_product_attention": attention,
    "multi_head_attention": multi_head_attention,
    "interpolate": interpolate,
    "adaptive_avg_pool2d": adaptive_avg,
    "gather": lambda x, idx, a=None: torch.gather(x, (a or {}).get("Axis", 0), idx),
    "scatter_add": scatter_add,
    "conv_transpose2d": conv_transpose2d,
}


# The elementwise ops whose gradient at NaN PyTorch takes as finite
# (relu's, the roundings' 0): extensor's is NaN, every elementwise op's.
# (pow_scalar's x⁰ excepted: 1, gradient 0, NaN included).
NAN_GRAD = {"neg", "abs", "sign", "clip", "ceil", "floor", "round", "trunc", "relu", "leaky_relu", "hardswish", "pow_scalar"}


def gradients(op, ins, out, upstream):
    """The gradient of each input for the upstream gradient, extensor's
    documented conventions applied where they differ from PyTorch's."""
    wants = [t for t in ins if t.requires_grad]
    grads = [None] * len(ins)
    if not wants:
        return grads
    g = torch.tensor(upstream, dtype=F64).reshape(out.shape)
    if op == "cast":
        # PyTorch's gradient of a cast is the upstream cast back, and has
        # the output's dtype, float16 here: the parity suite's upstream is
        # float64, which extensor casts back as it is.
        return [g.to(ins[0].dtype)]
    g = g.to(out.dtype)
    if out.requires_grad:
        got = torch.autograd.grad(out, wants, g, allow_unused=True)
    else:
        got = [None] * len(wants)
    k = 0
    for i, t in enumerate(ins):
        if t.requires_grad:
            grads[i] = got[k] if got[k] is not None else torch.zeros_like(t)
            k += 1
    if op == "pow" and grads[1] is not None:
        # extensor: ∂/∂b = 0 where a ≤ 0 (PyTorch: NaN below 0), element
        # by element before the sum over b's broadcast axes.
        a, b = torch.broadcast_tensors(ins[0].detach(), ins[1].detach())
        b = b.clone().requires_grad_(True)
        gb, = torch.autograd.grad(torch.pow(a, b), [b], g)
        grads[1] = torch.where(a <= 0, torch.zeros_like(gb), gb).sum_to_size(ins[1].shape)
    if op in NAN_GRAD and not (op == "pow_scalar" and fval(ins_attrs[0], "Exponent") == 0):
        x = ins[0].detach()
        grads[0] = torch.where(torch.isnan(x), x, grads[0])
    if op in ("gelu", "gelu_tanh"):
        # extensor: gelu(−Inf) = 0, its gradient 0 there and 1 at +Inf
        # (PyTorch: NaN, from −Inf·0).
        x = ins[0].detach()
        grads[0] = torch.where(x == -math.inf, torch.zeros_like(x), torch.where(x == math.inf, g, grads[0]))
    if op in ("var", "std"):
        # extensor's two-pass centring (a second mean corrects the first)
        # makes the gradient of a row holding ±Inf or NaN NaN; PyTorch's
        # x − mean gives ±Inf beside NaN.
        x = ins[0].detach()
        if x.dim() and x.numel():
            bad = (~torch.isfinite(x)).double().sum(dim=axes_of(ins_attrs[0], x.dim()), keepdim=True).expand(x.shape) > 0
            grads[0] = torch.where(bad, torch.full_like(x, math.nan), grads[0])
    if op == "kl_div" and grads[1] is not None and not ins_attrs[0].get("LogTarget"):
        # extensor: t·ln t is 0 at t = 0 and so is its gradient for t
        # (PyTorch: NaN).
        t = ins[1].detach()
        grads[1] = torch.where(t == 0, torch.zeros_like(t), grads[1])
    return grads


ins_attrs = [None]  # the case's attributes, for gradients


def record(case):
    op = case["op"]
    ins = [tensor_of(i) for i in case["inputs"]]
    a = case["attrs"]
    upstream = [parse(v) for v in case["upstream"]] if case["upstream"] is not None else None
    ins_attrs[0] = a
    entry = {"op": op, "case": case["case"], "hash": case["hash"]}
    try:
        out = OPS[op](*ins, a=a)
    except Skip as e:
        entry["skip"] = str(e)
        return entry
    if out is None:  # an empty argmax: nothing to compute
        out = torch.zeros(0)
    entry["out_shape"] = list(out.shape)
    entry["out"] = [num(v) for v in out.detach().double().reshape(-1).tolist()]
    if upstream is not None:
        entry["grads"] = [None if g is None else [num(v) for v in g.double().reshape(-1).tolist()]
                          for g in gradients(op, ins, out, upstream)]
    return entry


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        cases = json.load(f)
    out = []
    for c in cases:
        if os.environ.get("TRACE"):
            print("%s/%s" % (c["op"], c["case"]), file=sys.stderr, flush=True)
        try:
            out.append(record(c))
        except Exception as e:  # name the case, then fail
            print("%s/%s: %s" % (c["op"], c["case"], e), file=sys.stderr)
            raise
    with open(dst, "w") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in out))
        f.write("\n]\n")
    skipped = [e for e in out if "skip" in e]
    print("%d cases recorded, %d skipped, torch %s" % (len(out), len(skipped), torch.__version__))


if __name__ == "__main__":
    main()
