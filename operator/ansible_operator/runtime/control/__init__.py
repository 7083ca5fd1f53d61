"""The way a CR flows: sources (``sources``) deliver events to handlers (``handlers``) that ask
the controller (``controller``, ``workqueue``) for reconciles; the reconciler (``reconciler``,
after the contract in ``reconcile``) runs the role through a session (``session``) past the run
gate (``gate``) and writes ``status`` and ``finalizers``; ``dependents`` and ``related`` watch
the kinds a role writes and the kinds a watch names.
"""
