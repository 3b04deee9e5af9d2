"""Load test of `relayrl serve` on loopback: a fixed request rate for a fixed time, errors and latency.

    python benchmarks/policy_server_load.py [--rate 1000] [--seconds 30] [--threads 8]

Starts `relayrl serve ppo --env CartPole-v1` on 127.0.0.1 (a free port) in its own process; the server
trains PPO on what it receives as it would for real clients. `--threads` client threads, each on one
keep-alive connection, send requests on a fixed schedule (rate / threads per second each): episodes
of start_episode, then 20 x (get_action + log_returns), then end_episode, with random CartPole
observations. The generator stops by itself after --seconds (and never runs past 2x that). Prints
requests sent, achieved rate, errors (any non-200 or exception) and latency percentiles.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from relayrl.policy_server import PolicyClient

STEPS_PER_EPISODE = 20


def start_server() -> tuple[subprocess.Popen, str]:
    err = tempfile.NamedTemporaryFile("w+", suffix=".err", delete=False)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relayrl.cli",
            "serve",
            "ppo",
            "--env",
            "CartPole-v1",
            "--port",
            "0",
            "--host",
            "127.0.0.1",
            "--quiet",
            "--seed",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=err,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        match = re.search(r"serving \S+ on (http://127\.0\.0\.1:\d+)", open(err.name).read())
        if match:
            return proc, match.group(1)
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start: " + open(err.name).read()[-2000:])


def generator(url: str, rate: float, seconds: float, seed: int, out: dict) -> None:
    """Send requests at `rate` per second until `seconds` passed; latencies (s) and errors into out."""
    client = PolicyClient(url, batch_rewards=False, timeout_s=10)
    rng = np.random.default_rng(seed)
    latencies, errors, behind = [], [], 0.0
    start = time.perf_counter()
    hard_stop = start + 2 * seconds
    n, eid, step = 0, None, 0
    while True:
        scheduled = start + n / rate
        if scheduled - start >= seconds or time.perf_counter() > hard_stop:
            break
        wait = scheduled - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        else:
            behind = max(behind, -wait)
        obs = rng.uniform(-0.05, 0.05, 4).tolist()
        t0 = time.perf_counter()
        try:
            if eid is None:
                eid, step = client.start_episode(), 0
            elif step >= 2 * STEPS_PER_EPISODE:
                client.end_episode(eid, obs)
                eid = None
            elif step % 2 == 0:
                client.get_action(eid, obs)
                step += 1
            else:
                client.log_returns(eid, 1.0)
                step += 1
            latencies.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - counted and reported, the load goes on
            errors.append(f"{type(exc).__name__}: {exc}")
            eid = None
        n += 1
    client.close()
    out.update(latencies=latencies, errors=errors, behind_s=behind, elapsed=time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=1000.0, help="requests per second, all threads together")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--threads", type=int, default=8)
    args = p.parse_args()
    server, url = start_server()
    assert url.startswith("http://127.0.0.1:"), url  # loopback only
    try:
        PolicyClient(url).status()  # ready
        results = [{} for _ in range(args.threads)]
        threads = [
            threading.Thread(
                target=generator, args=(url, args.rate / args.threads, args.seconds, i, results[i])
            )
            for i in range(args.threads)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=2 * args.seconds + 30)
        status = PolicyClient(url).status()
    finally:
        server.terminate()
        server.wait(timeout=30)
    lat = np.concatenate([r["latencies"] for r in results]) * 1e3
    errors = [e for r in results for e in r["errors"]]
    elapsed = max(r["elapsed"] for r in results)
    total = len(lat) + len(errors)
    pct = {q: float(np.percentile(lat, q)) for q in (50, 90, 99, 99.9)}
    print(
        f"server {url}; {args.threads} client threads; target {args.rate:.0f} req/s for {args.seconds:.0f} s"
    )
    print(
        f"requests {total:,} in {elapsed:.1f} s = {total / elapsed:,.0f} req/s; errors {len(errors)}; "
        f"generator at most {1e3 * max(r['behind_s'] for r in results):.1f} ms behind schedule"
    )
    print("latency ms: " + "  ".join(f"p{q:g} {v:.2f}" for q, v in pct.items()) + f"  max {lat.max():.2f}")
    print(
        f"server trained meanwhile: {status.get('training_iteration')} iterations on "
        f"{status.get('timesteps_total')} steps; inference batches {status['inference_batches']:,} for "
        f"{status['inference_requests']:,} actions"
    )
    if errors:
        print("first errors:", errors[:5])
    print(
        json.dumps(
            {
                "requests": total,
                "req_per_s": total / elapsed,
                "errors": len(errors),
                **{f"p{q:g}_ms": v for q, v in pct.items()},
                "max_ms": float(lat.max()),
            }
        )
    )


if __name__ == "__main__":
    main()
