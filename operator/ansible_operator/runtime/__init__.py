"""``ansible-operator run``: flags, the manager, leader election, controllers and their work
queues, the reconcile contract, the reconciler, status, Events, dependent watches, metrics and
logs.

Other layers use ``manager.main`` (the command), ``flag_names`` (for shell completion) and
``runs_page`` (the runs page, which ``ansible-operator runs ui`` serves from every replica).
"""

from ansible_operator.runtime import manager, runs_page
from ansible_operator.runtime.flags import flag_names

__all__ = ["flag_names", "manager", "runs_page"]
