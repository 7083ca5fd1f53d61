"""Custom resources of the test kinds: making them, reading their conditions, waiting for one."""

from __future__ import annotations

from kubernetes.client.rest import ApiException

from .crds import GROUP, VERSION
from .waiting import wait_until


def new_cr(kind: str, name: str, spec: dict, labels: dict | None = None) -> dict:
    meta: dict = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": meta, "spec": spec}


def condition(obj: dict, ctype: str) -> dict | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def wait_condition(crs, namespace, kind, name, ctype, status="True", timeout=180, reason=None):
    plural = kind.lower() + "s"

    def probe():
        try:
            obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        c = condition(obj, ctype)
        if c and c.get("status") == status and (reason is None or c.get("reason") == reason):
            return obj
        return None

    return wait_until(probe, what=f"{kind} {name} {ctype}={status}", timeout=timeout)


def config_map_data(core, namespace, name) -> dict | None:
    try:
        return core.read_namespaced_config_map(name, namespace).data or {}
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def events_of(core, namespace: str, name: str, reason: str) -> list:
    """The Events on the object `name` of `namespace` with `reason`."""
    return [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.name == name and e.reason == reason
    ]


def wait_event(core, namespace: str, name: str, reason: str, timeout: float = 120) -> list:
    """The Events on `name` with `reason`, once there is one."""
    return wait_until(
        lambda: events_of(core, namespace, name, reason),
        what=f"a {reason} Event on {name}",
        timeout=timeout,
    )
