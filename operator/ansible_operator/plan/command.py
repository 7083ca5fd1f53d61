"""``ansible-operator plan [KIND[/NAME]] [-n NAMESPACE | -A] [--watches-file FILE] [-o text|json]``

For one CR, the CRs of a kind, or every CR the watches file covers, in one namespace (the
kubeconfig context's, else ``default``) or all: the role or playbook runs as ``ansible-operator
run`` would run it, with the same watches, extra vars, flags and environment (``--runner``, the
``ANSIBLE_*`` variables; relative roles and playbooks found from the watches file's directory),
but planned (``RunSession.plan``): check and diff modes, and every write
a dry run. The answer per CR is the objects it would create, update or delete with the fields
that change, the tasks that would report a change, and why it would fail. With the watches file
of a new version of the operator (its roles beside it), the same answers preview an upgrade.

Exit code as ``terraform plan -detailed-exitcode``: 0 nothing would change, 2 something would,
1 an error (a run that would fail, or a plan that could not be made: one line).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ansible_operator.core import CRPlan, Watch, WatchesError, objects, plan, triggers
from ansible_operator.kube import (
    ApiError,
    Discovery,
    KubeClient,
    ResourceInfo,
    Unreachable,
    list_pages,
)
from ansible_operator.project import load_watches
from ansible_operator.proxy import Proxy, ProxyStartError
from ansible_operator.runner import ColdRunner, RunnerError, WarmRunner
from ansible_operator.runtime import (
    Observers,
    RunSession,
    SettingsError,
    StartupError,
    WebhookError,
    build_run_settings,
    checked_credentials,
    select_watches,
    start_ansible,
)

PAGE = 500


class PlanError(Exception):
    """The plan cannot be made; one line."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="what the operator would change, without changing it (check mode, dry-run writes)",
        description=__doc__.split("\n\n")[1],
    )
    parser.add_argument(
        "target",
        nargs="?",
        default="",
        metavar="KIND[/NAME]",
        help="a kind of the watches file (Kind, kind, plural or kind.group), with a CR's name; "
        "every watched kind when left out",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-n",
        "--namespace",
        default="",
        help="the CRs' namespace (default: the kubeconfig context's, else default)",
    )
    where.add_argument(
        "-A", "--all-namespaces", action="store_true", help="the CRs of every namespace"
    )
    parser.add_argument(
        "--watches-file",
        default="./watches.yaml",
        help="the operator's watches file; its roles and playbooks found as `run` finds them "
        "(another version's file previews an upgrade; default: %(default)s)",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="default: text"
    )
    parser.add_argument(
        "--runner",
        choices=("warm", "cold"),
        default="warm",
        help="warm or cold, as for `run` (default: warm)",
    )
    parser.add_argument(
        "--kubeconfig",
        default="",
        help="default: $KUBECONFIG, else ~/.kube/config, else in-cluster",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    try:
        plans = asyncio.run(_plan(args))
    except PlanError as err:
        print(f"ansible-operator plan: {err}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps([item.to_json() for item in plans], indent=2))
    else:
        sys.stdout.write(plan.render_text(plans))
    return plan.exit_code(plans)


async def _plan(args: argparse.Namespace) -> list[CRPlan]:
    argv = ["--watches-file", args.watches_file, "--runner", args.runner]
    if args.kubeconfig:
        argv += ["--kubeconfig", args.kubeconfig]
    try:
        settings = build_run_settings(argv)
        # Relative roles and playbooks from the file's directory: another version's
        # checkout previews an upgrade with its own roles (./watches.yaml: as `run` finds them).
        watches_file = Path(settings.watching.watches_file)
        watches, _ = select_watches(
            load_watches(watches_file, environ=settings.ansible_environ(), cwd=watches_file.parent)
        )
        creds = checked_credentials(settings.api.kubeconfig)
    except (SettingsError, WatchesError, WebhookError, StartupError) as err:
        raise PlanError(str(err)) from None
    kind, _, name = args.target.partition("/")
    namespace = "" if args.all_namespaces else args.namespace or creds.namespace or "default"

    client = KubeClient(creds)
    discovery = Discovery(client)
    proxy = Proxy(
        creds,
        client=client,
        port=0,
        inject_owner_refs=settings.proxy.inject_owner_ref,
        discovery=discovery,
    )
    kind_of_runner = WarmRunner if settings.ansible.runner == "warm" else ColdRunner
    runner = kind_of_runner(environ=settings.ansible_environ())
    base = Path(tempfile.mkdtemp(prefix="ansible-operator-plan-"))
    try:
        await proxy.start()
        chosen = [
            (watch, resource)
            for watch in watches
            for resource in [await discovery.resource(watch.gvk.api_version, watch.gvk.kind)]
            if not kind or _names(resource, kind)
        ]
        if not chosen:
            known = ", ".join(sorted(watch.gvk.kind for watch in watches))
            raise PlanError(f"{kind}: not a kind of {args.watches_file} (it watches {known})")
        await start_ansible(runner)
        plans: list[CRPlan] = []
        for watch, resource in chosen:
            gvk = watch.gvk
            session = RunSession(
                watch,
                runner=runner,
                proxy=proxy,
                settings=settings,
                observers=Observers([]),
                runner_base=base,
            )
            crs = await _crs(client, resource, watch, namespace, name)
            plans.extend(await _planned(session, crs, settings.max_concurrent_reconciles_for(gvk)))
        if name and not plans:
            where = f" in {namespace}" if namespace else ""
            raise PlanError(f"{kind}/{name}: not found{where}")
        return plans
    except (ApiError, Unreachable, RunnerError, ProxyStartError) as err:
        raise PlanError(str(err)) from None
    finally:
        await proxy.stop()
        if isinstance(runner, WarmRunner):
            runner.close()
        await client.close()
        shutil.rmtree(base, ignore_errors=True)


async def _planned(
    session: RunSession, crs: Sequence[dict[str, Any]], workers: int
) -> list[CRPlan]:
    """Each CR's plan, in the order given, as many at once as the operator's workers for the
    kind would run (``--max-concurrent-reconciles``)."""
    room = asyncio.Semaphore(max(1, workers))

    async def one(cr: dict[str, Any]) -> CRPlan:
        deleting = bool(objects.metadata(cr).get("deletionTimestamp"))
        async with room:
            return await session.plan(
                cr, triggers.NONE_KNOWN, finalizing=deleting and session.watch.finalizer is not None
            )

    try:
        async with asyncio.TaskGroup() as group:  # one that raises cancels the others
            tasks = [group.create_task(one(cr)) for cr in crs]
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]


def _names(resource: ResourceInfo, word: str) -> bool:
    """Whether ``word`` names the kind as kubectl takes it: its kind or plural, with or without
    its group, in any case."""
    names = (resource.kind.lower(), resource.plural.lower())
    return word.lower() in (*names, *(f"{name}.{resource.group}" for name in names))


async def _crs(
    client: KubeClient, resource: ResourceInfo, watch: Watch, namespace: str, name: str
) -> Sequence[dict[str, Any]]:
    """The CRs to plan, in the order listed: those the watch's selector takes."""
    where = namespace if resource.namespaced and namespace else None
    if name:
        try:
            found = [await client.get(resource.path(where, name))]
        except ApiError as err:
            if err.status == 404:
                return []
            raise
    else:
        found = []
        selector = watch.selector
        params = {} if selector.is_empty else {"labelSelector": selector.to_query()}
        async for page in list_pages(client, resource.path(where), PAGE, params=params):
            found.extend(item for item in page.get("items") or [] if isinstance(item, dict))
    api_version = watch.gvk.api_version
    for item in found:  # a list's items come without their kind
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", watch.gvk.kind)
    return [item for item in found if watch.selector.matches(objects.labels(item))]
