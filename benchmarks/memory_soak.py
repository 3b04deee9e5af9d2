"""Memory soak: trains for many iterations and watches the memory of every process relayrl starts -- the
driver, each Ray actor of the run (rollout workers, the learner actor, Ape-X replay shards) and Ray's own
daemons that an embedded Ray starts (raylet, gcs_server) -- and the object store's bytes. Prints one JSON
line: per process, the RSS slope in bytes per iteration after the warm-up, with its standard error, and the
slope of each --window iterations (20,000) after it.

    python benchmarks/memory_soak.py [--algo ppo|apex] [--learner driver|actor] [--iterations 4000]
        [--warmup 500] [--every 10] [--window 20000] [--address HOST:PORT | --cluster] [--idle SECONDS]

--idle is the baseline for Ray's daemons: the same run built and warmed up, then left alone for SECONDS
while every process is sampled; slopes in bytes per second. A daemon that grows as fast idle as in a soak
(per-iteration slope x iterations per second) grows with the clock, not with relayrl's calls.

--cluster (root) starts a 3-node cluster in network namespaces (tests/helpers/netns_cluster.py) and runs the
same soak as a job on its head node with --address; the actors spread over the nodes.

Noise: RSS moves in steps (the allocator maps arenas, TF caches a buffer) and neighbouring samples are
correlated, so the plain regression's standard error would call any step a trend. The post-warm-up samples
are cut into 10 blocks; the slope is fitted to the block medians and its standard error comes from the
residuals of that fit (8 degrees of freedom). "flat" means |slope| < 2 standard errors, or under
10 bytes/iteration (1 MiB per 100,000 iterations). A significant slope says the RSS grows, not why: Python
objects (tracemalloc), malloc'd bytes (glibc mallinfo2) or allocator free lists -- see
docs/fault_tolerance.md, "Long runs: memory stays flat".
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

import numpy as np
import psutil
import ray

from relayrl import ApeXConfig, PPOConfig
from relayrl.runtime.cluster import ObjectStoreGauge

BLOCKS = 10
FLAT_BYTES_PER_ITERATION = 10


def build(algo: str, learner: str, address: str | None):
    if algo == "ppo":
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .rollouts(num_rollout_workers=2, num_envs_per_worker=8)
            .training(train_batch_size=256, sgd_minibatch_size=128, num_sgd_iter=1)
        )
    else:  # small replay: it fills during the warm-up, so its growth is not counted as a leak
        config = (
            ApeXConfig()
            .environment("CartPole-v1")
            .rollouts(num_rollout_workers=2, num_envs_per_worker=4)
            .training(
                replay_buffer_capacity=20_000,
                learning_starts=1000,
                train_batch_size=64,
                updates_per_iteration=4,
            )
        )
    config.learner_placement = learner
    config.address = address
    return config.debugging(seed=0).build()


def relayrl_processes(cluster_dir: str | None) -> dict[str, int]:
    """label -> pid: this driver, every live actor of this job (from Ray's actor table: no dashboard
    needed), and the Ray daemons: an embedded Ray's (this driver's children), or those of the namespace
    cluster whose --temp-dir is under cluster_dir (their command lines name it)."""
    procs = {"driver": os.getpid()}
    job = ray.get_runtime_context().get_job_id()
    counts: dict[str, int] = {}
    actors = ray._private.state.actors().values()  # Ray has no public API without the dashboard
    for a in sorted(actors, key=lambda a: a["StartTime"]):
        if a["State"] == "ALIVE" and a["JobID"] == job and a["Pid"]:
            name = a["ActorClassName"].split(".")[-1]
            counts[name] = counts.get(name, 0) + 1
            procs[f"{name}#{counts[name]}"] = a["Pid"]
    if cluster_dir is None:
        daemons = psutil.Process().children()
    else:
        daemons = [
            q for q in psutil.process_iter(["cmdline"]) if cluster_dir in " ".join(q.info["cmdline"] or [])
        ]
    for q in sorted(daemons, key=lambda q: q.pid):
        if q.name() in ("raylet", "gcs_server"):
            counts[q.name()] = counts.get(q.name(), 0) + 1
            procs[f"ray:{q.name()}#{counts[q.name()]}"] = q.pid
    return procs


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks".split()]
    _fields_ += [(n, ctypes.c_size_t) for n in ("uordblks", "fordblks", "keepcost")]


def malloc_in_use() -> float:
    """Bytes glibc's malloc has handed out to this process and not had back (mallinfo2; NaN without glibc
    2.33+). RSS that grows while this stays flat is the allocator's free lists, not objects piling up."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return float("nan")
    info = libc.mallinfo2()
    return float(info.uordblks + info.hblkhd)


def rss(pid: int) -> float:
    try:
        return float(psutil.Process(pid).memory_info().rss)
    except psutil.Error:  # the process ended (an actor restarted): the run is not a clean soak
        return float("nan")


def trend(iters: np.ndarray, values, floor: bool = False) -> dict:
    """Slope (bytes/iteration) of the block medians (or minima: `floor`), its standard error, those block
    figures and the verdict."""
    blocks_x = [float(np.median(b)) for b in np.array_split(iters, BLOCKS)]
    per_block = np.min if floor else np.median
    blocks_y = [float(per_block(b)) for b in np.array_split(np.asarray(values, float), BLOCKS)]
    x, y = np.asarray(blocks_x), np.asarray(blocks_y)
    (slope, intercept), cov = np.polyfit(x, y, 1, cov=True)
    se = float(np.sqrt(cov[0, 0]))
    return {
        "slope": round(float(slope), 1),
        "se": round(se, 1),
        "blocks_mib": [round(v / 2**20, 3) for v in y],  # a staircase is the allocator, a ramp is a leak
        "flat": bool(abs(slope) < 2 * se or abs(slope) < FLAT_BYTES_PER_ITERATION),
    }


def windows(iters: np.ndarray, values, size: int, start: int) -> list[dict]:
    """trend() of each whole window of `size` iterations after the warm-up, in order: a ramp that ends (a
    cache filling, the allocator settling) shows as slopes that fall to flat, a leak as slopes that stay."""
    out = []
    values = np.asarray(values, float)
    while len(iters) and start + size <= iters[-1]:
        inside = (iters > start) & (iters <= start + size)
        if inside.sum() >= 2 * BLOCKS:
            out.append({"from": int(start), "to": int(start + size), **trend(iters[inside], values[inside])})
            del out[-1]["blocks_mib"]
        start += size
    return out


def on_cluster(argv: list[str]) -> str:
    """Run this soak from the head node of a 3-node namespace cluster; returns its JSON line."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.helpers.netns_cluster import NamespaceCluster

    job = [sys.executable, os.path.abspath(__file__), *(a for a in argv if a != "--cluster")]
    with NamespaceCluster(nodes=3) as cluster:
        job += ["--address", cluster.address, "--cluster-dir", cluster.root]
        done: subprocess.CompletedProcess = cluster.run(0, job, 7200)
    if done.returncode != 0:
        raise SystemExit(f"the soak on the cluster failed: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--algo", choices=("ppo", "apex"), default="ppo")
    p.add_argument("--learner", choices=("driver", "actor"), default="driver")
    p.add_argument("--iterations", type=int, default=4000)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--every", type=int, default=10, help="iterations between memory samples")
    p.add_argument(
        "--window", type=int, default=20_000, help="also the slope of each window of this many iterations"
    )
    p.add_argument("--address", default=None, help="join this Ray cluster instead of an embedded one")
    p.add_argument("--cluster", action="store_true", help="on a 3-node namespace cluster (needs root)")
    p.add_argument(
        "--idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="baseline: build the run, train --warmup iterations, then make no calls for SECONDS and report "
        "each process's slope in bytes per second",
    )
    p.add_argument("--cluster-dir", default=None, help=argparse.SUPPRESS)  # set by --cluster for its job
    args = p.parse_args()
    if args.cluster:
        print(on_cluster(sys.argv[1:]))
        return
    algo = build(args.algo, args.learner, args.address)
    procs = relayrl_processes(args.cluster_dir)
    if args.idle:
        print(json.dumps(idle(algo, procs, args)))
        return
    # Ray frees objects nobody holds in batches (up to 100, or once a second), so between two frees the
    # store also holds what was put meanwhile: Ape-X puts its weights every iteration and swings between
    # ~1.2 and ~5 MB. What the run keeps is the floor of that sawtooth: the store is read afresh at every
    # sample (the run's own gauge answers from a 2-s cache) and the minimum of each block is fitted.
    store_bytes = ObjectStoreGauge(max_age_s=0.0)
    iters, samples, store, in_use = [], {k: [] for k in procs}, [], []
    start = measured_from = time.time()
    try:
        for i in range(1, args.iterations + 1):
            algo.train()
            if i == args.warmup:
                measured_from = time.time()
            if i > args.warmup and i % args.every == 0:
                iters.append(i)
                store.append(float(store_bytes()))
                in_use.append(malloc_in_use())
                for label, pid in procs.items():
                    samples[label].append(rss(pid))
        measured_s = time.time() - measured_from
        still = relayrl_processes(args.cluster_dir)
    finally:
        algo.stop()
    x = np.asarray(iters, float)
    report = {
        "algo": args.algo,
        "learner": args.learner,
        "cluster": args.address is not None,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "seconds": round(time.time() - start, 1),
        "same_processes": still == procs,  # no actor restarted or appeared during the soak
        "rss_bytes_per_iteration": {k: trend(x, v) for k, v in samples.items()},
        "object_store_floor_bytes_per_iteration": trend(x, store, floor=True),
        "rss_bytes_per_iteration_by_window": {
            k: windows(x, v, args.window, args.warmup) for k, v in samples.items()
        },
        "driver_malloc_in_use_bytes_per_iteration": None if np.isnan(in_use).any() else trend(x, in_use),
        "iterations_per_second": round((args.iterations - args.warmup) / measured_s, 1),
    }
    print(json.dumps(report))


IDLE_SAMPLE_S = 2.0


def idle(algo, procs: dict[str, int], args) -> dict:
    """The same processes with nothing asked of them: what Ray's daemons (and the rest) grow per second on
    their own. A soak's per-iteration slope times its iterations per second, set against this, says whether
    a daemon grows with relayrl's calls or with the clock. ("flat" here: under 10 bytes a second, or within
    2 standard errors.)"""
    try:
        for _ in range(args.warmup):
            algo.train()
        start = time.time()
        times, samples = [], {k: [] for k in procs}
        while time.time() - start < args.idle:
            times.append(time.time() - start)
            for label, pid in procs.items():
                samples[label].append(rss(pid))
            time.sleep(IDLE_SAMPLE_S)
    finally:
        algo.stop()
    t = np.asarray(times)
    return {
        "algo": args.algo,
        "learner": args.learner,
        "idle_seconds": args.idle,
        "warmup": args.warmup,
        "rss_bytes_per_second": {k: trend(t, v) for k, v in samples.items()},
        "rss_bytes_per_second_by_window": {k: windows(t, v, 300, 0) for k, v in samples.items()},
    }


if __name__ == "__main__":
    main()
