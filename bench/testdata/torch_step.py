"""PyTorch's training step for the networks of BenchmarkTrainStep.

Prints one line per network and thread count:  <net> <threads> <ms per step>
The networks, batches and optimisers match bench_test.go's: the MLP of
examples/mlp (784-256-10, batch 128, SGD lr 0.1) and the CNN of examples/cnn
(batch 64, Adam lr 1e-3), on synthetic uniform inputs.
"""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Dropout(0.25),
        nn.Linear(128, 10))


def time_step(net, opt, x, y, seconds):
    def step():
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or n < 5:
        step()
        n += 1
    return (time.perf_counter() - start) * 1e3 / n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    torch.manual_seed(1)
    for threads in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        for name in ("mlp", "cnn"):
            if name == "mlp":
                net = mlp()
                x, opt = torch.rand(128, 784), torch.optim.SGD(net.parameters(), lr=0.1)
            else:
                net = cnn()
                x, opt = torch.rand(64, 1, 28, 28), torch.optim.Adam(net.parameters(), lr=1e-3)
            y = torch.arange(x.shape[0]) % 10
            print(name, threads, "%.3f" % time_step(net, opt, x, y, seconds), flush=True)


if __name__ == "__main__":
    main()
