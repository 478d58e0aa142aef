"""What HOOKSPAWN_REDIS_MIN_REPLICAS_ACK=1 costs a delivery at intake: A/B against 0, passes
interleaved in one run, against a primary with one replica.

Each pass runs `hookspawn web` (bench_intake's setup: one process pinned to core 0; wrk, the
primary and its replica on core 1; AOF everysec) once with each setting, the order
alternating from pass to pass, under wrk at `--connections` for `--seconds`. Per run: the
rate, p50 and p99, and the CPU per delivery of web, the primary and the replica; after it,
the deliveries recorded on the primary and on the replica, against the 202s wrk saw (with
ack=1 the replica holds every one of them when wrk stops). Printed: each run, then per
setting the median over the passes (min..max) and ack=1's against ack=0's.

Run:    .venv/bin/python bench/ab_replica_ack.py [--passes 4] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as a script (`python bench/ab_replica_ack.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from bench_intake import (
    LOAD_CORE,
    SECRET,
    bench_body,
    count_recorded,
    cpu_seconds,
    group_cpu_seconds,
    run_wrk,
    start_server,
    stop_server,
    write_script,
)

from hookspawn.serve.redis_server import RedisServer
from tests.conftest import wait_for
from triggers.signature import sign


def replica_of(primary: RedisServer, root: Path) -> RedisServer:
    """A second redis-server, made the replica of `primary` and waited for until online."""
    replica = RedisServer(root, appendfsync="everysec").start()
    client = redis.Redis.from_url(replica.url)
    try:
        client.replicaof("127.0.0.1", primary.port)
        client.config_set("repl-diskless-sync-delay", 0)
    finally:
        client.close()
    watch = redis.Redis.from_url(primary.url)
    try:
        watch.config_set("repl-diskless-sync-delay", 0)
        wait_for(
            lambda: int(watch.info("replication").get("connected_slaves", 0)) == 1,
            30.0,
            what="the replica online",
        )
    finally:
        watch.close()
    return replica


def one_run(
    ack: int,
    tag: str,
    *,
    primary: RedisServer,
    replica: RedisServer,
    work: Path,
    body_path: Path,
    signature: str,
    seconds: float,
    connections: int,
) -> dict[str, float]:
    clients = [redis.Redis.from_url(s.url) for s in (primary, replica)]
    clients[0].flushall()
    wait_for(lambda: clients[1].dbsize() == 0, 10.0, what="the replica flushed too")
    os.environ["HOOKSPAWN_REDIS_MIN_REPLICAS_ACK"] = str(ack)
    proc, port = start_server("hookspawn", primary.url, work)
    try:
        warm = write_script(work, body_path, signature, f"warm-{tag}")
        run_wrk(port, warm, 2.0, connections)
        time.sleep(1.0)
        clients[0].flushall()
        script = write_script(work, body_path, signature, tag)
        assert primary.process is not None and replica.process is not None
        pids = (primary.process.pid, replica.process.pid)
        before = (group_cpu_seconds(proc.pid), *(cpu_seconds(p) for p in pids))
        data = run_wrk(port, script, seconds, connections)
        after = (group_cpu_seconds(proc.pid), *(cpu_seconds(p) for p in pids))
        # what the replica held when the last 202 was sent (counted before anything settles)
        on_replica, _ = count_recorded(clients[1])
        load = os.getloadavg()[0]
        time.sleep(0.5)
        on_primary, _ = count_recorded(clients[0])
    finally:
        stop_server(proc)
        for client in clients:
            client.close()
    n = max(1, data["requests"])
    web, red, rep = ((b - a) / n * 1e6 for a, b in zip(before, after, strict=True))
    return {
        "rps": data["requests"] / (data["duration_us"] / 1e6),
        "p50": data["p50_us"] / 1000,
        "p99": data["p99_us"] / 1000,
        "web": web,
        "redis": red,
        "replica": rep,
        "total": web + red + rep,
        "accepted": data["accepted"],
        "other": data["other"] + data["duplicate"],
        "primary_held": on_primary,
        "replica_held": on_replica,
        "load": load,
    }


FIGURES = (
    ("rps", "req/s", "{:.0f}"),
    ("p50", "p50 ms", "{:.2f}"),
    ("p99", "p99 ms", "{:.2f}"),
    ("web", "CPU us web", "{:.0f}"),
    ("redis", "CPU us primary", "{:.0f}"),
    ("replica", "CPU us replica", "{:.0f}"),
    ("total", "CPU us a delivery, all three", "{:.0f}"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    body = bench_body()
    signature = sign(body, SECRET)
    runs: dict[int, list[dict[str, float]]] = {0: [], 1: []}
    with tempfile.TemporaryDirectory(prefix="bench-ack-") as tmp:
        work = Path(tmp)
        body_path = work / "body.json"
        body_path.write_bytes(body)
        primary = RedisServer(work / "primary", appendfsync="everysec").start()
        replica = replica_of(primary, work / "replica")
        for server in (primary, replica):
            assert server.process is not None
            subprocess.run(["taskset", "-pc", LOAD_CORE, str(server.process.pid)], check=True,
                           capture_output=True)  # fmt: skip
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cores; hookspawn web on core 0, "
            f"wrk + primary + replica on core 1; {args.connections} connections, "
            f"{args.seconds:g} s a run; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        try:
            for n in range(args.passes):
                for ack in (0, 1) if n % 2 == 0 else (1, 0):
                    r = one_run(
                        ack,
                        f"p{n}-ack{ack}",
                        primary=primary,
                        replica=replica,
                        work=work,
                        body_path=body_path,
                        signature=signature,
                        seconds=args.seconds,
                        connections=args.connections,
                    )
                    runs[ack].append(r)
                    complete = r["replica_held"] >= r["accepted"] if ack else True
                    print(
                        f"  pass {n + 1} ack={ack}: {r['rps']:.0f} req/s, p50 {r['p50']:.2f} ms, "
                        f"p99 {r['p99']:.2f} ms; CPU us a delivery: web {r['web']:.0f}, primary "
                        f"{r['redis']:.0f}, replica {r['replica']:.0f}; 202 {r['accepted']:.0f}"
                        f", other {r['other']:.0f}, on the primary {r['primary_held']:.0f}, on "
                        f"the replica {r['replica_held']:.0f} at wrk's end"
                        f"{'' if complete else ' (MISSING from the replica)'}; "
                        f"load {r['load']:.1f}",
                        flush=True,
                    )
        finally:
            replica.stop()
            primary.stop()
    print(f"\nmedians over {args.passes} passes (min..max):")
    for key, name, fmt in FIGURES:
        cells = []
        for ack in (0, 1):
            values = [r[key] for r in runs[ack]]
            cells.append(
                f"ack={ack} {fmt.format(statistics.median(values))} "
                f"({fmt.format(min(values))}..{fmt.format(max(values))})"
            )
        ratio = statistics.median(r[key] for r in runs[1]) / max(
            1e-9, statistics.median(r[key] for r in runs[0])
        )
        print(f"  {name:<30} {cells[0]:<28} {cells[1]:<28} ack=1/ack=0 {ratio:.2f}")


if __name__ == "__main__":
    main()
