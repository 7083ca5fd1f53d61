"""``ansible-operator init``: a new operator project, as ``operator-sdk init --plugins=ansible``.

The project's files are the package data under ``templates/init`` (``dot-x`` is written as
``.x``), with ``@{project_name}``, ``@{domain}``, ``@{operator_version}`` and
``@{install_requirement}`` (``source.requirement``), ``@{ansible_core}``, ``@{ansible_package}``
and ``@{kubernetes_core}`` (the chosen core's, ``core.ansible_cores``) filled in, plus the
molecule harness of ``templates/new_api/molecule/common`` and a PROJECT file. This repository is
itself such a project (tests/unit/test_init.py checks that its generic files are these bytes).
Every check runs before the first write, and the files are written into a staging directory
that is moved into place at the end, so bad input or a failed write leaves nothing behind.
"""

from __future__ import annotations

import argparse
import re
import shutil
import string
import sys
import tempfile
from pathlib import Path

from ansible_operator import __version__
from ansible_operator.core import ansible_cores
from ansible_operator.scaffold import new_api, project_file, source

TEMPLATES = Path(__file__).parent / "templates"
ALLOWED_ENTRIES = {".git"}  # what may be in the directory before init
# operator-sdk init --plugins values that name an Ansible project, the kind made here.
PLUGINS = ("ansible", "ansible/v1", "ansible.sdk.operatorframework.io/v1")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class InitError(Exception):
    """Bad input or a directory init cannot fill; one line."""


class _Template(string.Template):
    delimiter = "@"  # Ansible, make and shell already use $ and {{ }}


def check_domain(domain: str) -> None:
    """kubebuilder's rule: a DNS-1123 subdomain (the groups are `<group>.<domain>`)."""
    if len(domain) > 253 or not _DNS_SUBDOMAIN.match(domain):
        raise InitError(
            f"invalid domain {domain!r}: a lowercase DNS subdomain (letters, digits, '-' and '.',"
            " starting and ending with a letter or digit), for example example.com"
        )


def check_project_name(name: str, *, from_directory: bool) -> None:
    """kubebuilder's rule: a DNS-1123 label (it prefixes the names of the operator's objects)."""
    if len(name) > 63 or not _DNS_LABEL.match(name):
        where = " (the directory's name; give --project-name)" if from_directory else ""
        raise InitError(
            f"invalid project name {name!r}{where}: a lowercase DNS label (letters, digits and "
            "'-', starting and ending with a letter or digit, at most 63 characters)"
        )


def check_empty(project: Path) -> None:
    if not project.is_dir():
        raise InitError(f"{project} is not a directory")
    in_the_way = sorted(p.name for p in project.iterdir() if p.name not in ALLOWED_ENTRIES)
    if in_the_way:
        raise InitError(f"{project} is not empty (only .git may be there): {', '.join(in_the_way)}")


def check_core(name: str) -> ansible_cores.Core:
    core = ansible_cores.named(name)
    if core is None:
        raise InitError(f"--ansible-core={name}: choose one of {', '.join(ansible_cores.NAMES)}")
    return core


def files(
    project_name: str, domain: str, core: ansible_cores.Core = ansible_cores.NEWEST
) -> dict[str, str]:
    """Every file of a new project, its image and virtualenv on `core`: relative path -> text."""
    values = {
        "project_name": project_name,
        "domain": domain,
        "operator_version": __version__,
        # what installs this very runtime again (the README's first step)
        "install_requirement": source.requirement(source.direct_url(), __version__),
        "ansible_core": core.name,
        "ansible_package": core.package,
        "kubernetes_core": core.kubernetes_core,
    }
    out = {}
    root = TEMPLATES / "init"
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            parts = path.relative_to(root).parts  # dot-gitignore is .gitignore
            rel = "/".join("." + p[4:] if p.startswith("dot-") else p for p in parts)
            text = path.read_text(encoding="utf-8")
            out[rel] = _Template(text).safe_substitute(values)
    common = TEMPLATES / "new_api/molecule/common"
    for name in new_api.MOLECULE_COMMON:
        out[f"molecule/common/{name}"] = (common / name).read_text(encoding="utf-8")
    out["PROJECT"] = project_file.render(domain, project_name)
    return out


def write(project: Path, texts: dict[str, str]) -> None:
    """All of `texts` under `project`, or (on an error) nothing."""
    stage = Path(tempfile.mkdtemp(dir=project, prefix=".init-"))
    try:
        for rel, text in texts.items():
            path = stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for entry in sorted(stage.iterdir()):
            entry.rename(project / entry.name)
    except OSError:
        for entry in sorted(stage.iterdir()):
            shutil.rmtree(project / entry.name, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "init",
        help="start a new operator project in an empty directory (like operator-sdk init "
        "--plugins=ansible)",
        description="Write a new operator project into the current (empty) directory: PROJECT, "
        "watches.yaml, requirements.yml, roles/, playbooks/, Dockerfile, Makefile, config/ "
        "(crd, default, manager, rbac, prometheus, grafana, samples, testing), the molecule "
        "harness, the alerts' runbook (docs/alerts.md), .gitignore, .ansible-lint and a "
        "README. With --group, --version and --kind it then adds that kind, as new-api does.",
        epilog="examples:\n"
        "  mkdir memcached-operator && cd memcached-operator\n"
        "  ansible-operator init --domain example.com\n"
        "  ansible-operator init --domain example.com --group cache --version v1alpha1 "
        "--kind Memcached",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--plugins",
        default=PLUGINS[0],
        help="operator-sdk's project kind: only ansible (ansible.sdk.operatorframework.io/v1) "
        "is made here",
    )
    parser.add_argument(
        "--domain",
        default="my.domain",
        help="the domain of the API groups, appended to a kind's group "
        "(default: %(default)s, as operator-sdk)",
    )
    parser.add_argument(
        "--project-name",
        help="the project's name, a DNS label; prefixes its objects' names "
        "(default: the directory's name)",
    )
    parser.add_argument(
        "--ansible-core",
        default=ansible_cores.NEWEST.name,
        help="the ansible-core of the project's image and virtualenv, one of "
        f"{', '.join(ansible_cores.NAMES)} (default: %(default)s, the "
        f"newest; {ansible_cores.DEFAULT.name} is upstream's image's, for an operator ported "
        "from it)",
    )
    parser.add_argument("--group", help="with --version and --kind: add this kind (new-api)")
    parser.add_argument("--version", help="with --group and --kind: e.g. v1alpha1")
    parser.add_argument("--kind", help="with --group and --version: CamelCase, e.g. Memcached")
    parser.add_argument(
        "--generate-playbook",
        type=new_api.parse_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="true|false",
        help="with --kind: also a playbook for the kind, which the watch runs (default: false)",
    )
    parser.set_defaults(handler=run)


def _fail(message: str) -> int:
    print(f"ansible-operator init: {message}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    project = Path.cwd()
    if args.plugins not in PLUGINS:
        return _fail(
            f"--plugins={args.plugins}: this tool makes Ansible operators only "
            f"(--plugins=ansible or {PLUGINS[-1]}); for another kind, use operator-sdk"
        )
    api_args = (args.group, args.version, args.kind)
    if any(api_args) and not all(api_args):
        return _fail("--group, --version and --kind go together (to add a kind)")
    if args.generate_playbook and not args.kind:
        return _fail("--generate-playbook needs --group, --version and --kind")
    try:
        check_domain(args.domain)
        core = check_core(args.ansible_core)
        name = args.project_name or project.name
        check_project_name(name, from_directory=args.project_name is None)
        api = None
        if args.kind:
            api = new_api.resolve(
                args.group,
                args.version,
                args.kind,
                domain=args.domain,
                plural=None,
                playbook=args.generate_playbook,
                project=project,
            )
        check_empty(project)
        write(project, files(name, args.domain, core))
    except (InitError, new_api.NewApiError) as err:
        return _fail(str(err))
    except OSError as err:
        return _fail(f"cannot write the project in {project}: {err.strerror or err}")
    print(f"wrote the project {name} (domain {args.domain}, ansible-core {core.name}) in {project}")
    if api is not None:
        return new_api.run_resolved(project, project / "watches.yaml", api)
    print(
        "next: ansible-operator new-api --group <group> --version <version> --kind <Kind>",
        file=sys.stderr,
    )
    return 0
