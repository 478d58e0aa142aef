"""Render and compile rates of a 3-token ref template, against str.format in the same run."""

from __future__ import annotations

import platform
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

# Run as a script (`python bench/bench_render.py`): import the tree this file is in.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from templating import Dialect, compile_template
from templating.tokens import _path_or_reason

SOURCE = (
    "refs/pull/{{ payload.github.pullRequest.number }}/"
    "{{ payload.github.pullRequest.head.sha }}/{{ triggerEventId }}"
)
FORMAT = "refs/pull/{}/{}/{}"
CONTEXT = {
    "triggerEventId": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "payload": {
        "github": {
            "event": "pull_request",
            "pullRequest": {
                "number": 1347,
                "head": {"sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
            },
        }
    },
}


def rate(call: Callable[[], object], seconds: float = 1.0) -> float:
    """Calls per second: best of 5 runs of about ``seconds / 5`` each."""
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    number = max(1, int(number * seconds / 5 / 0.2))
    return number / min(timer.repeat(repeat=5, number=number))


def main() -> None:
    template = compile_template(SOURCE, Dialect.REF)
    pr = CONTEXT["payload"]["github"]["pullRequest"]  # type: ignore[index]
    number, sha, event_id = pr["number"], pr["head"]["sha"], CONTEXT["triggerEventId"]
    expected = FORMAT.format(number, sha, event_id)
    assert template.render(CONTEXT) == expected

    def with_lookups() -> str:
        payload = CONTEXT["payload"]["github"]["pullRequest"]  # type: ignore[index]
        return FORMAT.format(payload["number"], payload["head"]["sha"], CONTEXT["triggerEventId"])

    def cold_compile() -> object:
        _path_or_reason.cache_clear()
        return compile_template(SOURCE, Dialect.REF)

    render = rate(lambda: template.render(CONTEXT))
    plain = rate(lambda: FORMAT.format(number, sha, event_id))
    looked_up = rate(with_lookups)
    compile_warm = rate(lambda: compile_template(SOURCE, Dialect.REF))
    compile_cold = rate(cold_compile)

    print(f"python {platform.python_version()} on {platform.machine()}")
    print(f"template: {SOURCE}")
    print(f"render (3 tokens)                    {render:12,.0f} renders/s")
    print(f"str.format, values pre-extracted     {plain:12,.0f} formats/s")
    print(f"str.format, with the same dict walks {looked_up:12,.0f} formats/s")
    print(f"ratio str.format/render              {plain / render:12.1f}x")
    print(f"ratio (str.format + lookups)/render  {looked_up / render:12.1f}x")
    print(f"compile, token parse cached          {compile_warm:12,.0f} compiles/s")
    print(f"compile, cold (jinja2 parse each)    {compile_cold:12,.0f} compiles/s")


if __name__ == "__main__":
    main()
