"""Benchmark: compile a generated .auto tree of 1,000 agents with imports and fragments."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents import compile_dir

RUNTIME = """\
harness: claude-code
environment:
  name: runtime-{n}
  labels: {{purpose: agents}}
  image: {{kind: preset, name: node24}}
  resources: {{cpuCount: 2, memoryMB: 8192}}
  steps:
    - RUN apt-get update && apt-get install -y jq && rm -rf /var/lib/apt/lists/*
  setup:
    - name: deps
      commands: [npm ci --prefer-offline]
      cache: {{key: npm-v1, files: [package-lock.json], paths: [/home/user/.npm]}}
  setupCache: {{ttl: 7d}}
env:
  TS_AUTHKEY: {{$secret: tailscale-authkey, optional: true}}
"""

MOUNT = """\
mounts:
  - name: code
    kind: git
    repository: acme/repo-{n}
    mountPath: /workspace/repo
    ref: main
    auth:
      kind: githubApp
      commitAuthor: {{name: Bot, email: bot@acme.dev}}
tools:
  - kind: github
"""

ROLE = """\
imports:
  - ../environments/runtime-{env}.yaml
  - ../mounts/repo-{repo}.yaml
triggers:
  - kind: github
    name: comment
    event: issue_comment
    actions: [created]
    filters:
      - {{path: github.comment.body, matches: "^/do\\\\b"}}
    initialPrompt: "{{{{ github.comment.user.login }}}} asked: {{{{ github.comment.body }}}}"
"""

AGENT = """\
name: agent-{i}
imports:
  - ../fragments/roles/role-{role}.yaml
mounts:
  - name: code
    ref: refs/pull/{{{{payload.github.pullRequest.number}}}}/head
    auth:
      capabilities: {{contents: read, merge: none}}
triggers:
  - kind: github
    event: pull_request
    actions: [opened, synchronize, reopened]
    branches: [main, "release/*"]
    filters:
      - {{path: github.pullRequest.draft, equals: false}}
    displayTitle: "Review #{{{{ github.pullRequest.number }}}} ({i})"
systemPrompt: |
  You are agent {i}. Review carefully.
env:
  AGENT_INDEX: "{i}"
"""


def generate(root: Path, agents: int, environments: int, repos: int, roles: int) -> None:
    auto = root / ".auto"
    for sub in ("agents", "fragments/environments", "fragments/mounts", "fragments/roles"):
        (auto / sub).mkdir(parents=True)
    for n in range(environments):
        (auto / f"fragments/environments/runtime-{n}.yaml").write_text(RUNTIME.format(n=n))
    for n in range(repos):
        (auto / f"fragments/mounts/repo-{n}.yaml").write_text(MOUNT.format(n=n))
    for n in range(roles):
        role = ROLE.format(env=n % environments, repo=n % repos)
        (auto / f"fragments/roles/role-{n}.yaml").write_text(role)
    for i in range(agents):
        (auto / f"agents/agent-{i:04d}.yaml").write_text(AGENT.format(i=i, role=i % roles))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, args.agents, environments=5, repos=50, roles=100)
        files = sum(1 for _ in (root / ".auto").rglob("*.yaml"))
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            result = compile_dir(root / ".auto", secret_names={"tailscale-authkey"})
            times.append(time.perf_counter() - started)
        assert result.ok, [str(e) for e in result.errors[:5]]
        assert len(result.agents) == args.agents
        triggers = sum(len(a.triggers) for a in result.agents)
        print(
            f"compile_dir: {args.agents} agents, {files} files, {triggers} triggers, "
            f"{len(result.environments)} environments"
        )
        print(
            f"runs={args.runs} min={min(times):.3f}s median={statistics.median(times):.3f}s "
            f"max={max(times):.3f}s per-agent={min(times) / args.agents * 1000:.2f}ms "
            f"(target < 2s: {'ok' if max(times) < 2 else 'MISSED'})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
