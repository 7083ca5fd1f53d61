"""``ansible-operator run``: flags, the manager, leader election, controllers and their work
queues, the reconcile contract, the reconciler, status, Events, dependent watches, metrics and
logs."""
