"""The two verbs the runtime's writers need of an API client, as a protocol.

The reconciler, the status writer, the finalizer patches and the Event recorder only read and
write objects by path; typing them against this protocol rather than ``KubeClient`` lets the
unit tests give them an in-memory API server instead of a real one.
"""

from __future__ import annotations

from typing import Any, Protocol


class Api(Protocol):
    async def get(self, path: str, params: dict[str, str] | None = None) -> Any: ...

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any: ...
