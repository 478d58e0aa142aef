"""Per-event matching cost with 10, 1,000 and 10,000 agents (most of them on other events)."""

from __future__ import annotations

import json
import platform
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script (`python bench/bench_match.py`): import the tree this file is in.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.environment_spec import EnvironmentResource
from agents.model import CompiledAgent, Filter, Mount, Trigger
from triggers.envelope import build_envelope
from triggers.matching import TriggerIndex

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = ROOT / "tests" / "webhooks" / "pull_request" / "opened.payload.json"
OTHER_EVENTS = (
    "push",
    "issues",
    "issue_comment",
    "check_run",
    "check_suite",
    "workflow_run",
    "workflow_job",
    "release",
    "create",
    "delete",
    "pull_request_review",
    "pull_request_review_comment",
    "discussion",
    "deployment_status",
    "merge_group",
    "status",
)
SIZES = (10, 1_000, 10_000)

#: an environment with only what every one has
RUNTIME = EnvironmentResource.model_validate(
    {
        "name": "runtime",
        "spec": {
            "image": {"kind": "preset", "name": "node24"},
            "baseImage": "node:24-bookworm-slim",
        },
    }
)


def trigger(event: str, index: int, **fields: Any) -> Trigger:
    return Trigger(index=index, key=f"{event}-{index}", event=event, **fields)


def agent(name: str, triggers: list[Trigger], repository: str) -> CompiledAgent:
    mount = Mount(repository=repository, mount_path="/workspace/r", github_repository=repository)
    return CompiledAgent(
        name=name,
        harness="claude-code",
        environment="runtime",
        environment_resource=RUNTIME,
        source_file=f"agents/{name}.yaml",
        mounts=(mount,),
        triggers=tuple(triggers),
    )


def same_event_agents() -> list[CompiledAgent]:
    """Five pull_request agents: one fires, the others fail at different conditions."""
    draft = Filter(path="github.pullRequest.draft", op="equals", value=False)
    title = Filter(path="github.pullRequest.title", op="matches", value=r"(?i)^(wip|draft)\b")
    return [
        agent(
            "pr-review",
            [trigger("pull_request", 0, actions=("opened", "synchronize"), filters=(draft,))],
            "Codertocat/Hello-World",
        ),
        agent(
            "pr-closed", [trigger("pull_request", 0, actions=("closed",))], "codertocat/hello-world"
        ),
        agent("pr-elsewhere", [trigger("pull_request", 0)], "acme/widgets"),
        agent(
            "pr-release",
            [trigger("pull_request", 0, branches=("release/*",), repositories=("codertocat/*",))],
            "acme/widgets",
        ),
        agent(
            "pr-wip",
            [trigger("pull_request", 0, filters=(draft, title))],
            "Codertocat/Hello-World",
        ),
    ]


def other_agents(count: int, *, same_every: int = 0) -> list[CompiledAgent]:
    """Agents on other events (1-3 triggers each); every `same_every`-th also on pull_request."""
    out = []
    for i in range(count):
        triggers = [
            trigger(OTHER_EVENTS[(i + k) % len(OTHER_EVENTS)], k, actions=("created", "opened"))
            for k in range(1 + i % 3)
        ]
        if same_every and i % same_every == 0:
            triggers.append(trigger("pull_request", len(triggers), actions=("closed",)))
        out.append(agent(f"agent-{i}", triggers, f"org-{i % 97}/repo-{i}"))
    return out


def ns_per_call(call: Callable[[], object]) -> float:
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=7, number=number)) / number * 1e9


def main() -> None:
    body = json.loads(PAYLOAD.read_text(encoding="utf-8"))
    envelope = build_envelope("pull_request", "bench-delivery", body)
    print(f"python {platform.python_version()} on {platform.machine()}")
    print("fixed mix: 5 agents on pull_request (1 fires), the rest on 16 other events")
    print(
        f"{'agents':>8} {'triggers':>9} {'candidates':>10} {'match ns/event':>15} "
        f"{'evaluate ns':>12} {'build ms':>9}"
    )
    fixed: dict[int, float] = {}
    for size in SIZES:
        agents = same_event_agents() + other_agents(size - 5)
        build = min(timeit.repeat(lambda agents=agents: TriggerIndex(agents), number=1, repeat=3))
        index = TriggerIndex(agents)
        fired = index.match(envelope)
        assert [c.agent.name for c in fired] == ["pr-review"], fired
        fixed[size] = ns_per_call(lambda index=index: index.match(envelope))
        evaluate = ns_per_call(lambda index=index: index.evaluate(envelope))
        triggers = sum(len(a.triggers) for a in agents)
        print(
            f"{size:>8} {triggers:>9} {len(index.candidates('pull_request')):>10} "
            f"{fixed[size]:>15.0f} {evaluate:>12.0f} {build * 1e3:>9.1f}"
        )
    print(f"ratio 10,000 vs 10 agents: {fixed[10_000] / fixed[10]:.2f}x (target <= 2x)")

    print("\nproportional mix: 1 in 100 of the other agents also listens to pull_request")
    print(f"{'agents':>8} {'candidates':>10} {'match ns/event':>15} {'ns/candidate':>13}")
    for size in SIZES:
        agents = same_event_agents() + other_agents(size - 5, same_every=100)
        index = TriggerIndex(agents)
        count = len(index.candidates("pull_request"))
        cost = ns_per_call(lambda index=index: index.match(envelope))
        print(f"{size:>8} {count:>10} {cost:>15.0f} {cost / count:>13.0f}")


if __name__ == "__main__":
    main()
