"""Per-sample gradients with ``vmap(grad(loss))`` and ``functional_call`` (the torch.func
recipe) in numgrad and PyTorch, interleaved in one process; median of rounds.

    python benchmarks/func_per_sample.py [--rounds 9] [--batch 64]

Two models: an MLP 32-64-10 and a small CNN (conv 1->8 3x3, ReLU, conv 8->8 3x3 stride 2,
ReLU, flatten, linear to 10) on 12x12 inputs, cross-entropy. numgrad runs its batched path
(``numgrad/func/_batched.py``) and, for comparison, the loop it falls back to (the batched
path switched off); PyTorch has batching rules.
"""

import argparse
import time

import numpy as np


def mlp(T):
    return T.nn.Sequential(T.nn.Linear(32, 64), T.nn.ReLU(), T.nn.Linear(64, 10)), (32,)


def cnn(T):
    return T.nn.Sequential(T.nn.Conv2d(1, 8, 3), T.nn.ReLU(), T.nn.Conv2d(8, 8, 3, stride=2),
                           T.nn.ReLU(), T.nn.Flatten(), T.nn.Linear(8 * 4 * 4, 10)), (1, 12, 12)


def build(lib, arch, batch, c=10):
    if lib == "torch":
        import torch as T
        import torch.func as F
    else:
        import numgrad as T
        F = T.func
    T.manual_seed(0)
    rng = np.random.default_rng(0)
    model, shape = arch(T)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = T.tensor(rng.standard_normal((batch, *shape)).astype(np.float32))
    t = T.tensor(rng.integers(0, c, batch))

    def loss(p, x, t):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        return T.nn.functional.cross_entropy(out, t.unsqueeze(0))
    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))
    return lambda: per_sample(params, x, t)


def looped(fn):
    """``fn`` with numgrad's batched path switched off (vmap loops over the batch)."""
    from numgrad.func import _batched

    def run():
        orig = _batched.per_sample_grads
        _batched.per_sample_grads = lambda *a, **k: None
        try:
            return fn()
        finally:
            _batched.per_sample_grads = orig
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    for label, arch in (("MLP 32-64-10", mlp), ("CNN 1x12x12", cnn)):
        runs = {"numgrad": build("numgrad", arch, args.batch)}
        runs["numgrad loop"] = looped(runs["numgrad"])
        runs["torch"] = build("torch", arch, args.batch)
        ref = {lib: fn() for lib, fn in runs.items()}
        for lib in ("numgrad", "numgrad loop"):
            for k in ref[lib]:
                err = np.abs(ref[lib][k].numpy() - ref["torch"][k].numpy()).max()
                assert err < 1e-5, (lib, k, err)
        times = {lib: [] for lib in runs}
        for _ in range(args.rounds):
            for lib, fn in runs.items():
                time.sleep(0.02)
                t0 = time.perf_counter()
                fn()
                times[lib].append(time.perf_counter() - t0)
        med = {lib: sorted(ts)[len(ts) // 2] * 1e3 for lib, ts in times.items()}
        print(f"per-sample gradients, {label}, batch {args.batch}: numgrad "
              f"{med['numgrad']:.1f} ms (loop {med['numgrad loop']:.1f} ms), PyTorch "
              f"{med['torch']:.1f} ms, ratio {med['numgrad'] / med['torch']:.2f} (loop "
              f"{med['numgrad loop'] / med['torch']:.1f})")


if __name__ == "__main__":
    main()
