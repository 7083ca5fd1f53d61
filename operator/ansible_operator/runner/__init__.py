"""Running Ansible for a reconcile: input dir, process, events, outcome; nothing about Kubernetes.

Callers build a `RunRequest` from plain values and await `Runner.run()`; `ColdRunner` starts one
ansible-runner process per run, `WarmRunner` forks each run from a process kept warm.
Other layers use the names below (`versions` is a namespace: what the runs use).
"""

from ansible_operator.runner import versions
from ansible_operator.runner.events import (
    AnsibleResult,
    EventSummary,
    FailedTask,
    RunOutcome,
    summarize,
)
from ansible_operator.runner.inputdir import (
    DEFAULT_BASE_DIR,
    InputDirError,
    input_dir_path,
    new_ident,
    prepare_input_dir,
    remove_input_dir,
    strip_ansible_args,
)
from ansible_operator.runner.logging_events import (
    EventLogger,
    LogEventsMode,
    log_debug_result,
    log_stats_stdout,
)
from ansible_operator.runner.output import strip_ansi, without_lines
from ansible_operator.runner.process import ColdRunner, find_ansible_runner
from ansible_operator.runner.timeline import TaskRun, Timeline
from ansible_operator.runner.types import (
    AnsibleRunnerNotFound,
    EventCallback,
    Runner,
    RunnerError,
    RunRequest,
    RunResult,
)
from ansible_operator.runner.versions import AnsibleVersions
from ansible_operator.runner.warm import warm_playbook_process
from ansible_operator.runner.warm.client import WarmRunner
from ansible_operator.runner.warm.notices import REASONS as WARM_FALLBACK_REASONS
from ansible_operator.runner.warm.notices import Notice as WarmNotice

__all__ = [
    "DEFAULT_BASE_DIR",
    "WARM_FALLBACK_REASONS",
    "AnsibleResult",
    "AnsibleRunnerNotFound",
    "AnsibleVersions",
    "ColdRunner",
    "EventCallback",
    "EventLogger",
    "EventSummary",
    "FailedTask",
    "InputDirError",
    "LogEventsMode",
    "RunOutcome",
    "RunRequest",
    "RunResult",
    "Runner",
    "RunnerError",
    "TaskRun",
    "Timeline",
    "WarmNotice",
    "WarmRunner",
    "find_ansible_runner",
    "input_dir_path",
    "log_debug_result",
    "log_stats_stdout",
    "new_ident",
    "prepare_input_dir",
    "remove_input_dir",
    "strip_ansi",
    "strip_ansible_args",
    "summarize",
    "versions",
    "warm_playbook_process",
    "without_lines",
]
