"""Per-process costs of warm runs, for bench/warm_run_costs.py, which puts this directory on the
operator's PYTHONPATH (never on a product's): Python imports `sitecustomize` at start-up, so the
operator's fork server loads this and every fork of it inherits it.

A warm run's processes all end with `os._exit`: ansible-runner's and ansible-playbook's forks
(runner.warm.program.run_as_program), Ansible's workers (multiprocessing) and module forks. Each
first writes `<CPU seconds> <minor faults> <kind>` to `$WARM_RUN_COSTS_DIR/<pid>`; the directory is
read once here, as a run's forks replace their environment with the run's.
"""

from __future__ import annotations

import os
import resource
import sys
from typing import NoReturn

_DIRECTORY = os.environ.get("WARM_RUN_COSTS_DIR")
_exit = os._exit


def kind() -> str:
    if os.environ.get("ANSIBLE_OPERATOR_WARM_MODULE"):
        return "module fork"
    process = sys.modules.get("multiprocessing.process")
    current = process.current_process() if process is not None else None
    if type(current).__name__ == "WorkerProcess":
        return "Ansible worker"
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    return program if program in ("ansible-runner", "ansible-playbook") else "other"


def reporting_exit(status: int) -> NoReturn:
    try:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open(os.path.join(str(_DIRECTORY), str(os.getpid())), "w") as report:
            report.write(f"{usage.ru_utime + usage.ru_stime} {usage.ru_minflt} {kind()}\n")
    except OSError:
        pass  # the report is lost, the process still ends as it asked
    _exit(status)


if _DIRECTORY:
    os._exit = reporting_exit
