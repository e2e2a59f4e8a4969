"""numgrad.distributed, DistributedDataParallel and DistributedSampler.

The multi-process tests launch the scripts in tests/distributed/ with ``mpiexec -n 2`` (they
skip without mpi4py and mpiexec); ``run_mpi`` kills the whole launch (mpiexec, its proxy and
every rank) when it runs past its timeout. The in-process tests check what needs no world:
errors before ``init_process_group``, the bucket assignment, the engine's final callbacks
and the sampler against PyTorch's.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import numgrad
import numgrad.distributed as dist
from numgrad.nn.parallel import DistributedDataParallel
from numgrad.nn.parallel._reducer import assign_buckets
from numgrad.utils.data.distributed import DistributedSampler
from tests.conftest import requires_torch

HERE = pathlib.Path(__file__).parent / "distributed"
ROOT = pathlib.Path(__file__).parent.parent

try:
    import mpi4py  # noqa: F401
    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False

MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
requires_mpi = pytest.mark.skipif(not (HAVE_MPI4PY and MPIEXEC),
                                  reason="needs mpi4py and mpiexec (pip install mpi4py mpich)")


def _descendants(pid):
    """Every live process under ``pid`` (read from /proc; MPI launchers start new sessions)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for c in children.get(stack.pop(), ()):
            out.append(c)
            stack.append(c)
    return out


def _kill_tree(proc):
    pids = _descendants(proc.pid)
    for pid in [proc.pid, *pids]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def run_mpi(script, *args, n=2, timeout=60):
    """``mpiexec -n n python script args`` (``script`` a path under tests/distributed/, or
    ``-m module``); returns (returncode, output). On timeout every process of the launch is
    killed and ``subprocess.TimeoutExpired`` raised."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    target = [script] if script == "-m" else [str(HERE / script)]
    cmd = [MPIEXEC, "-n", str(n), sys.executable, *target, *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        raise
    return proc.returncode, out


# ---------------------------------------------------------------- multi-process (mpiexec)
@requires_mpi
def test_collectives_errors_ddp_sampler_on_two_ranks():
    rc, out = run_mpi("collectives.py")
    assert rc == 0 and "COLLECTIVES-OK" in out, out


@requires_mpi
@pytest.mark.parametrize("args", [(), ("--bucket-mb", "0.002", "--accumulate"),
                                  ("--as-view", "--bucket-mb", "0.002", "--accumulate"),
                                  ("--as-view", "--zero-grads")],
                         ids=["one-bucket", "small-buckets-no-sync", "bucket-views-no-sync",
                              "bucket-views-in-place"])
def test_ddp_two_ranks_match_one_process(args):
    rc, out = run_mpi("ddp_train.py", *args)
    assert rc == 0 and "DDP-OK" in out, out
    if "--bucket-mb" in args:
        assert "buckets [4, 2]" in out, out  # rebuilt in gradient order, 2 KiB limit


@requires_mpi
def test_documented_launch_command_trains_the_digits_example_on_two_ranks():  # docs/distributed.md
    pytest.importorskip("sklearn")
    code, out = run_mpi("-m", "numgrad.examples.digits_ddp", "--epochs", "2", timeout=240)
    assert code == 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith("mlp epoch")]
    assert len(lines) == 2 and all("2 ranks" in ln for ln in lines), out  # rank 0 prints
    accuracy = float(lines[-1].split("acc ")[1].split("%")[0])
    assert accuracy > 80.0, out


@requires_mpi
def test_ddp_without_allreduce_fails_the_comparison():
    rc, out = run_mpi("ddp_train.py", "--no-allreduce", "--steps", "2")
    assert rc != 0 and "DDP-MISMATCH" in out, out


@requires_mpi
def test_timed_out_launch_leaves_no_rank_running(tmp_path):
    pids = tmp_path / "pids"
    with pytest.raises(subprocess.TimeoutExpired):
        run_mpi("hang.py", pids, timeout=5)
    ranks = [int(p) for p in pids.read_text().split()]
    assert len(ranks) == 2
    time.sleep(0.2)
    for pid in ranks:
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


# ---------------------------------------------------------------- in process, no world
NOT_INIT = ("Default process group has not been initialized, please make sure to call "
            "init_process_group.")


@pytest.mark.parametrize("call", [
    lambda: dist.get_rank(), lambda: dist.get_world_size(), lambda: dist.barrier(),
    lambda: dist.all_reduce(numgrad.ones(2)), lambda: dist.broadcast(numgrad.ones(2), 0),
    lambda: dist.all_gather([numgrad.ones(2)], numgrad.ones(2)),
    lambda: DistributedDataParallel(numgrad.nn.Linear(2, 2)),
    lambda: DistributedSampler(range(4)),
], ids=["get_rank", "get_world_size", "barrier", "all_reduce", "broadcast", "all_gather", "ddp",
        "sampler"])
def test_before_init_raises_pytorchs_error(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value) == NOT_INIT


def test_destroy_without_group_and_names():
    with pytest.raises(AssertionError, match="^Process group cannot be None$"):
        dist.destroy_process_group()
    assert dist.is_available()
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    assert str(dist.ReduceOp.AVG) == "RedOpType.AVG"
    assert [int(getattr(dist.ReduceOp, n)) for n in ("SUM", "AVG", "PRODUCT", "MIN", "MAX")] \
        == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group(backend="nccl-x")
    assert not dist.is_initialized()


@requires_torch
def test_reduce_op_values_match_pytorch():
    import torch.distributed as tdist
    for name, member in tdist.ReduceOp.RedOpType.__members__.items():
        ours = getattr(dist.ReduceOp, name)
        assert int(ours) == int(member) and repr(ours) == repr(member) and str(ours) == str(member)


def _params(*sizes, dtype=np.float32):
    return [numgrad.from_numpy(np.zeros(s, dtype)) for s in sizes]


def test_bucket_assignment_follows_pytorchs_rules():
    mb = 1024 * 1024
    # 4-byte floats: 1 MiB is 262144 of them
    ps = _params(100, 262144, 10, 300000, 5)
    # no explicit order: param order, then sorted by first index
    assert assign_buckets(ps, None, [mb, 25 * mb]) == [[0, 1], [2, 3, 4]]
    assert assign_buckets(ps, None, [2 ** 62]) == [[0, 1, 2, 3, 4]]
    # explicit (gradient-ready) order: buckets in the order they close; first limit once
    assert assign_buckets(ps, [4, 3, 2, 1, 0], [mb, 25 * mb]) == [[4, 3], [2, 1, 0]]
    assert assign_buckets(ps, [4, 3, 2, 1, 0], [mb, mb]) == [[4, 3], [2, 1], [0]]
    # dtypes never share a bucket
    mixed = _params(4, 4) + _params(4, dtype=np.float64)
    assert assign_buckets(mixed, None, [2 ** 62]) == [[0, 1], [2]]


def test_queue_callback_runs_after_backward_before_it_returns():
    from numgrad.autograd import Variable
    engine = Variable._execution_engine
    with pytest.raises(RuntimeError, match="^Final callbacks can only be installed during "
                                           "backward pass.$"):
        engine.queue_callback(lambda: None)
    w = numgrad.ones(3, requires_grad=True)
    b = numgrad.ones(3, requires_grad=True)
    log = []

    def hook(p):
        log.append(("acc", p is w))
        if p is w:
            engine.queue_callback(lambda: log.append(("cb", w.grad is not None and
                                                      b.grad is not None)))
            engine.queue_callback(lambda: engine.queue_callback(lambda: log.append(("nested",))))
    w.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(hook)
    ((w * 2).sum() + (b * 3).sum()).backward()
    assert log[-2:] == [("cb", True), ("nested",)]
    assert sorted(log[:2]) == [("acc", False), ("acc", True)]
    log.clear()
    numgrad.autograd.grad((w * w).sum(), [w])  # no leaf accumulates: no callback queued
    assert log == []
    # after backward nothing can be queued any more
    with pytest.raises(RuntimeError):
        engine.queue_callback(lambda: None)


@requires_torch
@pytest.mark.parametrize("n", [0, 1, 5, 10, 11, 37])
@pytest.mark.parametrize("replicas", [1, 2, 3, 8])
def test_distributed_sampler_matches_pytorch(n, replicas):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for drop_last in (False, True):
        for shuffle in (False, True):
            for epoch in (0, 3):
                for rank in range(replicas):
                    ours = DistributedSampler(range(n), replicas, rank, shuffle, 7, drop_last)
                    ref = TorchSampler(range(n), replicas, rank, shuffle, 7, drop_last)
                    ours.set_epoch(epoch)
                    ref.set_epoch(epoch)
                    assert len(ours) == len(ref)
                    if n:
                        assert list(ours) == list(ref), (drop_last, shuffle, epoch, rank)


@requires_torch
@pytest.mark.parametrize("rank", [2, -1])
def test_distributed_sampler_rank_error_matches_pytorch(rank):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    with pytest.raises(ValueError) as want:
        TorchSampler(range(5), 2, rank)
    with pytest.raises(ValueError) as got:
        DistributedSampler(range(5), 2, rank)
    assert str(got.value) == str(want.value)


@requires_torch
def test_gloo_backend_under_torchrun_environment():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, TORCHELASTIC_RUN_ID="numgrad-test", WORLD_SIZE="2",
               LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, str(HERE / "gloo_smoke.py")],
                              env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for r in range(2)]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=90)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                _kill_tree(p)
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and f"GLOO-OK {r}" in out, out
