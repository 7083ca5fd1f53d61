"""Conversion between a kind's served versions, declared per field rather than programmed.

A kind's watch names the version its role is written for: the hub, which the API server stores
and the operator watches. A conversion file declares the kind's other served versions (the
spokes), each with its spec's options in the argument spec's format and a list of field maps to
the hub: a rename or a move (``from: size`` → ``to: replicas``), a scalar wrapped into the first
element of a list (``from: port`` → ``to: ports[0].containerPort``) and back, and a default for
a field only one side has. Everything is converted through the hub, as kubebuilder's hub and
spokes are, so a spoke is converted to another spoke in two steps.

What the target version cannot express is kept in the annotation
``conversion.ansible-operator.io/<version>``, named after the version it came from, as a JSON
object of spec paths and values; converting back to that version restores it and drops the
annotation, so a round trip through any version loses nothing (Kubernetes' rule 2 for API
changes, met the way kubebuilder's conversions meet it). A declaration that names a field that
neither schema has, or maps that no annotation could make reversible (two fields onto one, an
int onto a string, a field in both versions with two shapes and no map), is refused in one line.
Everything here is pure: data in, data out (``role_api`` reads the files).
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_operator.core import argspec

ANNOTATION_PREFIX = "conversion.ansible-operator.io/"
FILE = "meta/conversion.yml"  # in the role a watch names
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)(\[(\d+)\])?$")
_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_ENTRY_KEYS = ("from", "to", "default")
_VERSION_KEYS = ("name", "options", "fields")


class ConversionError(Exception):
    """A conversion file the user must fix; one line naming the file and the entry."""


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order as a sort key (GA > beta > alpha, then by number)."""
    m = _VERSION.match(version)
    if not m:
        return (0, 0, 0, version)
    stage = {"alpha": 1, "beta": 2, None: 3}[m.group(2)]
    return (stage, int(m.group(1)), int(m.group(3) or 0), "")


def watched_versions(gvks: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str], str]:
    """For each (group, kind) among `gvks` (group, version, kind), the one version the operator
    watches: the highest, which `generate crds` makes the storage version. Every served version
    shows every CR, so two watches of one kind would run two roles for each of them (upstream's
    ansible-operator-plugins #154); a kind with a conversion file has one watch, its hub."""
    chosen: dict[tuple[str, str], str] = {}
    for group, version, kind in gvks:
        best = chosen.get((group, kind))
        if best is None or version_priority(version) > version_priority(best):
            chosen[(group, kind)] = version
    return chosen


# --- shapes: what a version's spec can hold ---------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The shape of a spec field: `scalar` (with its type), `object` (with its fields), `list`
    (with its element's shape) or `any` (free-form: anything is expressible)."""

    kind: str
    type: str = ""  # a scalar's: str, int, float, bool, int-or-string
    fields: Mapping[str, Shape] = field(default_factory=dict)
    item: Shape | None = None

    def describe(self) -> str:
        if self.kind == "scalar":
            return self.type
        if self.kind == "list" and self.item is not None:
            return f"list of {self.item.describe()}"
        return self.kind


ANY = Shape("any")


def to_camel(option: str) -> str:
    """`deployment_name` → `deploymentName`: the CR field upstream converts back to `option`."""
    head, *rest = option.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def shape_of_options(options: Any, *, camel: bool) -> Shape:
    """The spec's shape from an argument spec's `options` (CR field names in camelCase unless
    the watch says snakeCaseParameters: false)."""
    fields: dict[str, Shape] = {}
    for name, option in (options or {}).items() if isinstance(options, Mapping) else ():
        key = to_camel(str(name)) if camel else str(name)
        fields[key] = _shape_of_option(option if isinstance(option, Mapping) else {}, camel=camel)
    return Shape("object", fields=fields)


def _shape_of_option(option: Mapping[str, Any], *, camel: bool, kind: str | None = None) -> Shape:
    kind = kind or str(option.get("type", "str"))
    if kind in argspec.SCALARS:
        return Shape("scalar", type=argspec.SCALARS[kind])
    if kind in argspec.INT_OR_STRING:
        return Shape("scalar", type="int-or-string")
    if kind == "dict":
        return shape_of_options(option["options"], camel=camel) if "options" in option else ANY
    if kind == "list":
        elements = option.get("elements")
        if not isinstance(elements, str):
            return Shape("list", item=ANY)
        return Shape("list", item=_shape_of_option(option, camel=camel, kind=elements))
    return ANY  # free-form, and what the CRD generator refuses on its own


# --- paths: `ports[0].containerPort` ----------------------------------------------------------


@dataclass(frozen=True)
class FieldPath:
    """A spec path: field names, each optionally followed by `[0]` (the first list element)."""

    text: str
    steps: tuple[str | int, ...]

    def __str__(self) -> str:
        return self.text

    @property
    def parent(self) -> tuple[str | int, ...]:
        return self.steps[:-1]


def parse_path(text: Any, *, where: str) -> FieldPath:
    if not isinstance(text, str) or not text:
        raise ConversionError(
            f"{where}: a path such as port or ports[0].containerPort, got {text!r}"
        )
    steps: list[str | int] = []
    for segment in text.split("."):
        m = _SEGMENT.match(segment)
        if not m:
            raise ConversionError(f"{where}: {text!r}: {segment!r} is not a field name")
        steps.append(m.group(1))
        if m.group(2) is not None:
            if m.group(3) != "0":
                raise ConversionError(
                    f"{where}: {text!r}: only the first element of a list ([0]) can be mapped"
                )
            steps.append(0)
    return FieldPath(text, tuple(steps))


def _shape_at(shape: Shape, steps: Sequence[str | int]) -> Shape | None:
    for step in steps:
        if shape.kind == "any":
            return ANY
        if isinstance(step, int):
            if shape.kind != "list" or shape.item is None:
                return None
            shape = shape.item
        else:
            found = shape.fields.get(step) if shape.kind == "object" else None
            if found is None:
                return None
            shape = found
    return shape


# --- the declaration --------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldMap:
    """One entry of a spoke's `fields`: a spoke path, a hub path, or one of them and a default."""

    spoke: FieldPath | None
    hub: FieldPath | None
    default: Any = None
    has_default: bool = False


@dataclass(frozen=True)
class Spoke:
    version: str
    options: Mapping[str, Any]  # the spec's options, in the argument spec's format
    shape: Shape
    maps: tuple[FieldMap, ...]


@dataclass(frozen=True)
class KindConversion:
    """How one kind's served versions convert: the hub and its spokes."""

    group: str
    kind: str
    hub: str
    hub_shape: Shape
    spokes: Mapping[str, Spoke]
    source: str = ""  # the conversion file, as shown to the user

    @property
    def versions(self) -> list[str]:
        return [self.hub, *self.spokes]


def parse(
    data: Any,
    *,
    group: str,
    kind: str,
    hub: str,
    hub_options: Any,
    camel: bool = True,
    where: str,
) -> KindConversion:
    """A conversion file's data, checked against both versions' schemas."""
    if not isinstance(data, Mapping) or set(data) != {"versions"}:
        raise ConversionError(f"{where}: expected one key, versions: a list of served versions")
    entries = data["versions"]
    if not isinstance(entries, list) or not entries:
        raise ConversionError(f"{where}: versions must be a non-empty list")
    hub_shape = shape_of_options(hub_options, camel=camel)
    spokes: dict[str, Spoke] = {}
    for i, raw in enumerate(entries, 1):
        at = f"{where}: versions[{i}]"
        if not isinstance(raw, Mapping):
            raise ConversionError(f"{at}: expected a mapping with name, options and fields")
        unknown = [str(k) for k in raw if k not in _VERSION_KEYS]
        if unknown:
            raise ConversionError(f"{at}: unknown key {unknown[0]!r} (name, options, fields)")
        name = raw.get("name")
        if not isinstance(name, str) or not _VERSION.match(name):
            raise ConversionError(f"{at}: name must be a version such as v1alpha1, got {name!r}")
        at = f"{where}: version {name}"
        if name == hub or name in spokes:
            what = "the watch's own version" if name == hub else "listed twice"
            raise ConversionError(f"{at}: {what}")
        options = raw.get("options") or {}
        if not isinstance(options, Mapping):
            raise ConversionError(f"{at}: options must be a mapping, as an argument spec's")
        shape = shape_of_options(options, camel=camel)
        maps = tuple(
            _parse_map(entry, f"{at}: fields[{j}]", name, hub, shape, hub_shape)
            for j, entry in enumerate(_as_list(raw.get("fields"), f"{at}: fields"), 1)
        )
        _check_reversible(maps, at, name, hub)
        _check_unmapped(maps, at, name, hub, shape, hub_shape)
        spokes[name] = Spoke(version=name, options=options, shape=shape, maps=maps)
    return KindConversion(group, kind, hub, hub_shape, spokes, source=where)


def _as_list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConversionError(f"{where}: must be a list of maps (from, to, default)")
    return value


def _parse_map(
    raw: Any, at: str, spoke: str, hub: str, spoke_shape: Shape, hub_shape: Shape
) -> FieldMap:
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{at}: expected a mapping with from, to and default")
    unknown = [str(k) for k in raw if k not in _ENTRY_KEYS]
    if unknown:
        raise ConversionError(f"{at}: unknown key {unknown[0]!r} (from, to, default)")
    paths: dict[str, FieldPath | None] = {"from": None, "to": None}
    shapes: dict[str, Shape] = {}
    for key, version, shape in (("from", spoke, spoke_shape), ("to", hub, hub_shape)):
        if key not in raw:
            continue
        path = parse_path(raw[key], where=f"{at}: {key}")
        found = _shape_at(shape, path.steps)
        if found is None:
            raise ConversionError(f"{at}: {key}: {path} is not a field of {version}'s spec")
        paths[key], shapes[key] = path, found
    if not shapes:
        raise ConversionError(f"{at}: needs from (a {spoke} field), to (a {hub} field) or both")
    has_default = "default" in raw
    if len(shapes) == 1 and not has_default:
        (side,) = shapes
        raise ConversionError(
            f"{at}: {paths[side]} alone says nothing (a field the other version lacks is kept "
            "in the annotation anyway): give the other side or a default"
        )
    if has_default:
        if len(shapes) != 1:
            raise ConversionError(
                f"{at}: a default goes with a field only one version has (from or to, not both)"
            )
        ((side, shape),) = shapes.items()
        if not _fits(raw["default"], shape):
            raise ConversionError(
                f"{at}: default {raw['default']!r} is not a {shape.describe()}, as {paths[side]} is"
            )
    elif len(shapes) == 2 and not _same(shapes["from"], shapes["to"]):
        raise ConversionError(
            f"{at}: not reversible: {paths['from']} is a {shapes['from'].describe()} in {spoke} "
            f"and {paths['to']} a {shapes['to'].describe()} in {hub}"
        )
    return FieldMap(paths["from"], paths["to"], raw.get("default"), has_default)


def _fits(value: Any, shape: Shape) -> bool:
    if shape.kind == "any":
        return True
    if shape.kind == "scalar":
        checks = {
            "str": lambda v: isinstance(v, str),
            "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "bool": lambda v: isinstance(v, bool),
            "int-or-string": lambda v: isinstance(v, int | str) and not isinstance(v, bool),
        }
        return bool(checks[shape.type](value))
    if shape.kind == "list":
        item = shape.item or ANY
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    return isinstance(value, Mapping) and all(
        k in shape.fields and _fits(v, shape.fields[k]) for k, v in value.items()
    )


def _same(a: Shape, b: Shape) -> bool:
    if a.kind != b.kind or a.type != b.type:
        return False
    if a.kind == "list":
        return _same(a.item or ANY, b.item or ANY)
    if a.kind == "object":
        return set(a.fields) == set(b.fields) and all(
            _same(a.fields[k], b.fields[k]) for k in a.fields
        )
    return True


def _check_reversible(maps: Sequence[FieldMap], at: str, spoke: str, hub: str) -> None:
    """Each field is mapped once, and no mapped field holds another (which would be moved twice)."""
    for side, version in (("spoke", spoke), ("hub", hub)):
        paths = [p for m in maps if (p := getattr(m, side)) is not None]
        for i, a in enumerate(paths):
            for b in paths[i + 1 :]:
                if a.steps == b.steps:
                    raise ConversionError(f"{at}: not reversible: {version}'s {a} is mapped twice")
                short, long = sorted((a, b), key=lambda p: len(p.steps))
                if long.steps[: len(short.steps)] == short.steps:
                    raise ConversionError(
                        f"{at}: not reversible: {version}'s {short} holds {long}, mapped apart"
                    )


def _check_unmapped(
    maps: Sequence[FieldMap], at: str, spoke: str, hub: str, spoke_shape: Shape, hub_shape: Shape
) -> None:
    """A field both versions have at the same place and no map touches is copied as is, so it
    must have one shape in both."""
    touched = {p.steps[0] for m in maps for p in (m.spoke, m.hub) if p is not None}
    for name in spoke_shape.fields.keys() & hub_shape.fields.keys():
        a, b = spoke_shape.fields[name], hub_shape.fields[name]
        if name not in touched and not _same(a, b):
            raise ConversionError(
                f"{at}: not reversible: {name} is a {a.describe()} in {spoke} and a "
                f"{b.describe()} in {hub}; map it to a field of its shape"
            )


# --- converting -------------------------------------------------------------------------------

_MISSING = object()


def convert(
    obj: Mapping[str, Any],
    to_version: str,
    conversion: KindConversion,
    ignored: list[str] | None = None,
) -> dict[str, Any]:
    """`obj` (of any served version of the kind) as `to_version`, through the hub. A conversion
    annotation that the version it restores cannot hold is left out, why added to `ignored`:
    anyone who may edit the CR can write one, and it must not fail the conversion of every list
    of the kind, nor store a value the schema forbids."""
    api_version = str(obj.get("apiVersion", ""))
    from_version = api_version.rpartition("/")[2]
    for version in (from_version, to_version):
        if version not in conversion.versions:
            raise ValueError(f"{conversion.kind}.{conversion.group} has no version {version!r}")
    out = copy.deepcopy(dict(obj))
    if from_version != conversion.hub:
        spoke = conversion.spokes[from_version]
        out = _step(out, spoke, to_hub=True, conversion=conversion, ignored=ignored)
    if to_version != conversion.hub:
        spoke = conversion.spokes[to_version]
        out = _step(out, spoke, to_hub=False, conversion=conversion, ignored=ignored)
    out["apiVersion"] = f"{conversion.group}/{to_version}"
    return out


def _step(
    out: dict[str, Any],
    spoke: Spoke,
    *,
    to_hub: bool,
    conversion: KindConversion,
    ignored: list[str] | None,
) -> dict[str, Any]:
    source, target = (spoke.version, conversion.hub) if to_hub else (conversion.hub, spoke.version)
    target_shape = conversion.hub_shape if to_hub else spoke.shape
    had_spec = isinstance(out.get("spec"), dict)
    spec: dict[str, Any] = out["spec"] if had_spec else {}
    metadata = out.setdefault("metadata", {})
    annotations: dict[str, str] = dict(metadata.get("annotations") or {})

    pairs = [(m.spoke, m.hub) if to_hub else (m.hub, m.spoke) for m in spoke.maps]
    kept: dict[str, Any] = {}
    # 1. take the mapped values, and a source-only field with a default unless it is the default
    moved = []
    popped: list[FieldPath] = []
    target_defaults = []
    for (src, dst), fmap in zip(pairs, spoke.maps, strict=True):
        if src is not None and dst is not None:
            value = _pop(spec, src.steps)
            if value is not _MISSING:
                popped.append(src)
                moved.append((dst, value))
        elif src is not None and fmap.has_default:
            value = _pop(spec, src.steps)
            if value is _MISSING:
                if had_spec and _get(spec, src.parent) is not _MISSING:
                    kept[src.text] = None  # absent, not the default
            elif value != fmap.default:
                kept[src.text] = value
        elif dst is not None and fmap.has_default:
            target_defaults.append((dst, fmap.default))
    for path in popped:  # (what a default leaves behind is kept: no value would fill it again)
        _prune(spec, path.steps)
    # 2. what the target kept when it was converted away, then the mapped values, then defaults
    absent = set()
    name = ANNOTATION_PREFIX + target
    restored, problem = _restorable(annotations.pop(name, None), target_shape)
    if problem and ignored is not None:
        ignored.append(f"the annotation {name} is ignored: {problem}")
    for text, (steps, value) in restored.items():
        if value is None:
            absent.add(text)
        else:
            _set(spec, steps, value)
    for dst, value in moved:
        _set(spec, dst.steps, value)
    for dst, value in target_defaults:
        steps = dst.steps
        missing = _get(spec, steps) is _MISSING and _get(spec, dst.parent) is not _MISSING
        if had_spec and missing and dst.text not in absent:  # no spec stays no spec
            _set(spec, steps, copy.deepcopy(value))
    # 3. whatever the target cannot express, kept for the way back
    kept |= _leftovers(spec, target_shape, "")
    if kept:
        annotations[ANNOTATION_PREFIX + source] = json.dumps(
            kept, sort_keys=True, separators=(",", ":")
        )
    if annotations:
        metadata["annotations"] = annotations
    else:  # the API server never sends an empty map (ObjectMeta's omitempty)
        metadata.pop("annotations", None)
    if spec or had_spec:
        out["spec"] = spec
    return out


def _restorable(
    text: str | None, shape: Shape
) -> tuple[dict[str, tuple[tuple[str | int, ...], Any]], str]:
    """The fields a conversion annotation restores (path: its steps and value, None for absent),
    each checked against `shape`, the version it restores into; nothing and why when one fails,
    since the annotation may not be the operator's."""
    if text is None:
        return {}, ""
    try:
        fields = json.loads(text)
    except (ValueError, RecursionError):
        return {}, "it is not JSON"
    if not isinstance(fields, dict):
        return {}, "it is not a JSON object"
    restored = {}
    for path, value in fields.items():
        try:
            steps = tuple(parse_path(path, where="annotation").steps)
        except ConversionError:
            return {}, f"{str(path)[:100]!r} is not a field path"
        at = _shape_at(shape, steps)
        if at is None:
            return {}, f"{path} is not a field of this version"
        if value is not None and not _fits(value, at):
            return {}, f"{path} is not a {at.describe()}"
        restored[path] = (steps, value)
    return restored, ""


def _get(value: Any, steps: Sequence[str | int]) -> Any:
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or len(value) <= step:
                return _MISSING
        elif not isinstance(value, dict) or step not in value:
            return _MISSING
        value = value[step]
    return value


def _pop(spec: dict[str, Any], steps: Sequence[str | int]) -> Any:
    parent = _get(spec, steps[:-1])
    last = steps[-1]
    if isinstance(last, str) and isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    return _MISSING  # a list element is never mapped whole: paths end in a field name


def _prune(spec: dict[str, Any], steps: Sequence[str | int]) -> None:
    """Drop the containers a popped path leaves empty, which setting it again would recreate:
    an empty mapping, and a list whose only element was that mapping."""
    for depth in range(len(steps) - 1, 0, -1):
        parent = _get(spec, steps[: depth - 1])
        key = steps[depth - 1]
        child = _get(spec, steps[:depth])
        if isinstance(key, int):
            continue  # the list is judged at its own name, one step up
        if child == {} or child == [{}]:
            del parent[key]
        else:
            return


def _set(spec: dict[str, Any], steps: Sequence[str | int], value: Any) -> None:
    node: Any = spec
    for step, following in itertools.pairwise(steps):
        container = list if isinstance(following, int) else dict
        if isinstance(step, int):
            if not node:
                node.append(container())
            elif not isinstance(node[0], container):
                node[0] = container()
        elif not isinstance(node.get(step), container):
            node[step] = container()
        node = node[step]
    last = steps[-1]
    if isinstance(last, int):
        if node:
            node[0] = value
        else:
            node.append(value)
    else:
        node[last] = value


def _leftovers(value: dict[str, Any], shape: Shape, prefix: str) -> dict[str, Any]:
    """Pop and return, by path, each field `shape` cannot hold (a list is kept or moved whole)."""
    if shape.kind == "any":
        return {}
    found: dict[str, Any] = {}
    for key in list(value):
        path = f"{prefix}.{key}" if prefix else key
        child = shape.fields.get(key) if shape.kind == "object" else None
        if child is None:
            found[path] = value.pop(key)
        elif child.kind == "object" and isinstance(value[key], dict):
            found |= _leftovers(value[key], child, path)
        elif child.kind == "list" and not _holds(value[key], child):
            found[path] = value.pop(key)
    return found


def _holds(value: Any, shape: Shape) -> bool:
    """Whether every field in `value` has a place in `shape` (types are the API server's job)."""
    if shape.kind == "any":
        return True
    if shape.kind == "list":
        item = shape.item or ANY
        return not isinstance(value, list) or all(_holds(v, item) for v in value)
    if shape.kind == "object":
        return not isinstance(value, dict) or all(
            k in shape.fields and _holds(v, shape.fields[k]) for k, v in value.items()
        )
    return True
