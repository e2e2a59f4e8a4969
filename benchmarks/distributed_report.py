"""Distributed speed report: all-reduce on MPI (numgrad.distributed) beside PyTorch's gloo,
and a DDP training step at 2 ranks against 1 rank. A plain script (not collected by pytest):

    python benchmarks/distributed_report.py [--ranks 2]

It launches its own workers: ``mpiexec -n N`` for numgrad's MPI backend, N processes of
``torch.distributed`` gloo (TCP rendezvous on localhost) for the comparison. Needs mpi4py,
mpiexec and (for the gloo column) torch.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

SIZES = [8, 1024, 1 << 20, 16 << 20]  # bytes of float32 data
HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


def _reps(nbytes):
    return 2000 if nbytes <= 1024 else (200 if nbytes <= 1 << 20 else 20)


def _time_allreduce(allreduce, barrier, make, nbytes):
    buf = make(nbytes // 4)
    for _ in range(5):
        allreduce(buf)
    barrier()
    reps = _reps(nbytes)
    t0 = time.perf_counter()
    for _ in range(reps):
        allreduce(buf)
    return (time.perf_counter() - t0) / reps


def worker_mpi_allreduce():
    import numgrad
    import numgrad.distributed as dist
    dist.init_process_group("mpi")
    out = {}
    for n in SIZES:
        out[n] = _time_allreduce(dist.all_reduce, dist.barrier,
                                 lambda k: numgrad.ones(k), n)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def worker_gloo_allreduce(rank, world, port):
    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=world,
                             rank=rank)
    out = {}
    for n in SIZES:
        out[n] = _time_allreduce(tdist.all_reduce, tdist.barrier, lambda k: torch.ones(k), n)
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    tdist.destroy_process_group()


def _model(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def worker_ddp(batch, steps):
    """Rank 0 prints ms per step and ms of it spent waiting on all-reduces."""
    import numpy as np

    import numgrad as torch
    import numgrad.distributed as dist
    from numgrad.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("mpi")
    torch.manual_seed(0)
    ddp = DDP(_model(torch))
    backend = ddp.reducer.pg.backend
    waited = [0.0]
    real_wait = backend.wait

    def timed_wait(req):
        t = time.perf_counter()
        real_wait(req)
        waited[0] += time.perf_counter() - t
    backend.wait = timed_wait
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    rng = np.random.default_rng(dist.get_rank())
    x = torch.from_numpy(rng.standard_normal((batch, 256)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, batch))
    times = []
    for step in range(steps + 5):
        if step == 5:
            waited[0] = 0.0
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        times = sorted(times[5:])
        print("RESULT " + json.dumps({"step": times[len(times) // 2], "wait": waited[0] / steps,
                                      "threads": torch.get_num_threads(),
                                      "buckets": len(ddp.reducer.buckets)}), flush=True)
    dist.destroy_process_group()


def _result(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("worker failed:\n" + out)


def _run(cmd, env=None, timeout=600):
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return p.stdout + p.stderr


def _mpiexec():
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                        + os.environ.get("PATH", ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--worker", default=None)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--port", type=int, default=29561)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    if args.worker == "mpi":
        return worker_mpi_allreduce()
    if args.worker == "gloo":
        return worker_gloo_allreduce(args.rank, args.ranks, args.port)
    if args.worker == "ddp":
        return worker_ddp(args.batch, args.steps)
    mpiexec = _mpiexec()
    n = args.ranks
    print(f"# {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {n} ranks, "
          f"Python {sys.version.split()[0]}")
    mpi = _result(_run([mpiexec, "-n", str(n), sys.executable, HERE, "--worker", "mpi"]))
    procs = [subprocess.Popen([sys.executable, HERE, "--worker", "gloo", "--rank", str(r),
                               "--ranks", str(n), "--port", str(args.port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(n)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    try:
        gloo = _result(outs[0])
    except RuntimeError:
        gloo = None
    print("\n| all_reduce (float32, SUM) | numgrad MPI | torch gloo | MPI / gloo throughput |")
    print("|---|---|---|---|")
    for size in SIZES:
        m = mpi[str(size)]
        g = gloo[str(size)] if gloo else float("nan")
        label = f"{size} B" if size < 1024 else (f"{size >> 10} KiB" if size < 1 << 20
                                                   else f"{size >> 20} MiB")
        print(f"| {label} | {m * 1e6:.1f} us ({size / m / 1e9:.2f} GB/s) | {g * 1e6:.1f} us "
              f"({size / g / 1e9:.2f} GB/s) | {g / m:.2f}x |")
    half = max(1, args.batch // n)
    rows = [(f"{n} ranks, batch {half} each", n, {}, half),
            (f"1 rank, batch {half}, 1 thread", 1,
             {"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}, half),
            (f"1 rank, batch {half}, all cores", 1, {}, half),
            (f"1 rank, batch {half * n}, all cores", 1, {}, half * n)]
    print("\n| DDP step (MLP 256-1024x3-10, SGD) | ms / step | ms waiting on all-reduce | "
          "threads/rank | buckets |")
    print("|---|---|---|---|---|")
    for label, ranks, env, batch in rows:
        r = _result(_run([mpiexec, "-n", str(ranks), sys.executable, HERE, "--worker", "ddp",
                          "--batch", str(batch), "--steps", str(args.steps)], env))
        print(f"| {label} | {r['step'] * 1e3:.2f} | {r['wait'] * 1e3:.2f} | {r['threads']} | "
              f"{r['buckets']} |")


if __name__ == "__main__":
    main()
