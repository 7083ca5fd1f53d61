"""Manifests as kubectl and kustomize write them: block style, list items indented under their
key, keys in the order given, no line folded (so yamllint's defaults hold for what we write)."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=2**16)
