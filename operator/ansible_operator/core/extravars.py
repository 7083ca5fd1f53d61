"""The variables a role sees: a CR and its watch turned into the `env/extravars` JSON document.

Names and assembly order are upstream's (spec keys, `ansible_operator_meta`, `_<group>_<kind>`,
`_<group>_<kind>_spec`, watch vars, finalizer vars; later steps overwrite earlier ones), so
existing roles run unchanged. The deliberate differences are for safety: every string that comes
from the CR is wrapped as `{"__ansible_unsafe": ...}` unless the watch says `markUnsafe: false`,
so Jinja written into a CR is never evaluated with the operator's credentials; and a spec key
that would set one of Ansible's own `ansible_*` variables is refused (`core.reserved_vars`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ansible_operator.core import objects, reserved_vars
from ansible_operator.core.reserved_vars import META_VAR
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.gocompat import map_to_snake

UNSAFE_KEY = "__ansible_unsafe"
# Deeper specs are refused rather than handed to Ansible, whose templating (like Python's copy
# and JSON encoding here) recurses once per level: a Failure naming the field, not a crash.
MAX_SPEC_DEPTH = 100


class SpecError(ValueError):
    """A spec that cannot be turned into variables; the message names the field."""


class ReservedVariableError(SpecError):
    """A spec key that would set one of Ansible's own variables (see `core.reserved_vars`)."""


def check_reserved(spec: Any, watch: Watch) -> list[reserved_vars.SpecVariable]:
    """The variables the top-level keys of `spec` become; ReservedVariableError when one is an
    `ansible_*` variable that `watch` does not allow by name."""
    variables = reserved_vars.spec_variables(spec, snake_case=watch.snake_case_parameters)
    refused = reserved_vars.refused(variables, watch.allow_reserved_vars)
    if refused:
        raise ReservedVariableError(reserved_vars.refusal_message(refused))
    return variables


def too_deep(value: Any, limit: int, path: str = "spec") -> str | None:
    """The path of the first place in `value` nested deeper than `limit` levels, or None."""
    stack = [(value, path, 0)]
    while stack:  # iterative: the point is not to recurse on what may be very deep
        current, where, depth = stack.pop()
        if depth > limit:
            return where
        if isinstance(current, Mapping):
            stack += [(v, f"{where}.{k}", depth + 1) for k, v in current.items()]
        elif isinstance(current, list):
            stack += [(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(current)]
    return None


def mark_unsafe(value: Any) -> Any:
    """Return a copy of `value` with every string leaf wrapped as `{"__ansible_unsafe": s}`.

    Mapping keys are left as they are; numbers, booleans and null pass through.
    """
    if isinstance(value, str):
        return {UNSAFE_KEY: value}
    if isinstance(value, Mapping):
        return {key: mark_unsafe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mark_unsafe(item) for item in value]
    return value


def object_var_name(gvk: GVK) -> str:
    """`_<group>_<kind lower>` with `.` and `-` turned into `_` (`_cache_example_com_memcached`).

    The core group gives a double underscore: `__secret`.
    """
    name = f"_{gvk.group}_{gvk.kind.lower()}"
    return name.replace(".", "_").replace("-", "_")


def build_extra_vars(obj: Mapping[str, Any], watch: Watch, *, finalizing: bool) -> dict[str, Any]:
    """Assemble the extra vars for one run on `obj` (the CR as read from the API server).

    `finalizing` is true for the run that handles deletion of a CR carrying the watch's
    finalizer; it adds the finalizer's vars last. The result shares nothing with `obj` or `watch`
    and contains only JSON types when they do.
    """
    raw_spec = obj.get("spec")
    deep = too_deep(raw_spec, MAX_SPEC_DEPTH)
    if deep is not None:
        field = deep.split(".")[1] if "." in deep else deep
        raise SpecError(
            f"spec.{field.split('[')[0]} is nested more than {MAX_SPEC_DEPTH} levels deep "
            f"(at {deep[:200]}): it cannot be turned into role variables"
        )
    check_reserved(raw_spec, watch)
    spec: dict[str, Any] = copy.deepcopy(dict(raw_spec)) if isinstance(raw_spec, Mapping) else {}
    unsafe = watch.marks_spec_unsafe

    params: dict[str, Any] = map_to_snake(spec) if watch.snake_case_parameters else dict(spec)
    if unsafe:
        params = {key: mark_unsafe(value) for key, value in params.items()}

    meta = objects.metadata(obj)
    params[META_VAR] = {
        "name": str(meta.get("name") or ""),
        "namespace": str(meta.get("namespace") or ""),
    }

    obj_key = object_var_name(watch.gvk)
    whole = copy.deepcopy(dict(obj))
    params[obj_key] = mark_unsafe(whole) if unsafe else whole
    params[f"{obj_key}_spec"] = mark_unsafe(spec) if unsafe else copy.deepcopy(spec)

    params.update(copy.deepcopy(watch.vars))
    if finalizing and watch.finalizer is not None:
        params.update(copy.deepcopy(watch.finalizer.vars))
    return params
