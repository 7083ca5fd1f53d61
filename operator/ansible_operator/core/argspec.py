"""The types of an Ansible argument spec as a CR field holds them: one model for the CRDs
``generate crds`` makes (``scaffold.crds``) and the conversions between a kind's versions
(``core.conversion``), so the two cannot disagree on what a type is.

Ansible's scalar types come down to four (``str``, ``int``, ``float``, ``bool``; ``path`` and
``sid`` are strings); ``bytes`` and ``bits`` take ``"1K"`` as well as a number (int-or-string);
``raw``, ``json`` and ``jsonarg`` take anything (free-form); ``list`` and ``dict`` hold others.
"""

from __future__ import annotations

SCALARS = {"str": "str", "path": "str", "sid": "str", "int": "int", "float": "float"}
SCALARS |= {"bool": "bool"}
JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
INT_OR_STRING = ("bytes", "bits")
FREE_FORM = ("raw", "json", "jsonarg")
CONTAINERS = ("list", "dict")
# How a CRD's schema says "anything" (a free-form type, a dict without options).
PRESERVE = "x-kubernetes-preserve-unknown-fields"
TYPE_NAMES = "str, int, float, bool, list, dict, path, raw, bytes, bits, json"  # for messages
