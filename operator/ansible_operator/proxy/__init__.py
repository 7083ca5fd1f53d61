"""The API proxy between Ansible runs and the API server: tokens, forwarding, owner marks.

``Proxy`` is the server; ``requestinfo`` and ``rewrite`` are its parts that read requests and add
owner marks to bodies; ``headers`` says which headers pass; ``tunnel`` carries upgraded
connections. The kinds it sees written are looked up in ``kube.discovery``.
"""

from ansible_operator.proxy.server import (
    INJECTION_OFF_WARNING,
    DependentHook,
    Proxy,
    ProxyStartError,
    Run,
)

__all__ = ["INJECTION_OFF_WARNING", "DependentHook", "Proxy", "ProxyStartError", "Run"]
