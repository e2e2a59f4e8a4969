"""A function for ``multiprocessing.spawn`` tests, in a module that imports nothing heavy (a
spawned child imports the module of its function)."""

import os
import time


def rank_writes_or_raises(i, folder):
    """Rank 0 writes a file; rank 1 waits for it, then raises."""
    path = os.path.join(folder, f"rank{i}")
    if i == 0:
        with open(path + ".tmp", "w") as fh:
            fh.write(f"rank {i} of pid {os.getpid()}")
        os.replace(path + ".tmp", path)
        return
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(folder, "rank0")) and time.monotonic() < deadline:
        time.sleep(0.02)
    raise ValueError(f"boom in rank {i}")
