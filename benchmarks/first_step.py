"""One training step of a benchmark model in a fresh process: import, build (``models.py``,
the workloads' sizes), optimizer, forward, loss, backward, (GPT: gradient clipping) and
step. ``benchmarks/cold_start.py --model gpt|lstm|cnn|generate`` times it on a cold kernel
cache.

    python benchmarks/first_step.py numgrad|torch gpt|lstm|cnn|generate

gpt is row 8's model and step, lstm row 11's, cnn row 7's (two convolutions, SGD, batch 64);
generate is row 10's whole run (100 tokens from the GPT in eval mode, no_grad). The PyTorch
process imports no numgrad: each library builds its own model from the same seed.
"""

import os
import sys
import time

T0 = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))


def _gpt_step(m, workloads, models):
    F = m.nn.functional
    cfg = workloads.GPT_FULL
    model = models.gpt(m, vocab=workloads.VOCAB, attention="sdpa", **cfg)
    opt = models.gpt_optimizer(m, model)
    xs, ys = workloads._tokens(16, cfg["block_size"])
    x, y = m.tensor(xs), m.tensor(ys)

    def run():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()
    return run


def _lstm_step(m, workloads, models):
    F = m.nn.functional
    model = models.char_lstm(m, vocab=workloads.VOCAB, embed=64, hidden=256)
    opt = m.optim.Adam(model.parameters(), lr=2e-3)
    xs, ys = workloads._tokens(32, 64)
    x, y = m.tensor(xs), m.tensor(ys)

    def run():
        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, workloads.VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()
    return run


def _cnn_step(m, workloads, models):
    step = workloads.cnn_step("numgrad" if m.__name__ == "numgrad" else "torch")
    return lambda: step() or 0.0


def _generate(m, workloads, models):
    cfg = workloads.GPT_FULL
    model = models.gpt(m, vocab=workloads.VOCAB, attention="sdpa", **cfg)
    model.eval()
    idx = m.zeros((1, 1), dtype=m.long)
    g = m.Generator()

    def run():
        g.manual_seed(1337)
        out = idx
        with m.no_grad():
            for _ in range(100):
                context = out if out.size(1) <= cfg["block_size"] else out[:, -cfg["block_size"]:]
                probs = m.nn.functional.softmax(model(context)[:, -1, :], dim=-1)
                out = m.cat((out, m.multinomial(probs, 1, generator=g)), dim=1)
        return float(out.numpy().sum())  # a checksum that compiles no kernel of its own
    return run


MODELS = {"gpt": _gpt_step, "lstm": _lstm_step, "cnn": _cnn_step, "generate": _generate}


def main(lib, which):
    if which not in MODELS:
        raise SystemExit(f"model: one of {', '.join(MODELS)}, not {which!r}")
    sys.path.insert(0, HERE)
    import models
    import workloads
    m = workloads.module(lib)
    m.manual_seed(0)
    run = MODELS[which](m, workloads, models)
    built = time.perf_counter()
    value = run()
    print(f"result {value:.6f}; import and build {built - T0:.2f} s, "
          f"step {time.perf_counter() - built:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "gpt")
