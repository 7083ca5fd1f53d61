"""Authoring tools that never load in the operator: ``init``, ``new-api``, ``generate crds``,
the OLM bundle's ``generate kustomize manifests`` and ``generate bundle`` (``olm``), the Helm
chart's ``generate helm-chart`` (``helm_chart``), and the templates they write from.

Other layers use the command modules below as namespaces (each has ``add_parser``), and
``source`` (where the running package came from).
"""

from ansible_operator.scaffold import generate, helm_chart, init, new_api, olm, source

__all__ = ["generate", "helm_chart", "init", "new_api", "olm", "source"]
