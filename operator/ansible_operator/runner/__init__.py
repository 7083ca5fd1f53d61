"""Running Ansible for a reconcile: input dir, process, events, outcome; nothing about Kubernetes.

Callers build a `RunRequest` from plain values and await `Runner.run()`; `ColdRunner` starts one
ansible-runner process per run, and a pool of warm processes can implement the same protocol.
"""

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
)
from ansible_operator.runner.logging_events import (
    EventLogger,
    LogEventsMode,
    log_debug_result,
    log_stats_stdout,
)
from ansible_operator.runner.process import ColdRunner, find_ansible_runner
from ansible_operator.runner.types import (
    AnsibleRunnerNotFound,
    EventCallback,
    Runner,
    RunnerError,
    RunRequest,
    RunResult,
)

__all__ = [
    "DEFAULT_BASE_DIR",
    "AnsibleResult",
    "AnsibleRunnerNotFound",
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
    "find_ansible_runner",
    "input_dir_path",
    "log_debug_result",
    "log_stats_stdout",
    "new_ident",
    "prepare_input_dir",
    "remove_input_dir",
    "summarize",
]
