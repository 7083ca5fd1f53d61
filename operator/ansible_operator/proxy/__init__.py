"""The API proxy between Ansible runs and the API server: tokens, forwarding, owner marks.

``Proxy`` is the server; ``requestinfo``, ``rewrite`` and ``discovery`` are its parts that read
requests, add owner marks to bodies and learn kinds; ``tunnel`` carries upgraded connections.
"""

from ansible_operator.proxy.server import (
    INJECTION_OFF_WARNING,
    DependentHook,
    Proxy,
    ProxyStartError,
    Run,
)

__all__ = ["INJECTION_OFF_WARNING", "DependentHook", "Proxy", "ProxyStartError", "Run"]
