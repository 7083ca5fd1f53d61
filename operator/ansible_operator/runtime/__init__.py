"""``ansible-operator run``: flags, the manager, leader election, controllers and their work
queues, the reconcile contract, the reconciler, status, Events, dependent watches, metrics and
logs.

Other layers use ``manager.main`` (the command), ``flag_names`` (for shell completion), and
for ``ansible-operator plan`` what a run needs outside the operator: the settings
(``build_run_settings``), the credentials as ``run`` checks them (``checked_credentials``), the
watches selected as ``run`` selects them (``select_watches``), a
runner made ready (``start_ansible``) and a ``RunSession`` with its ``Observers``.
"""

from ansible_operator.runtime import manager
from ansible_operator.runtime.conversion_webhook import WebhookError, select_watches
from ansible_operator.runtime.flags import SettingsError, build_run_settings, flag_names
from ansible_operator.runtime.manager import StartupError, checked_credentials
from ansible_operator.runtime.parts import start_ansible
from ansible_operator.runtime.run_observers import Observers
from ansible_operator.runtime.session import RunSession

__all__ = [
    "Observers",
    "RunSession",
    "SettingsError",
    "StartupError",
    "WebhookError",
    "build_run_settings",
    "checked_credentials",
    "flag_names",
    "manager",
    "select_watches",
    "start_ansible",
]
