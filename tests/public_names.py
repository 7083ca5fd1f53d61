"""The package's second import rule, checked by `make lint`: a layer uses another only through
the names that package's `__init__` lists in `__all__`, never its modules.

`from ansible_operator.core import GVK` is fine when `core.__all__` lists `GVK` (a submodule it
lists, such as `conditions`, is a public namespace); `from ansible_operator.core.watches import
GVK` reaches into a private module and is refused, as is a name `__all__` does not list. Inside
a package anything goes; a top-level module (`procfs`, `completion`) offers its public names.
Usage: `python tests/public_names.py [PACKAGE_DIR]`; prints one line per violation, exit 1.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

DEFAULT_PACKAGE = Path(__file__).resolve().parent.parent / "operator" / "ansible_operator"


def _exported(init: Path) -> set[str]:
    """The names a package's `__init__` lists in `__all__`."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return {item.value for item in ast.walk(node.value) if isinstance(item, ast.Constant)}
    return set()


def violations(package: Path) -> Iterator[str]:
    """One line per import that reaches past another layer's public names."""
    root = package.name
    for path in sorted(package.rglob("*.py")):
        unit = path.relative_to(package).parts[0].removesuffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imports = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in imports:
                parts = module.split(".")
                if parts[0] != root or len(parts) < 2 or parts[1] == unit:
                    continue
                where = f"{path}:{node.lineno}"
                public = ".".join(parts[:2])
                if len(parts) > 2:
                    yield f"{where}: {module} is private to {public}: import from {public}"
                elif name is None or name == "*":
                    continue
                elif (package / parts[1] / "__init__.py").is_file():
                    if name not in _exported(package / parts[1] / "__init__.py"):
                        yield f"{where}: {public}.__all__ does not list {name}"
                elif name.startswith("_"):
                    yield f"{where}: {public}.{name} is private"


def main(argv: list[str]) -> int:
    package = Path(argv[0]) if argv else DEFAULT_PACKAGE
    found = list(violations(package))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
