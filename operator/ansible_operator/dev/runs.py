"""``ansible-operator runs``: the operator's record of its Ansible runs, in the terminal
(``runs_command`` declares the command line).

``runs [KIND[/NAME]]`` lists runs newest first (when, which replica, the CR, what triggered the
run, its outcome, duration and task counts); ``runs show KIND/NAME [ID]`` draws one run (the
newest by default) as a timeline: a bar per task, placed by when it started and as long as it
took, a failed task marked with its message; ``--follow`` redraws a running run until it ends.
``--output json`` prints what the operator's API says instead. ``runs ui`` serves the runs page
on this machine from every replica's runs, merged (``runs_ui``). The operator is reached by
``runs_client``: at ``--url`` (once per replica), or every replica of it in the cluster of the
user's kubeconfig.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.core import timeline_layout
from ansible_operator.dev import runs_client
from ansible_operator.dev.runs_client import Reach, Replica, Resource, RunsError
from ansible_operator.kube import ConfigError, KubeClient, load_credentials

BAR_WIDTH = 40
FOLLOW_EVERY = 1.0  # seconds between two looks at a running run


def _fail(message: str) -> int:
    print(f"ansible-operator runs: {message}", file=sys.stderr, flush=True)
    return 1


def main(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_main(args))
    except (RunsError, ConfigError) as err:
        return _fail(str(err))
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace) -> int:
    words: list[str] = args.target
    ui = words[:1] == ["ui"]
    if ui:
        _check_ui(words, args)
    elif args.address is not None or args.port is not None:
        raise RunsError("--address and --port go with ui: runs ui [--address A] [--port P]")
    show = words[:1] == ["show"]
    if show and len(words) not in (2, 3):
        raise RunsError("show takes KIND/NAME and, if you like, a run's ID")
    if not show and len(words) > 1:
        raise RunsError(f"unexpected argument {words[1]!r}: runs [KIND[/NAME]]")
    if args.follow and not show:
        raise RunsError("--follow follows one run: runs show KIND/NAME --follow")
    if show and not words[1].partition("/")[2]:
        raise RunsError(f"show takes KIND/NAME, not {words[1]!r}")
    reach = _reach(args)
    async with reach() as reached:
        replicas, known, failures = await runs_client.answering(reached)
        for failure in failures:  # the others' runs are still worth showing
            print(f"ansible-operator runs: skipped: {failure}", file=sys.stderr, flush=True)
        if not ui:
            return await _answer(replicas, known, words, args)
        found = len(reached)
    from ansible_operator.dev import runs_ui  # the runtime's page: only for ui

    address = "127.0.0.1" if args.address is None else args.address
    port = 0 if args.port is None else args.port
    # The replicas are found again at each page load: Pods come and go while it serves.
    return await runs_ui.serve(reach, found, address, port, say=_say)


async def _answer(
    replicas: list[Replica],
    known: dict[runs_client.Kind, set[Resource]],
    words: list[str],
    args: argparse.Namespace,
) -> int:
    """A list of runs, or one run (``show``), as ``words`` ask."""
    show = words[:1] == ["show"]
    kind_word, _, name = (words[1] if show else (words or [""])[0]).partition("/")
    if not kind_word:
        runs = await runs_client.summaries(replicas, [kind.path for kind in known])
        return _list(runs, args)
    kind = runs_client.resolve_kind(known, kind_word)
    if not name:
        return _list(await runs_client.summaries(replicas, [kind.path]), args)
    resource = runs_client.resolve_resource(known[kind], name, args.namespace)
    if not show:
        return _list(await runs_client.summaries(replicas, [resource.path]), args)
    run_id = words[2] if len(words) == 3 else None
    return await _show(replicas, resource, run_id, args)


def _check_ui(words: list[str], args: argparse.Namespace) -> None:
    if len(words) > 1:
        raise RunsError(f"unexpected argument {words[1]!r}: runs ui serves every kind's runs")
    if args.follow or args.namespace is not None or args.output != "text":
        raise RunsError("ui takes no --follow, -n or -o: runs ui [--address A] [--port P]")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise RunsError(f"--port must be 0 (a free one) to 65535, not {args.port}")


def _say(line: str) -> None:
    print(line, flush=True)


def _reach(args: argparse.Namespace) -> Reach:
    """How the command finds the replicas, each time it asks (``runs ui``: at each page load),
    from what the flags say; the kubeconfig is read once, so an exec plugin's token is kept."""
    if args.url:  # one replica each
        if args.kubeconfig or args.operator_namespace:
            raise RunsError("--url names the operator: no --kubeconfig or --operator-namespace")
        for url in args.url:
            if not url.startswith(("http://", "https://")):
                raise RunsError(f"--url must be http://HOST:PORT or https://HOST:PORT, not {url!r}")

        @contextlib.asynccontextmanager
        async def at_urls() -> AsyncIterator[list[Replica]]:
            async with runs_client.replica_session() as session:
                yield [
                    runs_client.url_replica(
                        url, session, token=args.token, insecure=args.insecure_skip_tls_verify
                    )
                    for url in args.url
                ]

        return at_urls
    if args.insecure_skip_tls_verify:
        raise RunsError(
            "--insecure-skip-tls-verify goes with --url: in the cluster the port-forward "
            "reaches the operator's Pod, whose own certificate is not checked"
        )
    namespace = args.operator_namespace or _project_namespace(args.operator_namespace_from)
    creds = load_credentials(kubeconfig=str(args.kubeconfig or ""))

    @contextlib.asynccontextmanager
    async def in_cluster() -> AsyncIterator[list[Replica]]:
        client = KubeClient(creds)
        try:
            async with runs_client.cluster_replicas(
                client, namespace, args.selector, token=args.token
            ) as replicas:
                yield replicas
        finally:
            await client.close()

    return in_cluster


def _project_namespace(where: Path) -> str:
    """The namespace config/default deploys the operator to, in the current project."""
    try:
        namespace = (yaml.safe_load(where.read_text(encoding="utf-8")) or {}).get("namespace")
    except (OSError, yaml.YAMLError, AttributeError):
        namespace = None
    if not isinstance(namespace, str) or not namespace:
        raise RunsError(
            f"which namespace is the operator in? pass --operator-namespace (no namespace "
            f"in {where} here), or --url"
        )
    return namespace


# -- list ------------------------------------------------------------------------------------


def _list(runs: list[dict[str, Any]], args: argparse.Namespace) -> int:
    if args.namespace is not None:
        runs = [run for run in runs if (run.get("namespace") or "") == args.namespace]
    if args.output == "json":
        json.dump({"runs": runs}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_list(runs))
    return 0


COLUMNS = (
    "STARTED",
    "REPLICA",
    "CR",
    "TRIGGER",
    "OUTCOME",
    "DURATION",
    "OK",
    "CHANGED",
    "FAILED",
    "SKIPPED",
    "ID",
)


def _cr(run: dict[str, Any]) -> str:
    where = f"{run['namespace']}/" if run.get("namespace") else ""
    return f"{run['kind']} {where}{run['name']}"


def trigger_text(trigger: dict[str, Any] | None) -> str:
    """``SpecChanged``, or ``DependentChanged Deployment ns/name``."""
    if not trigger:
        return "-"
    text = str(trigger.get("reason") or "-")
    source = trigger.get("object")
    if source:
        where = f"{source['namespace']}/" if source.get("namespace") else ""
        text += f" {source.get('kind', '')} {where}{source.get('name', '')}"
    return text


def render_list(runs: Sequence[dict[str, Any]]) -> str:
    """A table of run summaries, in their order; a line saying so when there are none."""
    if not runs:
        return "no runs\n"
    rows = [list(COLUMNS)]
    for run in runs:
        counts = run.get("counts") or {}
        rows.append(
            [
                timeline_layout.format_time(run["started"]),
                str(run.get("replica") or "-"),
                _cr(run),
                trigger_text(run.get("trigger")),
                str(run.get("outcome") or "-"),
                timeline_layout.format_seconds(run.get("duration")),
                *(str(counts.get(key, 0)) for key in ("ok", "changed", "failed", "skipped")),
                str(run["id"]),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in rows
    )


# -- show ------------------------------------------------------------------------------------


async def _show(
    replicas: list[Replica], resource: Resource, run_id: str | None, args: argparse.Namespace
) -> int:
    found = await runs_client.record(replicas, resource, run_id)
    tty = sys.stdout.isatty() and args.output == "text"
    shown = None
    while True:
        if args.output == "text" and found != shown:
            if tty and shown is not None:
                sys.stdout.write("\x1b[H\x1b[J")  # redrawn in place
            sys.stdout.write(render_run(found))
            sys.stdout.flush()
            shown = found
        if not args.follow or found.get("outcome") != "Running":
            break
        await asyncio.sleep(FOLLOW_EVERY)
        found = await runs_client.record(replicas, resource, str(found["id"]))
    if args.output == "json":
        json.dump(found, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def _bar(bar: timeline_layout.Bar) -> str:
    start = min(int(bar.start * BAR_WIDTH), BAR_WIDTH - 1)
    length = max(1, round(bar.width * BAR_WIDTH))
    length = min(length, BAR_WIDTH - start)
    fill = "░" if bar.status == "running" else "█"
    return (" " * start + fill * length).ljust(BAR_WIDTH)


def render_run(record: dict[str, Any], now: datetime | None = None) -> str:
    """One run: who ran it, why, how it ended, then its tasks as a timeline."""
    laid = timeline_layout.layout(record, now)
    counts = record.get("counts") or {}
    trigger = record.get("trigger") or {}
    outcome = str(record.get("outcome") or "-")
    if record.get("message"):
        outcome += f": {record['message']}"
    lines = [
        f"{_cr(record)}  run {record['id']}  replica {record.get('replica') or '-'}",
        f"trigger   {trigger_text(trigger)}"
        + (f": {trigger['message']}" if trigger.get("message") else ""),
        f"started   {timeline_layout.format_time(record['started'])}  "
        + (
            f"duration {timeline_layout.format_seconds(record.get('duration'))}"
            if record.get("ended")
            else f"running for {timeline_layout.format_seconds(laid.seconds)}"
        ),
        f"outcome   {outcome}",
        "counts    "
        + " ".join(f"{k}={counts.get(k, 0)}" for k in ("ok", "changed", "failed", "skipped")),
        f"ansible   {record.get('ansible') or '-'}",
        "",
        f"  {'0s'.ljust(BAR_WIDTH - 8)}{timeline_layout.format_seconds(laid.seconds):>8}",
    ]
    for bar in laid.bars:
        mark = "✗" if bar.failed else " "
        lines.append(
            f"{mark} {_bar(bar)}  {timeline_layout.format_seconds(bar.seconds):>7}  "
            f"{bar.status:<11} {bar.name}"
        )
        if bar.failed and bar.message:
            lines.extend(f"      {line}" for line in bar.message.splitlines())
    if not laid.bars:
        lines.append("  (no tasks)")
    lines.extend(_write_lines(record))
    return "\n".join(lines) + "\n"


def _write_lines(record: dict[str, Any]) -> list[str]:
    """The objects a run changed with their fields; for a planned run (a CR held for review),
    the ones it would have changed."""
    writes = record.get("writes")
    if not isinstance(writes, dict):
        return []
    planned = record.get("planned") is True
    changing = [obj for obj in writes.get("objects") or [] if obj.get("action") != "none"]
    if not changing and not planned:
        return []
    lines = ["", "planned   nothing written: every write a dry run" if planned else "changed"]
    for obj in changing:
        where = f"{obj['namespace']}/{obj['name']}" if obj.get("namespace") else obj.get("name")
        action = f"would {obj['action']}" if planned else obj["action"]
        lines.append(f"  {action} {obj['kind']} {where}")
        if obj["action"] == "update":
            lines.extend(f"      {field}" for field in obj.get("fields") or [])
    if not changing:
        lines.append("  no object would change")
    return lines
