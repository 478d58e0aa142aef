"""Sustained load: real webhooks over HTTP at N deliveries/s for 60 s, every 202 accounted for.

Setup (bench/harness.py): redis-server (AOF everysec), `hookspawn web` and, by default, one
`hookspawn worker --concurrency 2` (prefork: a main process and two pool processes; the
two workers of the issue; `--workers 2 --concurrency 1` runs two worker processes
instead; `--web-workers 2` runs `hookspawn web --workers 2`, the web's CPU and RSS then
summed over its supervisor and both server processes), embedded dispatch, the GitHub App
against the stand-in (in this process), the same
1,000 generated agents as bench_pipeline.py. Traffic: a fixed cycle of 20 real payloads
from tests/webhooks, signed: 14 pull_request opened / synchronize / reopened on
Codertocat/Hello-World (each fires exactly one agent, which mints a scoped token (cached)
and dispatches a session), 2 pull_request labeled / closed and 4 issues / issue_comment /
push / check_run (fire nothing). The sender is open loop: request i leaves at
start + i / rate on a keep-alive connection (a new one when none is idle), whatever the
earlier answers were.

After the sending stops it waits (at most 120 s) for the accepted deliveries to settle,
then reads everything back from Redis and reports: accepted (202), processed, lost (a 202
whose delivery is not processed), duplicated sessions (a spawn id created more than once;
distinct spawn ids must equal sessions), webhook → session latency (session `createdAt` -
delivery `receivedAt`) p50/p99/max, peak RSS of the web and the worker process trees
(summed VmRSS sampled every 0.25 s during the run; VmHWM per process as well).

`--find-max` steps the rate up (`--rates`, `--step-seconds` each) while a step ends with 0
lost, 0 duplicated, p99 < 1 s, every request answered 202 and the sender on schedule;
then runs `--seconds` (60) at the highest passing rate and reports that run, also as a
ratio of Celery's own no-op drain measured first in the same run (bench_pipeline's no-op
measurement: `celery_config`, prefork, concurrency 2, N prebuilt messages).

`--retention 90s` runs web and worker with that HOOKSPAWN_RETENTION (deliveries) and
HOOKSPAWN_SESSION_RETENTION, and after the run waits until it has passed: Redis
`used_memory` (and the keys of hookspawn's database) are reported at start, after the run
and after the retention, to show that storage returns near where it started.

Run:    .venv/bin/python bench/load.py --rate 200 [--seconds 60] [--retention 90s]
        .venv/bin/python bench/load.py --find-max [--rates 100,200,300,400,600]
                                       [--step-seconds 20] [--workers 2 --concurrency 1]
                                       [--web-workers 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from harness import (
    QUEUE,
    SECRET,
    Audit,
    Bench,
    RssSampler,
    SendReport,
    audit,
    cpu_seconds,
    load_average,
    mix_bodies,
    noop_drain,
    percentiles,
    send_at_rate,
    wait_for_quiet,
    wait_settled,
)

from tests.procs import Proc, process_tree
from tests.secret_scan import file_haystacks, leaks, redis_haystacks
from workers import keys
from workers.settings import parse_duration

P99_LIMIT = 1.0
SETTLE_TIMEOUT = 120.0


class Depth:
    """The deepest the Celery queue and the pending index got while it ran (sampled)."""

    def __init__(self, client: redis.Redis, interval: float = 0.25) -> None:
        self.client, self.interval = client, interval
        self.queue = self.pending = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="depth", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            pipe = self.client.pipeline(transaction=False)
            pipe.llen(QUEUE)
            pipe.zcard(keys.PENDING)
            try:
                queued, pending = pipe.execute()
            except redis.RedisError:
                continue
            self.queue, self.pending = max(self.queue, queued), max(self.pending, pending)

    def __enter__(self) -> Depth:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@dataclass
class Step:
    rate: float
    seconds: float
    sent: SendReport
    audit: Audit
    settled: float
    rss_peak_kb: dict[str, int]
    hwm_kb: dict[str, list[int]]
    queue_peak: int
    pending_peak: int
    load: str
    cpu: dict[str, float]  # CPU seconds per process tree (and redis-server) during the step

    @property
    def latency(self) -> tuple[float, float, float]:
        return percentiles(self.audit.latencies)

    @property
    def refused(self) -> int:
        return sum(1 for a in self.sent.answers if a.status != 202)

    def failures(self) -> list[str]:
        out = []
        if self.audit.lost:
            out.append(f"{len(self.audit.lost)} lost")
        if self.audit.duplicated:
            out.append(f"{self.audit.duplicated} duplicated")
        if self.audit.missing or self.audit.wrong:
            out.append(f"{len(self.audit.missing) + len(self.audit.wrong)} without their session")
        if self.latency[1] >= P99_LIMIT:
            out.append(f"p99 {self.latency[1]:.2f} s")
        if self.refused:
            codes = sorted({a.status for a in self.sent.answers if a.status != 202})
            out.append(f"{self.refused} not answered 202 ({codes}; 0: no answer)")
        if self.sent.achieved < 0.95 * self.rate:
            out.append(f"sender behind ({self.sent.achieved:.0f}/s)")
        return out

    def line(self) -> str:
        p50, p99, top = self.latency
        verdict = "PASS" if not self.failures() else "FAIL: " + ", ".join(self.failures())
        return (
            f"{self.rate:5.0f}/s x {self.seconds:g} s: accepted {self.audit.accepted}, "
            f"processed {self.audit.processed}, lost {len(self.audit.lost)}, duplicated "
            f"{self.audit.duplicated}, sessions {self.audit.sessions}; latency p50 "
            f"{p50 * 1e3:.0f} ms p99 {p99 * 1e3:.0f} ms max {top * 1e3:.0f} ms; queue peak "
            f"{self.queue_peak}; load {self.load} -> {verdict}"
        )


def run_step(
    bench: Bench, port: int, roots: dict[str, int], rate: float, seconds: float, name: str
) -> Step:
    client = bench.client()
    trees = {name: process_tree(pid) for name, pid in roots.items()}
    if bench.redis.process is not None:
        trees["redis"] = [bench.redis.process.pid]
    trees["bench"] = [os.getpid()]
    cpu0 = {name: sum(cpu_seconds(p) for p in pids) for name, pids in trees.items()}
    try:
        with RssSampler(roots) as rss, Depth(bench.client()) as depth:
            sent = send_at_rate(port, mix_bodies(), rate, seconds, name, max_conns=512)
            accepted = sent.accepted()
            settled = wait_settled(client, list(accepted), SETTLE_TIMEOUT)
            hwm = rss.hwm()
            cpu = {n: sum(cpu_seconds(p) for p in pids) - cpu0[n] for n, pids in trees.items()}
        result = audit(client, bench, accepted, sent.fires & set(accepted))
    finally:
        client.close()
    return Step(
        rate,
        seconds,
        sent,
        result,
        settled,
        dict(rss.peak_kb),
        hwm,
        depth.queue,
        depth.pending,
        load_average(),
        cpu,
    )


def report(step: Step, noop: float, workers: list[Proc]) -> None:
    p50, p99, top = step.latency
    a = step.audit
    print(f"\nsustained load: {step.rate:g} deliveries/s for {step.seconds:g} s, load {step.load}")
    print(f"  sender     {step.sent.summary()}")
    print(
        f"  accepted {a.accepted}, processed {a.processed}, lost {len(a.lost)}, duplicated "
        f"sessions {a.duplicated} (spawn ids {a.expected_sessions}, sessions {a.sessions}, "
        f"missing {len(a.missing)}), reprocessed {a.reprocessed}; settled "
        f"{step.settled:.1f} s after the last send"
    )
    print(
        f"  webhook -> session: p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, "
        f"max {top * 1e3:.1f} ms ({len(a.latencies)} sessions); queue peak {step.queue_peak}, "
        f"pending peak {step.pending_peak}"
    )
    for name, kb in step.rss_peak_kb.items():
        per = ", ".join(f"{x / 1024:.0f}" for x in step.hwm_kb.get(name, []))
        print(
            f"  peak RSS {name:<8} {kb / 1024:6.1f} MB (process tree, sampled); "
            f"VmHWM per process [{per}] MB"
        )
    per = ", ".join(f"{k} {v / max(1, a.accepted) * 1e3:.2f}" for k, v in step.cpu.items())
    print(f"  CPU ms per delivery (process trees, sender included as bench): {per}")
    print(
        f"  rate / Celery no-op drain ({noop:.0f} tasks/s): {step.rate / noop:.2f}; "
        f"workers: {len(workers)} process(es) {[w.pid for w in workers]}"
    )
    print(f"  verdict: {'PASS' if not step.failures() else 'FAIL ' + str(step.failures())}")


def memory(bench: Bench) -> tuple[int, int]:
    """Redis `used_memory` (bytes) and the number of keys in hookspawn's database."""
    client = bench.client()
    try:
        return int(client.info("memory")["used_memory"]), int(client.dbsize())
    finally:
        client.close()


def memory_line(what: str, used: tuple[int, int]) -> str:
    return f"  redis used_memory {what}: {used[0] / 2**20:.1f} MB, {used[1]} keys"


def wait_retention(bench: Bench, seconds: float, start: tuple[int, int]) -> tuple[int, int]:
    """Wait `seconds` (the retention, counted from the last send), then until the keys are
    back to where they started (Redis expires keys in the background), at most a minute."""
    time.sleep(seconds)
    deadline = time.monotonic() + 60
    used = memory(bench)
    while used[1] > start[1] and time.monotonic() < deadline:
        time.sleep(1)
        used = memory(bench)
    return used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--find-max", action="store_true")
    parser.add_argument("--rates", default="100,200,300,400,500,600,800")
    parser.add_argument("--step-seconds", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=1, help="hookspawn worker processes")
    parser.add_argument("--concurrency", type=int, default=2, help="pool size of each")
    parser.add_argument(
        "--web-workers", type=int, default=1, help="`hookspawn web --workers N` (1: one process)"
    )
    parser.add_argument("--noop-n", type=int, default=3000)
    parser.add_argument("--noop-runs", type=int, default=3)
    parser.add_argument("--quiet-load", type=float, default=1.5, help="wait for load below")
    parser.add_argument("--retention", help="delivery and session retention, e.g. 90s")
    args = parser.parse_args()
    retention = parse_duration(args.retention).total_seconds() if args.retention else None

    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load {wait_for_quiet(args.quiet_load)} at {time.strftime('%Y-%m-%d %H:%M:%S')}",
        flush=True,
    )
    with Bench() as bench:
        if args.retention:
            bench.extra_env = {
                "HOOKSPAWN_RETENTION": args.retention,
                "HOOKSPAWN_SESSION_RETENTION": args.retention,
            }
        noop_proc = bench.start_noop_worker(concurrency=2)
        noop_drain(bench, 500)
        noops = [noop_drain(bench, args.noop_n)[0] for _ in range(args.noop_runs)]
        bench.stop(noop_proc)
        noop = max(noops)
        print(
            f"celery no-op drain (prefork, concurrency 2, {args.noop_n} tasks): best "
            f"{noop:.0f}/s of {', '.join(f'{x:.0f}' for x in noops)}; "
            f"median {statistics.median(noops):.0f}",
            flush=True,
        )
        bench.seed_connections()
        web, port = bench.start_web(workers=args.web_workers)
        workers = [bench.start_worker(concurrency=args.concurrency) for _ in range(args.workers)]
        roots = {"web": web.pid} | {f"worker{i}": w.pid for i, w in enumerate(workers)}
        start = memory(bench)
        print(memory_line("at start", start), flush=True)
        print(
            f"web pid {web.pid} (--workers {args.web_workers}); {args.workers} x hookspawn "
            f"worker --concurrency "
            f"{args.concurrency} (prefork) {[w.pid for w in workers]}",
            flush=True,
        )
        warm = run_step(bench, port, roots, 50, 4, "warm")
        print(f"  warm-up {warm.line()}", flush=True)
        if not args.find_max:
            final = run_step(bench, port, roots, args.rate, args.seconds, "load")
            print(f"  {final.line()}")
            report(final, noop, workers)
            scan_for_secrets(bench)
            print(memory_line("after the run", memory(bench)), flush=True)
            if retention is not None:
                after = wait_retention(bench, retention, start)
                print(memory_line(f"after the retention ({args.retention}) passed", after))
            return
        passing: list[float] = []
        for n, rate in enumerate(float(r) for r in args.rates.split(",")):
            step = run_step(bench, port, roots, rate, args.step_seconds, f"step{n}")
            print(f"  step {step.line()}", flush=True)
            if step.failures():
                break
            passing.append(rate)
        if not passing:
            print("no rate passed; nothing to confirm")
            return
        for attempt, rate in enumerate(reversed(passing[-3:])):
            final = run_step(bench, port, roots, rate, args.seconds, f"final{attempt}")
            print(f"  final {final.line()}", flush=True)
            if not final.failures():
                break
        report(final, noop, workers)
        status = "met" if not final.failures() and final.rate >= 400 else "not met"
        print(f"  highest sustained rate: {final.rate:g}/s (goal >= 400/s: {status})")
        scan_for_secrets(bench)


def scan_for_secrets(bench: Bench) -> None:
    """Minted tokens and the webhook secret in Redis (decoded), its files, or the logs?"""
    tokens = list(bench.github._tokens)  # every token the stand-in issued
    secrets = {"webhook secret": SECRET} | {f"token {t[:6]}…": t for t in tokens}
    client = bench.client()
    try:
        files = [p for p in sorted(bench.redis.data_dir.rglob("*"))]
        files += [proc.log for proc in bench.procs]
        found, scanned = leaks(secrets, [*redis_haystacks(client), *file_haystacks(files)])
    finally:
        client.close()
    verdict = "none found" if not found else "FOUND:\n    " + "\n    ".join(found)
    print(
        f"  secret scan: {len(tokens)} minted tokens + the webhook secret over {scanned} "
        f"Redis values, files and logs: {verdict}"
    )


if __name__ == "__main__":
    main()
