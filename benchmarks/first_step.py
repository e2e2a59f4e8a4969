"""One training step of a benchmark model in a fresh process: import, build (``models.py``,
the workloads' sizes), optimizer, forward, loss, backward, (GPT: gradient clipping) and
step. ``benchmarks/cold_start.py --model gpt|lstm`` times it on a cold kernel cache.

    python benchmarks/first_step.py numgrad|torch gpt|lstm
"""

import os
import sys
import time

T0 = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))


def main(lib, which):
    sys.path.insert(0, HERE)
    import models
    import numpy as np
    import workloads
    m = workloads.module(lib)
    F = m.nn.functional
    m.manual_seed(0)
    if which == "gpt":
        cfg = workloads.GPT_FULL
        model = models.gpt(m, vocab=workloads.VOCAB, attention="sdpa", **cfg)
        opt = models.gpt_optimizer(m, model)
        batch, seq = 16, cfg["block_size"]
    elif which == "lstm":
        model = models.char_lstm(m, vocab=workloads.VOCAB, embed=64, hidden=256)
        opt = m.optim.Adam(model.parameters(), lr=2e-3)
        batch, seq = 32, 64
    else:
        raise SystemExit(f"model: gpt or lstm, not {which!r}")
    data = np.random.default_rng(0).integers(0, workloads.VOCAB, (batch, seq + 1))
    x, y = m.tensor(data[:, :-1]), m.tensor(data[:, 1:])
    built = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    loss.backward()
    if which == "gpt":
        m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"loss {loss.item():.6f}; import and build {built - T0:.2f} s, "
          f"step {time.perf_counter() - built:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "gpt")
