"""Sources, in controller-runtime's shape: one informer (``kube/informer.py``) per kind and
scope, whose events go to its handlers in order (``handlers``).

Every watch of the operator is a source made here, so each counts its events in
``ansible_operator_watch_events_total`` and reports the objects it skips (a log line, the
``ansible_operator_watch_objects_skipped_total`` metric and a Warning Event on the object) the
same way: the watched kinds' own (their events feed the related index, then the controller),
the dependents' (added as kinds appear) and the related resources'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_operator.core import GVK
from ansible_operator.kube import Discovery, Informer, KubeClient, Skipped
from ansible_operator.runtime.control.handlers import Handler


class Sources:
    def __init__(
        self,
        client: KubeClient,
        discovery: Discovery,
        *,
        namespaces: tuple[str, ...] = (),  # the watched namespaces; () for all
        count: Callable[[GVK], None] | None = None,  # the events of each kind; None: uncounted
        skipped: Callable[[GVK], Skipped] | None = None,  # None: a skipped object only logged
        max_backoff: float = 30.0,
        page_size: int = 500,
    ) -> None:
        self.client = client
        self.discovery = discovery
        self.namespaces = namespaces
        self._count = count
        self._skipped = skipped
        self._max_backoff = max_backoff
        self._page_size = page_size

    def scopes(self) -> list[str | None]:
        """One scope per watched namespace, or None for every namespace."""
        return list(self.namespaces) or [None]

    def kind(
        self,
        gvk: GVK,
        handlers: Sequence[Handler],
        *,
        namespace: str | None,
        params: Callable[[], Mapping[str, str]] | None = None,
        server_timeout: int = 300,
    ) -> Informer:
        """The source of ``gvk`` in one scope (None: every namespace, or a cluster-scoped
        kind); each event goes to every handler, in order."""

        def handle(event_type: str, obj: dict[str, Any]) -> None:
            for handler in handlers:
                handler(event_type, obj)

        count = self._count
        return Informer(
            self.client,
            self.discovery,
            gvk,
            namespace=namespace,
            handler=handle,
            count=(lambda: count(gvk)) if count is not None else None,
            skipped=self._skipped(gvk) if self._skipped is not None else None,
            params=params,
            server_timeout=server_timeout,
            max_backoff=self._max_backoff,
            page_size=self._page_size,
        )
