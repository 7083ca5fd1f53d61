"""The CEL that ``cel_rules`` writes, evaluated here, so ``generate crds --check`` can tell which
sample CR the API server would refuse without asking one.

Only the part of CEL the generated rules use is understood: ``has(self.f)``, ``self.f``, bool,
int, double and string literals, ``!``, ``&&``, ``||``, ``==``, ``!=``, ``<``, ``<=``, ``>``,
``>=``, ``+``, ``-``, ``? :`` and parentheses, with Kubernetes' escaping of field names. Anything
else is a ``CelError`` (the rule is not ours, or the generator grew): never a guessed verdict.
``tests/e2e/test_crd_rules.py`` holds its verdicts against the API server's on the same CRs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>\d+\.\d+|\d+)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>&&|\|\||==|!=|<=|>=|[!<>+\-?:().])
    )""",
    re.VERBOSE,
)
_RESERVED = {f"__{word}__": word for word in ("true", "false", "null", "in", "as", "break",
             "const", "continue", "else", "for", "function", "if", "import", "let", "loop",
             "package", "namespace", "return", "var", "void", "while")}  # fmt: skip
_ESCAPES = (("__dot__", "."), ("__dash__", "-"), ("__slash__", "/"), ("__underscores__", "__"))


class CelError(ValueError):
    """A rule outside the understood part of CEL, or one that fails to evaluate."""


def field_name(escaped: str) -> str:
    """The property a CEL identifier names (Kubernetes' escaping undone)."""
    if escaped in _RESERVED:
        return _RESERVED[escaped]
    for code, char in _ESCAPES:
        escaped = escaped.replace(code, char)
    return escaped


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, name, op, end
    text: str


def _tokens(rule: str) -> list[_Token]:
    found, at = [], 0
    rule = rule.rstrip()
    while at < len(rule):
        match = _TOKEN.match(rule, at)
        if not match or match.end() == at:
            raise CelError(f"cannot read {rule[at:].strip()[:20]!r}")
        kind = match.lastgroup or "op"
        found.append(_Token(kind, match.group(kind)))
        at = match.end()
    return [*found, _Token("end", "")]


Expr = Callable[[Mapping[str, Any]], Any]
_ABSENT = object()


class _Parser:
    """Precedence climbing over the tokens, to closures that evaluate against `self`."""

    def __init__(self, rule: str) -> None:
        self.tokens = _tokens(rule)
        self.at = 0

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self, text: str | None = None) -> _Token:
        token = self.tokens[self.at]
        if text is not None and token.text != text:
            raise CelError(f"expected {text!r}, found {token.text or 'the end'!r}")
        self.at += 1
        return token

    def parse(self) -> Expr:
        expr = self.ternary()
        if self.peek().kind != "end":
            raise CelError(f"unexpected {self.peek().text!r}")
        return expr

    def ternary(self) -> Expr:
        condition = self.binary(0)
        if self.peek().text != "?":
            return condition
        self.take("?")
        then = self.ternary()
        self.take(":")
        otherwise = self.ternary()
        return lambda s: then(s) if _bool(condition(s)) else otherwise(s)

    _LEVELS = (("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">="), ("+", "-"))

    def binary(self, level: int) -> Expr:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek().kind == "op" and self.peek().text in self._LEVELS[level]:
            op = self.take().text
            right = self.binary(level + 1)
            left = _binary(op, left, right)
        return left

    def unary(self) -> Expr:
        if self.peek().text == "!":
            self.take()
            inner = self.unary()
            return lambda s: not _bool(inner(s))
        if self.peek().text == "-":
            self.take()
            negated = self.unary()
            return lambda s: -_number(negated(s))
        return self.primary()

    def primary(self) -> Expr:
        token = self.take()
        if token.text == "(":
            inner = self.ternary()
            self.take(")")
            return inner
        if token.kind == "number":
            value = float(token.text) if "." in token.text else int(token.text)
            return lambda _: value
        if token.kind == "string":
            text = json.loads(token.text)
            return lambda _: text
        if token.text in ("true", "false"):
            flag = token.text == "true"
            return lambda _: flag
        if token.text == "has":
            self.take("(")
            path = self.path()
            self.take(")")
            return lambda s: _lookup(s, path) is not _ABSENT
        if token.text == "self":
            self.at -= 1
            path = self.path()
            return lambda s: _value(s, path)
        raise CelError(f"unexpected {token.text or 'end'!r}")

    def path(self) -> list[str]:
        self.take("self")
        names = []
        while self.peek().text == ".":
            self.take(".")
            name = self.take()
            if name.kind != "name":
                raise CelError(f"expected a field name, found {name.text!r}")
            names.append(field_name(name.text))
        if not names:
            raise CelError("self alone is not understood here")
        return names


def _lookup(value: Any, path: list[str]) -> Any:
    for name in path:
        if not isinstance(value, Mapping) or name not in value:
            return _ABSENT
        value = value[name]
    return value


def _value(value: Any, path: list[str]) -> Any:
    found = _lookup(value, path)
    if found is _ABSENT:
        raise CelError(f"no such key: {'.'.join(path)}")
    return found


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise CelError(f"no such overload: {type(value).__name__} where a bool is needed")
    return value


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CelError(f"no such overload: {type(value).__name__} where a number is needed")
    return value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b) and (isinstance(a, str) == isinstance(b, str))


def _binary(op: str, left: Expr, right: Expr) -> Expr:
    if op == "||":
        return lambda s: _bool(left(s)) or _bool(right(s))
    if op == "&&":
        return lambda s: _bool(left(s)) and _bool(right(s))
    if op == "==":
        return lambda s: _equal(left(s), right(s))
    if op == "!=":
        return lambda s: not _equal(left(s), right(s))
    if op == "+":
        return lambda s: _number(left(s)) + _number(right(s))
    if op == "-":
        return lambda s: _number(left(s)) - _number(right(s))
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    return lambda s: compare[op](_number(left(s)), _number(right(s)))


def compile_rule(rule: str) -> Expr:
    """The rule as a function of `self`; CelError when it is outside the understood CEL."""
    return _Parser(rule).parse()


def holds(rule: str, self_value: Mapping[str, Any]) -> bool:
    """Whether `rule` holds for `self_value`; CelError when it cannot be evaluated."""
    return _bool(compile_rule(rule)(self_value))


def fields_tested(rule: str) -> list[str]:
    """The top-level fields a rule tests with ``has(self.f)``, in order, once each."""
    names: list[str] = []
    tokens = _tokens(rule)
    for i in range(len(tokens) - 4):
        window = [t.text for t in tokens[i : i + 4]]
        if window == ["has", "(", "self", "."] and tokens[i + 4].kind == "name":
            name = field_name(tokens[i + 4].text)
            if name not in names:
                names.append(name)
    return names
