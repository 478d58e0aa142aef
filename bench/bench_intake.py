"""Webhook intake under load with wrk: CPU per delivery end to end, p99, throughput.

The figures that count are hookspawn's: the CPU one delivery costs end to end (the web
process or processes, and redis-server running its record script), and p50/p99 latency at
``--connections`` concurrent connections, beside the load average (the machine is shared).
The bare endpoint and a naive receiver are run for information only: how far intake is from
uvicorn's ceiling, and from what a first attempt would do (no goal is set on either ratio).
Each scenario runs ``--runs`` times; best and spread are reported, because single runs on a
shared 2-core machine are noisy.

1. ``bare``      a minimal ASGI app (read the body, answer 202): the ceiling of
                 uvicorn + uvloop + httptools on this machine;
2. ``hookspawn`` the real app (``create_app(build_runtime(settings))``): verify the
                 signature, parse, record the delivery and push its Celery message in one
                 atomic Redis script (AOF everysec), answer 202;
3. ``naive``     a receiver that verifies, parses and calls Celery ``send_task`` inline
                 (no record): what a first attempt would do.

Setup: uvicorn (uvloop, httptools, one process, no access log) pinned to core 0; wrk
(1 thread, 50 connections) and redis-server pinned to core 1; loopback only. With
``--workers N`` hookspawn runs as ``hookspawn web --workers N`` (N processes on one port),
pinned to every core, and its CPU is that of all of its processes. Every
request is a real signed ~13 KB ``pull_request/opened`` payload (the example without its
``pull_request.head.repo`` / ``base.repo`` copies, compact JSON) with a distinct
``X-GitHub-Delivery`` (the signature covers only the body, so one signed body serves).
After each hookspawn run the recorded deliveries and queued Celery messages are counted
in Redis and compared with the 202s wrk saw (a request in flight when wrk stops may be
recorded without wrk counting its answer, so recorded may exceed accepted by at most the
connection count; it must never be lower).

Run:    .venv/bin/python bench/bench_intake.py [--seconds 15] [--runs 2] [--workers N]
Profile a server under load (needs ``.venv/bin/pip install py-spy``; py-spy samples the
GIL holder at 100 Hz, start-up imports left out):
        .venv/bin/python bench/bench_intake.py --profile hookspawn
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

# Run as a script (`python bench/bench_intake.py`): import the tree this file is in.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from hookspawn.serve.redis_server import RedisServer, free_port  # noqa: E402
from triggers.signature import sign  # noqa: E402
from workers import keys  # noqa: E402

SECRET = "bench-secret"
EXAMPLE = ROOT / "tests" / "webhooks" / "pull_request" / "opened.payload.json"
SERVER_CORE, LOAD_CORE = "0", "1"
QUEUE = "hookspawn"  # the Celery queue's Redis list
SCENARIOS = ("bare", "hookspawn", "naive")

WRK_SCRIPT = r"""
-- one signed body, a distinct X-GitHub-Delivery per request, 202s counted per thread
local f = assert(io.open("@BODY@", "rb"))
local body = f:read("*all")
f:close()
local prefix = "@PREFIX@"
local threads = {}
local counter = 0
local headers = {
  ["Content-Type"] = "application/json",
  ["X-GitHub-Event"] = "pull_request",
  ["X-GitHub-Hook-ID"] = "42",
  ["X-Hub-Signature-256"] = "@SIGNATURE@",
  ["User-Agent"] = "GitHub-Hookshot/bench",
}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  accepted = 0
  duplicate = 0
  other = 0
end

function request()
  counter = counter + 1
  headers["X-GitHub-Delivery"] = prefix .. "-" .. tid .. "-" .. counter
  return wrk.format("POST", "/webhooks/github", headers, body)
end

function response(status, hdrs, resp)
  if status == 202 then accepted = accepted + 1
  elseif status == 200 then duplicate = duplicate + 1
  else other = other + 1 end
end

function done(summary, latency, requests)
  local a, d, o = 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("accepted"); d = d + t:get("duplicate"); o = o + t:get("other")
  end
  local e = summary.errors
  io.write(string.format(
    '\nRESULT {"requests": %d, "duration_us": %d, "accepted": %d, "duplicate": %d, ' ..
    '"other": %d, "connect": %d, "read": %d, "write": %d, "timeout": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %.1f}\n',
    summary.requests, summary.duration, a, d, o, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
"""


# --------------------------------------------------------------------------- servers
# The three apps, built inside the server process (`--serve NAME`).


def bare_app() -> Any:
    """Read the body, answer 202: nothing else."""
    start = {
        "type": "http.response.start",
        "status": 202,
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"20")],
    }
    done = {"type": "http.response.body", "body": b'{"status":"queued"}\n'}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        await send(start)
        await send(done)

    return app


def naive_app(redis_url: str) -> Any:
    """Verify, parse, `send_task` inline on the event loop (no record), answer 202."""
    import orjson

    from triggers.signature import verify
    from workers.celery_app import PROCESS_DELIVERY, make_celery

    celery = make_celery(redis_url)
    secrets = [SECRET]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if not verify(raw, headers.get("x-hub-signature-256"), secrets):
            status, body = 401, b'{"error":"signature"}'
        else:
            orjson.loads(raw)
            delivery_id = headers["x-github-delivery"]
            celery.send_task(PROCESS_DELIVERY, args=[delivery_id])
            status, body = 202, orjson.dumps({"deliveryId": delivery_id, "status": "queued"})
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


def serve(name: str, port: int, redis_url: str, data_dir: Path) -> None:
    import uvicorn

    app = bare_app() if name == "bare" else naive_app(redis_url)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        workers=1,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )


# --------------------------------------------------------------------------- driver


@dataclass
class Result:
    scenario: str
    run: int
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    requests: int
    accepted: int
    duplicate: int
    other: int
    socket_errors: int
    recorded: int | None = None
    queued: int | None = None
    #: CPU microseconds per request of the server process and of redis-server
    server_us: float = 0.0
    redis_us: float = 0.0
    #: the machine's 1-minute load average as the run ended
    load: float = 0.0


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def group_cpu_seconds(pgid: int) -> float:
    """user + system CPU seconds so far of every live process of the process group `pgid`
    (a server and the processes it forked), and of those of its children it waited for."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if int(fields[2]) == pgid:
            total += sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
    return total


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port}")


def start_server(
    name: str,
    redis_url: str,
    work: Path,
    profile_to: Path | None = None,
    rate: int = 100,
    workers: int = 1,
) -> tuple[subprocess.Popen[bytes], int]:
    """`bare`/`naive` under uvicorn here; `hookspawn` is the shipped `hookspawn web` at its
    defaults (`workers` processes), configured through its environment like any deployment."""
    port = free_port()
    env = dict(os.environ)
    cores = SERVER_CORE
    if name == "hookspawn":
        server = [sys.executable, "-m", "hookspawn.cli", "web", "--host", "127.0.0.1",
                  "--port", str(port), "--broker-port", str(free_port())]  # fmt: skip
        if workers > 1:
            server += ["--workers", str(workers)]
            cores = f"0-{(os.cpu_count() or 1) - 1}"
        env.update(
            {
                "HOOKSPAWN_REDIS_URL": redis_url,
                "HOOKSPAWN_WEBHOOK_SECRET": SECRET,
                "HOOKSPAWN_DATA_DIR": str(work / "data"),
                "HOOKSPAWN_AGENTS_DIR": str(work / ".auto"),
            }
        )
    else:
        server = [sys.executable, str(Path(__file__).resolve()), "--serve", name,
                  "--port", str(port), "--redis-url", redis_url, "--work", str(work)]  # fmt: skip
    cmd = ["taskset", "-c", cores, *server]
    if profile_to is not None:
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        # py-spy is the server's parent (so ptrace is allowed); it samples on the load core
        cmd = [
            "taskset", "-c", LOAD_CORE,
            py_spy, "record", "--format", "raw", "--rate", str(rate), "--nonblocking", "--gil",
            "-o", str(profile_to), "--",
            *cmd,
        ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, start_new_session=True, env=env, cwd=ROOT
    )
    wait_port(port, proc)
    return proc, port


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        # the process group: taskset execs, py-spy forwards SIGINT to its child
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run_wrk(port: int, script: Path, seconds: float, connections: int) -> dict[str, Any]:
    cmd = [
        "taskset", "-c", LOAD_CORE,
        "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "10s",
        "-s", str(script), f"http://127.0.0.1:{port}/webhooks/github",
    ]  # fmt: skip
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    data: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return data


def write_script(work: Path, body_path: Path, signature: str, prefix: str) -> Path:
    script = work / f"{prefix}.lua"
    text = (
        WRK_SCRIPT.replace("@BODY@", str(body_path))
        .replace("@SIGNATURE@", signature)
        .replace("@PREFIX@", prefix)
    )
    script.write_text(text)
    return script


def bench_body() -> bytes:
    """The pull_request/opened example without its two nested repository copies."""
    document = json.loads(EXAMPLE.read_bytes())
    for side in ("head", "base"):
        document["pull_request"][side].pop("repo")
    return json.dumps(document, separators=(",", ":")).encode()


def count_recorded(client: redis.Redis) -> tuple[int, int]:
    recorded = 0
    for _ in client.scan_iter(match=keys.delivery("*"), count=1000):
        recorded += 1
    queued = int(client.llen(QUEUE))
    return recorded, queued


def one_run(
    scenario: str,
    run: int,
    *,
    client: redis.Redis,
    redis_url: str,
    work: Path,
    body_path: Path,
    signature: str,
    seconds: float,
    warmup: float,
    connections: int,
    redis_pid: int,
    workers: int = 1,
) -> Result:
    client.flushall()
    proc, port = start_server(scenario, redis_url, work, workers=workers)
    try:
        if warmup:
            warm = write_script(work, body_path, signature, f"warm-{scenario}-{run}")
            run_wrk(port, warm, warmup, connections)
            time.sleep(1.0)  # the warm-up's last requests land before the flush
            client.flushall()
        script = write_script(work, body_path, signature, f"{scenario}-{run}")
        cpu0 = group_cpu_seconds(proc.pid), cpu_seconds(redis_pid)
        data = run_wrk(port, script, seconds, connections)
        cpu1 = group_cpu_seconds(proc.pid), cpu_seconds(redis_pid)
        load = os.getloadavg()[0]
        time.sleep(0.5)  # let the last in-flight requests land
    finally:
        stop_server(proc)
    result = Result(
        scenario=scenario,
        run=run,
        rps=data["requests"] / (data["duration_us"] / 1e6),
        p50_ms=data["p50_us"] / 1000,
        p90_ms=data["p90_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        max_ms=data["max_us"] / 1000,
        requests=data["requests"],
        accepted=data["accepted"],
        duplicate=data["duplicate"],
        other=data["other"],
        socket_errors=data["connect"] + data["read"] + data["write"] + data["timeout"],
        server_us=(cpu1[0] - cpu0[0]) / max(1, data["requests"]) * 1e6,
        redis_us=(cpu1[1] - cpu0[1]) / max(1, data["requests"]) * 1e6,
        load=load,
    )
    if scenario != "bare":
        result.recorded, result.queued = count_recorded(client)
    return result


def summarize(results: list[Result], connections: int) -> None:
    by: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by[r.scenario].append(r)
    print("\nper run:")
    print(f"  {'scenario':<10} {'run':>3} {'req/s':>8} {'p50 ms':>7} {'p90 ms':>7} "
          f"{'p99 ms':>7} {'max ms':>7} {'202':>7} {'other':>5} {'sockerr':>7} "
          f"{'recorded':>8} {'queued':>7}")  # fmt: skip
    for r in results:
        rec = "-" if r.recorded is None else str(r.recorded)
        que = "-" if r.queued is None else str(r.queued)
        print(
            f"  {r.scenario:<10} {r.run:>3} {r.rps:>8.0f} {r.p50_ms:>7.2f} {r.p90_ms:>7.2f} "
            f"{r.p99_ms:>7.2f} {r.max_ms:>7.1f} {r.accepted:>7} {r.other + r.duplicate:>5} "
            f"{r.socket_errors:>7} {rec:>8} {que:>7}"
        )
    best = {name: max(rs, key=lambda r: r.rps) for name, rs in by.items()}
    print(f"\nbest of {max(len(v) for v in by.values())} runs (spread = min..max over runs):")
    for name, rs in by.items():
        b = best[name]
        rps = [r.rps for r in rs]
        p99 = [r.p99_ms for r in rs]
        print(
            f"  {name:<10} {b.rps:>7.0f} req/s (spread {min(rps):.0f}..{max(rps):.0f}, "
            f"median {statistics.median(rps):.0f})  p50 {b.p50_ms:.2f} ms  "
            f"p99 {b.p99_ms:.2f} ms (spread {min(p99):.2f}..{max(p99):.2f})"
        )
    for name in ("hookspawn",):
        if name not in best:
            continue
        h = best[name]
        print(f"\n  {name}:")
        for r in by[name]:
            print(
                f"    run {r.run}: CPU per delivery {r.server_us + r.redis_us:.0f} us end to end "
                f"(web {r.server_us:.0f} us + redis {r.redis_us:.0f} us); p99 {r.p99_ms:.2f} ms "
                f"at {connections} connections, {r.rps:.0f} req/s; load average {r.load:.1f}"
            )
        if "bare" in best:
            print(f"    /bare  = {h.rps / best['bare'].rps:.3f}   (information only)")
        if "naive" in best:
            print(f"    /naive = {h.rps / best['naive'].rps:.2f}    (information only)")
        for r in by[name]:
            ok = r.recorded is not None and r.accepted <= r.recorded <= r.accepted + connections
            ok = ok and r.queued == r.recorded and r.other == 0 and r.duplicate == 0
            print(
                f"    run {r.run}: accepted (202) {r.accepted}, recorded {r.recorded}, "
                f"queued {r.queued}, other answers {r.other + r.duplicate}"
                f" -> {'OK' if ok else 'MISMATCH'}"
            )


def summarize_profile(raw: Path, top: int = 25) -> None:
    """py-spy raw (collapsed) stacks → self and inclusive shares of the busiest functions."""
    self_: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        if any("_find_and_load" in f for f in frames):
            continue  # start-up imports, not serving
        total += n
        if frames:
            self_[frames[-1]] += n
        for frame in set(frames):
            incl[frame] += n
    if not total:
        print("no samples")
        return
    print(f"\nprofile: {total} samples")
    print("  top self time:")
    for frame, n in self_.most_common(top):
        print(f"    {100 * n / total:5.1f}%  {frame}")
    print("  top inclusive time:")
    for frame, n in incl.most_common(top + 15):
        print(f"    {100 * n / total:5.1f}%  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=15.0, help="per scenario run")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured, per run")
    parser.add_argument("--runs", type=int, default=2, help="runs of each scenario")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument(
        "--workers", type=int, default=1, help="hookspawn web's processes (its --workers)"
    )
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"comma-separated, of {', '.join(SCENARIOS)}",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="after the runs, time each step of intake on its own (CPU per request)",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="hookspawn",
        choices=("hookspawn",),
        help="py-spy this server (default hookspawn) under one wrk run instead",
    )
    args = parser.parse_args()

    if args.serve:
        serve(args.serve, args.port, args.redis_url, args.work)
        return

    body = bench_body()
    signature = sign(body, SECRET)
    with tempfile.TemporaryDirectory(prefix="bench-intake-") as tmp:
        work = Path(tmp)
        body_path = work / "body.json"
        body_path.write_bytes(body)
        server = RedisServer(work / "redis", appendfsync="everysec").start()
        assert server.process is not None
        subprocess.run(["taskset", "-pc", LOAD_CORE, str(server.process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        client = redis.Redis.from_url(server.url)
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cores; server on core "
            f"{SERVER_CORE}, wrk + redis-server (AOF everysec) on core {LOAD_CORE}; "
            f"body {len(body)} bytes; {args.connections} connections, {args.seconds:g} s "
            f"per run after {args.warmup:g} s warm-up; hookspawn web --workers {args.workers}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        try:
            if args.profile:
                profile(args, client, server.url, work, body_path, signature)
                return
            results = []
            names = [s for s in args.scenarios.split(",") if s]
            for run in range(1, args.runs + 1):
                for name in names:
                    r = one_run(
                        name,
                        run,
                        client=client,
                        redis_url=server.url,
                        work=work,
                        body_path=body_path,
                        signature=signature,
                        seconds=args.seconds,
                        warmup=args.warmup,
                        connections=args.connections,
                        redis_pid=server.process.pid,
                        workers=args.workers,
                    )
                    print(
                        f"  {name} run {run}: {r.rps:.0f} req/s, p50 {r.p50_ms:.2f} ms, "
                        f"p99 {r.p99_ms:.2f} ms; CPU per request: server {r.server_us:.0f} us, "
                        f"redis {r.redis_us:.0f} us; load {r.load:.2f}",
                        flush=True,
                    )
                    results.append(r)
            summarize(results, args.connections)
            if args.breakdown:
                from intake_breakdown import breakdown, report

                from workers.delivery.deliveries import DeliveryStore

                client.flushall()
                store = DeliveryStore(client, retention=timedelta(days=1))
                ours = [r for r in results if r.scenario == "hookspawn"]
                best = max(ours, key=lambda r: r.rps).server_us if ours else None
                report(breakdown(body, SECRET, server.url, store), best)
        finally:
            client.close()
            server.stop()


def profile(
    args: argparse.Namespace,
    client: redis.Redis,
    redis_url: str,
    work: Path,
    body_path: Path,
    signature: str,
) -> None:
    client.flushall()
    raw = Path(tempfile.gettempdir()) / "hookspawn-intake-profile.txt"
    proc, port = start_server(args.profile, redis_url, work, profile_to=raw)
    try:
        script = write_script(work, body_path, signature, "profile")
        data = run_wrk(port, script, args.seconds, args.connections)
    finally:
        stop_server(proc)
    print(f"  under py-spy: {data['requests'] / (data['duration_us'] / 1e6):.0f} req/s")
    print(f"  raw stacks: {raw}")
    summarize_profile(raw)


if __name__ == "__main__":
    main()
