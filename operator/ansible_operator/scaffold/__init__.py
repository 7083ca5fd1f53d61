"""Authoring tools that never load in the operator: ``new-api``, ``generate crds`` and the
templates they write from."""
