"""Per-sample gradients with ``vmap(grad(loss))`` and ``functional_call`` (the torch.func
recipe) in numgrad and PyTorch, interleaved in one process; median of rounds.

    python benchmarks/func_per_sample.py [--rounds 9] [--batch 64]

numgrad's ``vmap`` runs the function once per sample; PyTorch's has batching rules.
"""

import argparse
import time

import numpy as np


def build(lib, batch, d=32, h=64, c=10):
    if lib == "torch":
        import torch as T
        import torch.func as F
    else:
        import numgrad as T
        F = T.func
    T.manual_seed(0)
    rng = np.random.default_rng(0)
    model = T.nn.Sequential(T.nn.Linear(d, h), T.nn.ReLU(), T.nn.Linear(h, c))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = T.tensor(rng.standard_normal((batch, d)).astype(np.float32))
    t = T.tensor(rng.integers(0, c, batch))

    def loss(p, x, t):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        return T.nn.functional.cross_entropy(out, t.unsqueeze(0))
    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))
    return lambda: per_sample(params, x, t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    runs = {lib: build(lib, args.batch) for lib in ("numgrad", "torch")}
    ref = {lib: fn() for lib, fn in runs.items()}
    for k in ref["numgrad"]:
        err = np.abs(ref["numgrad"][k].numpy() - ref["torch"][k].numpy()).max()
        assert err < 1e-5, (k, err)
    times = {lib: [] for lib in runs}
    for _ in range(args.rounds):
        for lib, fn in runs.items():
            time.sleep(0.02)
            t0 = time.perf_counter()
            fn()
            times[lib].append(time.perf_counter() - t0)
    med = {lib: sorted(ts)[len(ts) // 2] for lib, ts in times.items()}
    print(f"per-sample gradients, MLP 32-64-10, batch {args.batch}: numgrad "
          f"{med['numgrad'] * 1e3:.1f} ms, PyTorch {med['torch'] * 1e3:.1f} ms, ratio "
          f"{med['numgrad'] / med['torch']:.1f}")


if __name__ == "__main__":
    main()
