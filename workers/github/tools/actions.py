"""The Actions tools: runs, jobs and workflows read, the reruns, and the names of secrets."""

from __future__ import annotations

from typing import Any

from agents.github_tool_arguments import whole_number, workflow
from workers.github.tools.arguments import (
    Args,
    BadArguments,
    method_arg,
    number_given,
    optional_int,
    pages,
    passed,
    required_int,
)
from workers.github.tools.request import ToolCall


def _runs_filter(args: Args) -> dict[str, Any]:
    given = args.get("workflow_runs_filter") or {}
    if not isinstance(given, dict):
        raise BadArguments(
            "argument 'workflow_runs_filter' must be an object", argument="workflow_runs_filter"
        )
    return passed(given, "actor", "branch", "event", "status")


def actions_list(call: ToolCall, args: Args) -> Any:
    method = method_arg(args)
    pages = {"page": optional_int(args, "page"), "per_page": optional_int(args, "per_page")}
    named = args.get("resource_id")
    if method == "list_workflows":
        return call.json("GET", ("actions", "workflows"), params=pages)
    if method == "list_workflow_runs":
        path: tuple[str | int, ...] = (
            ("actions", "workflows", workflow(named, "resource_id"), "runs")
            if named not in (None, "")
            else ("actions", "runs")
        )
        return call.json("GET", path, params={**_runs_filter(args), **pages})
    run = whole_number(number_given(named), "resource_id")
    if method == "list_workflow_jobs":
        jobs = args.get("workflow_jobs_filter") or {}
        filtered = passed(jobs, "filter") if isinstance(jobs, dict) else {}
        return call.json("GET", ("actions", "runs", run, "jobs"), params={**filtered, **pages})
    return call.json("GET", ("actions", "runs", run, "artifacts"), params=pages)


def _location(call: ToolCall, path: tuple[str | int, ...]) -> str:
    """Where GitHub redirects a download (a log, an artifact): that URL."""
    response = call.send("GET", path)
    return str(response.headers.get("location") or "")


def actions_get(call: ToolCall, args: Args) -> Any:
    method = method_arg(args)
    named = args.get("resource_id")
    if method == "get_workflow":
        return call.json(
            "GET", ("actions", "workflows", workflow(number_given(named), "resource_id"))
        )
    number = whole_number(number_given(named), "resource_id")
    if method == "get_workflow_run":
        return call.json("GET", ("actions", "runs", number))
    if method == "get_workflow_job":
        return call.json("GET", ("actions", "jobs", number))
    if method == "get_workflow_run_usage":
        return call.json("GET", ("actions", "runs", number, "timing"))
    if method == "get_workflow_run_logs_url":
        url = _location(call, ("actions", "runs", number, "logs"))
        return {"run_id": number, "logs_url": url}
    url = _location(call, ("actions", "artifacts", number, "zip"))
    return {"artifact_id": number, "download_url": url}


def list_workflow_runs(call: ToolCall, args: Args) -> Any:
    named = args.get("workflow_id")
    path: tuple[str | int, ...] = (
        ("actions", "workflows", workflow(named, "workflow_id"), "runs")
        if named is not None
        else ("actions", "runs")
    )
    params = {**passed(args, "actor", "branch", "event", "status"), **pages(args)}
    return call.json("GET", path, params=params)


def _rerun(call: ToolCall, run: int, failed_only: bool) -> dict[str, Any]:
    action = "rerun-failed-jobs" if failed_only else "rerun"
    call.send("POST", ("actions", "runs", run, action))
    what = "failed jobs of the workflow run" if failed_only else "workflow run"
    return {"message": f"The {what} have been queued to re-run", "run_id": run}


def actions_run_trigger(call: ToolCall, args: Args) -> Any:
    """The reruns only: the gate refuses the server's other methods (`run_workflow`,
    `cancel_workflow_run`, `delete_workflow_run_logs`) before this runs."""
    method = method_arg(args)
    if method not in ("rerun_workflow_run", "rerun_failed_jobs"):
        raise BadArguments(f"method {method!r}: hookspawn runs only the reruns", argument="method")
    return _rerun(call, required_int(args, "run_id"), method == "rerun_failed_jobs")


def rerun_failed_jobs(call: ToolCall, args: Args) -> Any:
    return _rerun(call, required_int(args, "run_id"), True)


def rerun_workflow_run(call: ToolCall, args: Args) -> Any:
    return _rerun(call, required_int(args, "run_id"), False)


def rerun_failed_jobs_for_pr_head(call: ToolCall, args: Args) -> Any:
    """Every failed run of the pull request's head commit: its failed jobs re-run."""
    pull = call.json("GET", ("pulls", required_int(args, "pullNumber")))
    sha = str(pull["head"]["sha"])
    found = call.json("GET", ("actions", "runs"), params={"head_sha": sha, "per_page": 100})
    failed = [
        r
        for r in found.get("workflow_runs") or ()
        if r.get("conclusion") in ("failure", "timed_out", "cancelled", "startup_failure")
    ]
    for run in failed:
        _rerun(call, whole_number(run.get("id"), "run_id"), True)
    return {"head_sha": sha, "rerun": [r["id"] for r in failed]}


def actions_secret_list(call: ToolCall, args: Args) -> Any:
    """The names and timestamps of the repository's secrets; GitHub never answers values."""
    return call.json("GET", ("actions", "secrets"), params=pages(args))
