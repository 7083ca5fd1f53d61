"""``ansible-operator run``, in four packages by job, each importing only from those below it:

- ``manager``: the command (``prepare``: the user's input read and checked; ``Operator``: the
  parts wired into groups of runnables, started in order and stopped backwards), leader
  election, shards, readiness, the conversion webhook, the graceful shutdown;
- ``control``: the way a CR flows: sources and handlers, controllers and their work queues, the
  reconcile contract, the reconciler, the run session, status, finalizers, the dependent and
  related watches, the run gate;
- ``observe``: what the operator tells: logs, metrics, traces, Events, the run observers;
- ``config``: the settings and the command line that gives them.

Other layers use ``main`` (the command), ``flag_names`` (for shell completion), and for
``ansible-operator plan`` what a run needs outside the operator: the settings
(``build_run_settings``), the credentials as ``run`` checks them (``checked_credentials``), the
watches selected as ``run`` selects them (``select_watches``), a runner made ready
(``start_ansible``) and a ``RunSession`` with its ``Observers``.
"""

from ansible_operator.runtime.config.flags import build_run_settings, flag_names
from ansible_operator.runtime.config.settings import SettingsError
from ansible_operator.runtime.control.session import RunSession
from ansible_operator.runtime.manager.conversion_webhook import WebhookError, select_watches
from ansible_operator.runtime.manager.operator import StartupError, checked_credentials, main
from ansible_operator.runtime.manager.parts import start_ansible
from ansible_operator.runtime.observe.run_observers import Observers

__all__ = [
    "Observers",
    "RunSession",
    "SettingsError",
    "StartupError",
    "WebhookError",
    "build_run_settings",
    "checked_credentials",
    "flag_names",
    "main",
    "select_watches",
    "start_ansible",
]
