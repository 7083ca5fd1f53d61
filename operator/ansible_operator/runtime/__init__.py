"""``ansible-operator run``: flags, the manager, leader election, controllers and their work
queues, the reconcile contract, the reconciler, status, Events, dependent watches, metrics and
logs.

Other layers use ``manager.main`` (the command) and ``flag_names`` (for shell completion).
"""

from ansible_operator.runtime import manager
from ansible_operator.runtime.flags import flag_names

__all__ = ["flag_names", "manager"]
