"""``python -m numgrad``: the seed tutorials' examples, run with ``import numgrad as torch``."""

import argparse
import importlib.util
import os
import sys


def section(title):
    print()
    print("=" * 78)
    print(title)
    print("=" * 78)


def tutorial(out_dir):
    import numgrad as torch
    from numgrad.autograd import Function

    torch.manual_seed(0)

    section("1. requires_grad, grad_fn and backward (x = ones(2, 2); out = mean(3 (x + 2)^2))")
    x = torch.ones(2, 2, requires_grad=True)
    print(x)
    y = x + 2
    print(y)
    print(y.grad_fn)
    z = y * y * 3
    out = z.mean()
    print(z, out)
    out.backward()
    print("x.grad =", x.grad, " # d(out)/dx = 3/2 (x + 2) = 4.5")

    section("2. a non-scalar output needs a gradient argument; retain_graph; accumulation")
    x = torch.ones(2, 2, requires_grad=True)
    z = (x + 2) * (x + 2) * 3
    z.backward(torch.tensor([[0.1, 1.0], [1.0, 1.0]]), retain_graph=True)
    print(x.grad)
    z.mean().backward()
    print(x.grad, " # gradients accumulate across backward calls")
    try:
        (x * 2).backward()
    except RuntimeError as e:
        print("RuntimeError:", e)

    section("3. the graph: z = x**2 + y**3, next_functions and AccumulateGrad.variable")
    x = torch.rand(5, 5, requires_grad=True)
    y = torch.rand(5, 5, requires_grad=True)
    z = x ** 2 + y ** 3
    print(z)
    print("x.is_leaf =", x.is_leaf, " z.is_leaf =", z.is_leaf)
    print(z.grad_fn)
    print(z.grad_fn.next_functions)
    xg = z.grad_fn.next_functions[0][0]
    x_leaf = xg.next_functions[0][0]
    print(type(x_leaf))
    print("x_leaf.variable is x:", x_leaf.variable is x)
    print("picture of this graph:", draw_graph(z, {"x": x, "y": y}, out_dir))
    z.backward(torch.ones_like(x))
    print(x.grad)
    with torch.no_grad():
        print("inside no_grad, (x + y * 2).requires_grad =", (x + y * 2).requires_grad)

    section("4. autograd.grad and hooks for the gradient of a non-leaf")
    x = torch.ones(3, requires_grad=True)
    w = torch.rand(3, requires_grad=True)
    y = x * w
    z = y.sum()
    print(torch.autograd.grad(z, y))
    print(torch.autograd.grad(z, x))
    y = x * w
    handle = y.register_hook(lambda grad: print("y's gradient:", grad))
    y.sum().backward()
    handle.remove()

    section("5. a custom Function with ctx (MulConstant)")

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    a = torch.rand(3, 3, requires_grad=True)
    b = MulConstant.apply(a, 5)
    print("a:" + str(a))
    print("b:" + str(b))
    b.backward(torch.ones_like(a))
    print(a.grad)

    section("6. y = x^2 e^x: autograd against the hand-written derivative 2x e^x + x^2 e^x")
    x = torch.randn(3, 4, requires_grad=True)
    y = x ** 2 * torch.exp(x)
    y.backward(torch.ones(y.size()))
    print(x.grad)
    print(2 * x.detach() * torch.exp(x.detach()) + x.detach() ** 2 * torch.exp(x.detach()))


def draw_graph(z, params, out_dir):
    """Render the graph to PNG (Graphviz's dot, else matplotlib's drawing), else its DOT text."""
    from numgrad.viz import make_dot
    dot = make_dot(z, params=params)
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, "z_graph")
    try:
        return os.path.abspath(dot.render(base, format="png"))
    except RuntimeError as e:
        path = os.path.abspath(dot.save(base + ".dot"))
        return f"{path} (DOT source; {e})"


def learn(out_dir, epochs=None):
    """Train the MLP and the CNN of examples/digits.py and plot their curves."""
    missing = [m for m in ("sklearn", "matplotlib", "tqdm") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"skipping the training demo: it needs {', '.join(missing)} "
              '(pip install "numgrad[demo]")')
        return None
    from numgrad.examples import digits
    return digits.main(["--out", out_dir] + (["--epochs", str(epochs)] if epochs else []))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m numgrad", description=__doc__)
    parser.add_argument("--out", default="numgrad-demo",
                        help="folder for the pictures the demo writes (default: ./numgrad-demo)")
    parser.add_argument("--skip-training", action="store_true",
                        help="only the tutorial part, not the digits training")
    parser.add_argument("--epochs", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    tutorial(args.out)
    if not args.skip_training:
        section("7. learning: an MLP and a CNN on scikit-learn's digits (examples/digits.py)")
        learn(args.out, args.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
