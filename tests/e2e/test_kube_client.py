"""The kube layer's client against the real API server, for what holds connections open."""

from __future__ import annotations

import asyncio

import pytest

from ansible_operator.kube import KubeClient, load_credentials

pytestmark = pytest.mark.e2e

WATCHES = 110  # more than aiohttp pools by default (100)


def test_a_client_holding_many_watches_still_answers(cluster, namespace):
    """An operator opens a watch per kind and watched namespace on one client, each holding a
    connection: past 100 of them its requests (status updates, Lease renewals) must still get
    one."""

    async def check() -> dict:
        kube = KubeClient(load_credentials(kubeconfig=str(cluster.kubeconfig)))
        path = f"/api/v1/namespaces/{namespace}/configmaps"

        async def hold() -> None:
            async for _ in kube.watch(path, {"timeoutSeconds": "600"}, read_timeout=600):
                pass

        watches = [asyncio.create_task(hold()) for _ in range(WATCHES)]
        try:
            async with asyncio.timeout(120):  # generous: a failure is a wait without end
                while kube.responses["GET", "200"] < WATCHES:  # counted as each starts
                    await asyncio.sleep(0.1)
                return await kube.get(f"/api/v1/namespaces/{namespace}")
        finally:
            for watch in watches:
                watch.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            await kube.close()

    assert asyncio.run(check())["metadata"]["name"] == namespace
