"""Run in a fresh process: start relayrl's embedded Ray with 2 workers (and optionally the dashboard), then
print as JSON every listening socket of the processes it started."""

import json
import sys

import psutil

from relayrl import PPOConfig


def main() -> None:
    dashboard = sys.argv[1] == "dashboard"
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=2)
        .resources(dashboard=dashboard)
        .training(train_batch_size=64, sgd_minibatch_size=32)
        .build()
    )
    algo.train()
    me = psutil.Process()
    procs = {p.pid: p for p in me.children(recursive=True)}
    procs[me.pid] = me
    listening = []
    for conn in psutil.net_connections(kind="inet"):
        if conn.status == psutil.CONN_LISTEN and conn.pid in procs:
            try:
                name = procs[conn.pid].name()
            except psutil.Error:
                name = "?"
            listening.append({"ip": conn.laddr.ip, "port": conn.laddr.port, "process": name})
    print(json.dumps({"listening": listening, "dashboard_url": algo.dashboard_url}))
    algo.stop()


if __name__ == "__main__":
    main()
