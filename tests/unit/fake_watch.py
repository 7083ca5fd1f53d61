"""A scripted API server for list+watch loops (the informer, the dependent watches): lists and
watch streams are answered in order from a script, anything unscripted waits forever."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any


class FakeClient:
    def __init__(self, discovery: dict[str, Any] | None = None) -> None:
        self.lists: list[dict | Exception] = []
        self.streams: list[list[dict] | Exception] = []
        self.paths: dict[str, Any] = {}  # fixed answers, recorded in calls
        self.discovery = discovery or {}  # fixed answers, not recorded
        self.calls: list[tuple[str, str, dict]] = []
        self.watching = asyncio.Event()  # set once every scripted stream is used up

    async def get(self, path: str, params: dict | None = None) -> Any:
        return await self.request("GET", path, params=params)

    async def request(self, method, path, *, params=None, headers=None, **_: Any) -> Any:
        if path in self.discovery and path not in self.paths:
            return self.discovery[path]
        self.calls.append((method, path, dict(params or {})))
        if path in self.paths:
            value = self.paths[path]
            if isinstance(value, Exception):
                raise value
            return value
        if self.lists:
            answer = self.lists.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer
        await asyncio.Event().wait()

    async def watch(self, path: str, params: dict, *, read_timeout: float) -> AsyncIterator[dict]:
        self.calls.append(("WATCH", path, dict(params)))
        if not self.streams:
            self.watching.set()
            await asyncio.Event().wait()
        script = self.streams.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event


def page(*items: dict, rv: str = "10", cont: str | None = None) -> dict:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"kind": "List", "metadata": meta, "items": list(items)}


def ev(kind: str, obj: dict) -> dict:
    return {"type": kind, "object": obj}
