"""Which spec keys a CR may not turn into role variables, and which merely shadow Ansible's names.

Every top-level spec key becomes an extra var, and extra vars outrank the inventory: a key that
becomes `ansible_connection`, `ansible_host` or `ansible_ssh_common_args` would let whoever may
create a CR run a command as the operator. So a key whose variable (after the watch's snake_case
conversion) is an `ansible_*` name is refused, unless the watch allows that variable by name
(`allowReservedVars`). The test is deliberately wider than Ansible's own (case-insensitive, after
Unicode NFKC folding): a look-alike that Ansible would not read is refused all the same, so there
is one rule to explain, not a list of near misses.

Keys that collide with Ansible's magic variables, play keywords or template globals (`port`,
`environment`, `hostvars`) stay allowed: Ansible sets its magic variables over extra vars, and a
variable named like a keyword sets no keyword. They are only worth a warning.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_operator.gocompat import to_snake

ANSIBLE_PREFIX = "ansible_"
META_VAR = "ansible_operator_meta"  # ours, and set after the spec's variables (it wins)
WATCH_KEY = "allowReservedVars"
_NAMED = 5  # refused fields named in one message; a spec may have thousands


@dataclass(frozen=True)
class SpecVariable:
    """A top-level spec key (`field`) and the variable it becomes (`variable`)."""

    field: str
    variable: str


def is_reserved(variable: str) -> bool:
    """Whether `variable` is Ansible's to set, not a CR's: an `ansible_*` name other than ours."""
    folded = unicodedata.normalize("NFKC", variable).casefold()
    return folded.startswith(ANSIBLE_PREFIX) and variable != META_VAR


def spec_variables(spec: Any, *, snake_case: bool) -> list[SpecVariable]:
    """Each top-level key of `spec` with the variable it becomes under the watch's conversion."""
    if not isinstance(spec, Mapping):
        return []
    return [
        SpecVariable(key, to_snake(key) if snake_case else key)
        for key in spec
        if isinstance(key, str)
    ]


def refused(variables: Iterable[SpecVariable], allowed: Iterable[str]) -> list[SpecVariable]:
    """The variables a CR may not set: reserved, and not allowed by name by its watch."""
    allow = set(allowed)
    return [v for v in variables if is_reserved(v.variable) and v.variable not in allow]


def shadowing(variables: Iterable[SpecVariable], magic: Iterable[str]) -> list[SpecVariable]:
    """The variables named like one of ansible-core's magic names, keywords or globals."""
    names = set(magic)
    return [v for v in variables if v.variable in names and not is_reserved(v.variable)]


def _shown(name: str) -> str:
    """`name` as written, or quoted with escapes when it holds line breaks or other controls."""
    return name if name.isprintable() else repr(name)


def refusal_message(variables: list[SpecVariable]) -> str:
    """One line naming the refused fields (the first few) and their variables, and the way out."""
    parts = [
        f"spec.{_shown(v.field)} would set the Ansible variable {_shown(v.variable)}"
        for v in variables
    ]
    if len(parts) > _NAMED:
        parts[_NAMED:] = [f"and {len(parts) - _NAMED} more"]
    return (
        f"{'; '.join(parts)}: Ansible's own variables are not the CR's to set "
        f"(remove the field, or allow the variable by name with {WATCH_KEY} in watches.yaml)"
    )
