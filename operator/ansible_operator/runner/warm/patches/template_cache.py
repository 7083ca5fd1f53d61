"""Jinja templates compiled once and kept across warm runs (ansible-core 2.18).

ansible-core 2.18 compiles a template string each time it renders one (`Templar.do_template`
calls `from_string`), in each worker of each run: the task's arguments, its `when` (for each
item of a loop), its name. Kept, they cut the CPU of a warm memcached run's workers by about 15%
(0.132 → 0.112 s a run), and of a 12-item loop whose `when` skips every item by 40% (27 → 16
ms); a kept template renders in 0.06 ms instead of 0.36. What a compile makes depends on:
- the source, the template name and file name, and the versions of Python, Jinja and Ansible;
- the environment's compile settings: its class and code generator, the delimiters and
  whitespace settings, `optimized`, `autoescape`, `finalize`, the sandbox's operators;
- for each filter and test the source names, whether there is one and what it is passed (the
  context, the eval context or the environment): the generated call differs;
- and the result of any filter or test the compile itself called: Jinja folds a filter or test
  of constants into a constant (`{{ 100 | random }}`).
So the key is made of the first two, a kept template names its filters and tests with what they
were passed and is taken only where they are still passed the same, and a compile that called a
filter or a test is not kept: the next render compiles it again, as ansible-core does. An
environment with extensions (which may parse or generate code as they like) or with a callable
`autoescape` compiles as usual. Nothing else is read: Jinja's compiler takes nothing more
from the environment.

ansible-core 2.19 has its own templating (its parse depends on a context variable); it is not
touched. `install()` patches the environment in the process of a warm run only; its workers,
forks of it, inherit it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import marshal
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ansible_operator.runner.warm import cachedir

MAX_KEPT = 4096
"""Templates kept at most: template strings can come from data (a variable whose value holds
`{{ }}` is templated too), so they are bounded; past the bound, templates compile as usual."""

Lookup = tuple[str, str, str | None]
"""("filter" or "test", name, what it is passed: "" for nothing, None where there is none)."""


def install() -> None:
    """Make ansible-core 2.18's template compiles come from cachedir.directory, if one is set."""
    directory = cachedir.subdirectory("templates")
    if directory is None:
        return
    from ansible.template import AnsibleEnvironment

    builtin = AnsibleEnvironment.compile
    if getattr(builtin, "kept", False):
        return

    def kept_compile(
        self: Any,
        source: Any,
        name: str | None = None,
        filename: str | None = None,
        raw: bool = False,
        defer_init: bool = False,
    ) -> Any:
        key = template_key(self, source, name, filename) if not raw and not defer_init else None
        if key is None:
            return builtin(self, source, name, filename, raw, defer_init)
        entry = directory / key
        with contextlib.suppress(Exception):  # not kept yet, or unreadable: compiled below
            kept_lookups, kept_code = marshal.loads(entry.read_bytes())
            if all(_passed(self, kind, used) == passed for kind, used, passed in kept_lookups):
                return kept_code
        lookups: list[Lookup] = []
        called: list[str] = []
        probe = self.overlay()
        probe.filters = _Recording(self.filters, "filter", lookups, called)
        probe.tests = _Recording(self.tests, "test", lookups, called)
        code = builtin(probe, source, name, filename, raw, defer_init)
        if not called and _room(directory):
            with contextlib.suppress(Exception):  # a full disk: not kept
                kept = marshal.dumps((sorted(set(lookups), key=str), code))
                cachedir.write_atomically(entry, kept)
        return code

    kept_compile.kept = True  # type: ignore[attr-defined]
    AnsibleEnvironment.compile = kept_compile


def template_key(env: Any, source: Any, name: str | None, filename: str | None) -> str | None:
    """The kept file name of `source` compiled in `env`, or None where it is not kept."""
    if not isinstance(source, str) or env.extensions or callable(env.autoescape):
        return None
    import ansible.release
    import jinja2

    settings = (
        _qualified(type(env)),
        _qualified(env.code_generator_class),
        env.block_start_string,
        env.block_end_string,
        env.variable_start_string,
        env.variable_end_string,
        env.comment_start_string,
        env.comment_end_string,
        env.line_statement_prefix,
        env.line_comment_prefix,
        env.trim_blocks,
        env.lstrip_blocks,
        env.newline_sequence,
        env.keep_trailing_newline,
        env.optimized,
        env.is_async,
        bool(env.autoescape),
        _function(env.finalize),
        getattr(env, "sandboxed", False),
        sorted(getattr(env, "intercepted_binops", ())),
        sorted(getattr(env, "intercepted_unops", ())),
        name,
        filename,
        jinja2.__version__,
        ansible.release.__version__,
    )
    key = hashlib.sha256()
    text = source.encode("utf-8", "surrogatepass")
    for part in (importlib.util.MAGIC_NUMBER, repr(settings).encode(), text):
        key.update(len(part).to_bytes(8, "big") + part)
    return key.hexdigest()


def _qualified(thing: Any) -> str:
    return f"{getattr(thing, '__module__', '?')}.{getattr(thing, '__qualname__', '?')}"


def _function(func: Any) -> tuple[str, str | None, Any] | None:
    """What a compile sees of a function: its code's name, what it is passed, what it wraps."""
    if func is None:
        return None
    return (_qualified(func), _pass_arg(func), _function(getattr(func, "__wrapped__", None)))


def _pass_arg(func: Any) -> str | None:
    from jinja2.utils import _PassArg

    if func is None:
        return None
    passed = _PassArg.from_obj(func)
    return "" if passed is None else passed.name


def _passed(env: Any, kind: str, name: str) -> str | None:
    return _pass_arg((env.filters if kind == "filter" else env.tests).get(name))


def _room(directory: Path) -> bool:
    try:
        return len(os.listdir(directory)) < MAX_KEPT
    except FileNotFoundError:
        return True
    except OSError:
        return False


class _Recording(Mapping[str, Any]):
    """The environment's filters (or tests) as a compile sees them: each one looked up is noted
    with what it is passed, and each call of one (a constant folded) is noted too."""

    def __init__(self, inner: Any, kind: str, lookups: list[Lookup], called: list[str]) -> None:
        self._inner, self._kind, self._lookups, self._called = inner, kind, lookups, called

    def get(self, name: str, default: Any = None) -> Any:
        func = self._inner.get(name, default)
        self._lookups.append((self._kind, name, _pass_arg(func)))
        return None if func is None else self._noting_calls(name, func)

    def __getitem__(self, name: str) -> Any:
        func = self._inner[name]
        self._lookups.append((self._kind, name, _pass_arg(func)))
        return self._noting_calls(name, func)

    def _noting_calls(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)  # keeps `jinja_pass_arg`, so the call is generated alike
        def call(*args: Any, **kwargs: Any) -> Any:
            self._called.append(name)
            return func(*args, **kwargs)

        return call

    def __iter__(self) -> Iterator[str]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)
