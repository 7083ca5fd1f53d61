"""Explain a failure that a newer ansible-core's rules caused, for status and Events.

Roles written for ansible-core 2.18 (upstream's image) meet three new rules on 2.19: a
conditional must be a boolean; a template keeps its native type (`"{{ n + 1 }}"` is an int,
which a string field of the API refuses); and a value 2.18 rendered as text (None as "") reaches
filters as itself. 2.20 adds none that fails a run (its changes are warnings, or results a role
reads with `is defined`); 2.21 drops `skipped: false` from a loop's registered result, so
`when: not result.skipped` meets an undefined key. Ansible's own message names the rule tersely;
this adds which rule, where (the file and line Ansible reports in the event's output, else the
task's path), the expression, and the ways out. Pure: one failed job event in, a message or None
out. docs/ansible-core-versions.md shows each message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONDITIONAL = re.compile(
    r"Conditional result \((?:True|False)\) was derived from value of type '(?P<type>[^']+)'"
    r" at '(?P<where>[^']+)'"
)
_FILTER_FAILED = re.compile(
    r"The (?P<kind>filter|test) plugin '(?P<plugin>[^']+)' failed: (?P<error>.*(?:NoneType|"
    r"'int'|'bool'|'float').*)$"
)
_NOT_A_STRING = re.compile(
    r"cannot unmarshal (?P<type>number|bool) into Go struct field (?P<field>\S+) of type string"
)
_NO_SKIPPED = re.compile(r"object of type 'dict' has no attribute 'skipped'")
_SKIPPED_READ = re.compile(r"(?P<result>[\w.\[\]'\"]+)\.skipped\b")
_ORIGIN = re.compile(r"^Origin: (?P<file>.+?):(?P<line>\d+)(?::\d+)?$")
_LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?$")
_CONDITION_KEY = re.compile(r"^(?:\w+_when|when|until|that):\s*")
_SIMPLE = re.compile(r"[\w.\[\]'\"]+(?: \| \w[\w.]*(?:\([^()]*\))?)*")

ROLLBACK = "or run the operator on ansible-core 2.18, the default"


def explain(event: Mapping[str, Any]) -> str | None:
    """The message for a failed event that one of 2.19's new rules caused; None for others."""
    data = event.get("event_data")
    if not isinstance(data, Mapping) or not isinstance(data.get("res"), Mapping):
        return None
    res = data["res"]
    lines = _ANSI.sub("", str(event.get("stdout") or "")).replace("\r", "").splitlines()
    task_path = str(data.get("task_path") or "")

    # A broken `failed_when` is reported beside the module's own message, and not displayed.
    failed_when = res.get("failed_when_result")
    if isinstance(failed_when, str) and (match := _CONDITIONAL.search(failed_when)):
        return _conditional(match, failed_when, _short(match["where"]), None)
    message = res.get("msg")
    if not isinstance(message, str):
        return None
    if match := _CONDITIONAL.search(message):
        # The display's last origin is the condition; `at` is where its value came from.
        where = _last_origin(lines) or _short(task_path)
        return _conditional(match, message, where, _source_expression(lines, where))
    if match := _FILTER_FAILED.search(message):
        where = _last_origin(lines) or _short(task_path)
        expression = _template_at(lines, where)
        shown = f"`{expression}`" if expression else f"the {match['kind']} {match['plugin']!r}"
        return (
            "ansible-core 2.19 rule: templates keep native types, so a value 2.18 rendered as "
            f"text (None as '', a number as digits) reaches {match['plugin']!r} as it is "
            f"({where}). Fix the role: give {shown} a string, for example with "
            f"`| default('', true)` or `| string` before the {match['kind']}; {ROLLBACK}. "
            f"Ansible said: {message}"
        )
    if _NO_SKIPPED.search(message):
        where = _last_origin(lines) or _short(task_path)
        expression = _source_expression(lines, where) or _template_at(lines, where)
        fixed = _SKIPPED_READ.sub(r"(\g<result>.skipped | default(false))", expression or "")
        change = (
            f"write `{fixed}` for `{expression}`"
            if expression and fixed != expression
            else "read it as `result.skipped | default(false)`"
        )
        return (
            "ansible-core 2.21 rule: a registered result has a `skipped` key only when something "
            f"was skipped; 2.18 to 2.20 also gave a loop's result `skipped: false` ({where}). "
            "Fix the role: "
            f"{change}; {ROLLBACK}. Ansible said: {message}"
        )
    if match := _NOT_A_STRING.search(message):
        kind = "number" if match["type"] == "number" else "boolean"
        return (
            f"ansible-core 2.19 rule: templates keep native types, so a templated {kind} "
            f"(such as `{{{{ size + 1 }}}}`) stays a {kind}, and the API server refuses it for "
            f"the string field {match['field']} (task at {_short(task_path)}). Fix the role: "
            f"end the template with `| string`; {ROLLBACK}. Ansible said: {message}"
        )
    return None


def _conditional(match: re.Match[str], message: str, where: str, expression: str | None) -> str:
    type_name = match["type"]
    kind = f"{'an' if type_name[0] in 'aeiou' else 'a'} {type_name}"
    fix = _boolean_fix(expression, type_name) if expression else None
    change = (
        f"`{expression}` gives {kind}: make it `{fix}`"
        if expression and fix
        else f"the value is {kind}: make the condition a boolean"
    )
    source = _short(match["where"])
    if source != where:
        change += f" (the value comes from {source})"
    return (
        f"ansible-core 2.19 rule: a conditional must be a boolean ({where}). "
        f"Fix the role: {change}; {ROLLBACK}; or set ANSIBLE_ALLOW_BROKEN_CONDITIONALS=true "
        f"in the operator's environment (conditionals only). Ansible said: {message}"
    )


def _short(location: str) -> str:
    """`file:line` of a `file:line:column` location."""
    match = _LOCATION.match(location)
    return f"{match['file']}:{match['line']}" if match else location


def _last_origin(lines: list[str]) -> str | None:
    """The innermost `Origin: file:line` of Ansible's error display (the last one printed)."""
    for line in reversed(lines):
        if match := _ORIGIN.match(line.strip()):
            return f"{match['file']}:{match['line']}"
    return None


def _source_line(lines: list[str], location: str) -> str | None:
    """The source line Ansible's error display shows under `Origin: <location>`."""
    match = _LOCATION.match(location)
    if match is None:
        return None
    number, shown = match["line"], None
    for line in lines:
        origin = _ORIGIN.match(line.strip())
        if origin:
            shown = origin["file"] == match["file"] and origin["line"] == number
        elif shown and line.startswith(f"{number} "):
            return line[len(number) :].strip()
    return None


def _source_expression(lines: list[str], location: str) -> str | None:
    """The condition on the line at `location`: after `when:`, `failed_when:`, `until:`, ...,
    or a list item (`- x` under `when:` or an assert's `that:`)."""
    line = _source_line(lines, location)
    if line is None:
        return None
    line = _CONDITION_KEY.sub("", line.removeprefix("- "), count=1)
    if re.match(r"[\w.]+:(\s|$)", line):
        return None  # some other key: not a condition written on this line
    return line.strip().strip("'\"").strip() or None


def _template_at(lines: list[str], location: str | None) -> str | None:
    """The `{{ ... }}` on the source line at `location`."""
    line = _source_line(lines, location) if location else None
    match = re.search(r"\{\{.*?\}\}", line or "")
    return match.group(0) if match else None


def _boolean_fix(expression: str, type_name: str) -> str | None:
    """The same test written as a boolean, for the type the conditional gave."""
    operand = expression if _SIMPLE.fullmatch(expression) else f"({expression})"
    if type_name in ("int", "float"):
        return f"{operand} > 0"
    if type_name == "str":
        return f"{operand} | bool"
    if type_name in ("list", "dict"):
        return f"{operand} | length > 0"
    if type_name == "NoneType":
        return f"{operand} is not none"
    return None
