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


def _step(name):
    """Row ``name`` of ``workloads.py`` (its model, sizes and step), as a function returning a
    number: the loss, or for generation a checksum of the tokens NumPy sums (no kernel of its
    own)."""
    def make(m, workloads):
        run = getattr(workloads, name)(m.__name__)

        def step():
            out = run()
            if out is None:  # the CNN step returns nothing
                return 0.0
            return float(out.numpy().sum()) if out.ndim else out.item()
        return step
    return make


MODELS = {"gpt": _step("gpt_step_sdpa"), "lstm": _step("lstm_step"), "cnn": _step("cnn_step"),
          "generate": _step("gpt_generate")}


def main(lib, which):
    if which not in MODELS:
        raise SystemExit(f"model: one of {', '.join(MODELS)}, not {which!r}")
    sys.path.insert(0, HERE)
    import workloads
    m = workloads.module(lib)
    run = MODELS[which](m, workloads)
    built = time.perf_counter()
    value = run()
    print(f"result {value:.6f}; import and build {built - T0:.2f} s, "
          f"step {time.perf_counter() - built:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "gpt")
