"""Train an MLP and a small CNN on scikit-learn's handwritten digits, with numgrad.

The code is what you would write for PyTorch: only the import differs.

    python examples/digits.py --model mlp
    python examples/digits.py --model cnn --epochs 30

Needs the demo extras: pip install "numgrad[demo]" (scikit-learn, matplotlib, tqdm).
"""

import argparse
import os
import time

import numgrad as torch
from numgrad import nn
from numgrad.utils.data import DataLoader, TensorDataset

SEED = 0
TEST_FRACTION = 0.25


def load_digits_split():
    """The 1,797 8x8 digits (bundled with scikit-learn, no download), split 75/25."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data / 16.0, digits.target, test_size=TEST_FRACTION, random_state=SEED,
        stratify=digits.target)
    to_x = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    return to_x(x_train), to_x(x_test), torch.tensor(y_train), torch.tensor(y_test)


def make_mlp():
    return nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, 10),
    )


def make_cnn():
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.3),
        nn.Linear(32 * 2 * 2, 10),
    )


class _NoBar:
    def update(self, n=1):
        pass

    def close(self, summary=None):
        if summary:
            print(summary)


class _TqdmBar:
    def __init__(self, desc, total):
        from tqdm import tqdm
        self.bar = tqdm(desc=desc, total=total, ncols=96, leave=True)

    def update(self, n=1):
        self.bar.update(n)

    def close(self, summary=None):
        if summary:
            self.bar.set_postfix_str(summary)
        self.bar.close()


def progress_bar(desc, total, quiet):
    """A tqdm bar per epoch when tqdm is installed, plain lines otherwise."""
    if quiet:
        return _NoBar()
    try:
        return _TqdmBar(desc, total)
    except ImportError:
        return _NoBar()


def evaluate(model, x, y, loss_fn):
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss = loss_fn(logits, y).item()
        accuracy = (logits.argmax(1) == y).float().mean().item()
    return loss, accuracy


def train(kind="mlp", epochs=None, batch_size=64, lr=None, quiet=False, device="cpu"):
    """Train one model; returns (model, history) with per-epoch losses and accuracies."""
    torch.manual_seed(SEED)
    x_train, x_test, y_train, y_test = load_digits_split()
    x_test, y_test = x_test.to(device), y_test.to(device)
    model = (make_mlp() if kind == "mlp" else make_cnn()).to(device)
    epochs = epochs or (40 if kind == "mlp" else 20)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr or 3e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(SEED))
    history = {"train_loss": [], "test_loss": [], "test_acc": []}
    for epoch in range(epochs):
        model.train()
        bar = progress_bar(f"{kind} epoch {epoch + 1:2d}/{epochs}", len(loader), quiet)
        total, count = 0.0, 0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(yb)
            count += len(yb)
            bar.update()
        scheduler.step()
        test_loss, test_acc = evaluate(model, x_test, y_test, loss_fn)
        history["train_loss"].append(total / count)
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        bar.close(f"loss {total / count:.4f} test {test_loss:.4f} acc {100 * test_acc:.2f}%")
    return model, history


def plot(histories, path):
    """Loss and accuracy curves of each run, saved as a PNG (matplotlib, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, h in histories.items():
        ax_loss.plot(h["train_loss"], label=f"{name} train")
        ax_loss.plot(h["test_loss"], "--", label=f"{name} test")
        ax_acc.plot([100 * a for a in h["test_acc"]], label=name)
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss", yscale="log")
    ax_acc.set(xlabel="epoch", ylabel="test accuracy (%)", title="accuracy", ylim=(80, 100))
    for ax in (ax_loss, ax_acc):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle("numgrad on scikit-learn digits (25% held out)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--out", default=".", help="folder for the curves PNG")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args(argv)
    kinds = ["mlp", "cnn"] if args.model == "both" else [args.model]
    histories = {}
    for kind in kinds:
        start = time.perf_counter()
        _, history = train(kind, args.epochs, device=args.device)
        histories[kind] = history
        print(f"{kind}: final test accuracy {100 * history['test_acc'][-1]:.2f}% "
              f"({time.perf_counter() - start:.1f} s)")
    os.makedirs(args.out, exist_ok=True)
    path = plot(histories, os.path.join(args.out, "digits_curves.png"))
    print("loss and accuracy curves:", os.path.abspath(path))
    return histories


if __name__ == "__main__":
    main()
