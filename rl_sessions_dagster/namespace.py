"""Package namespaces whose names load on first use.

A definitions file imports a few builders, and a package ``__init__`` that imported all of its
modules made it pay for the whole library: the API's models and operation results, the cursor
state, the table rows (most of the builders' import time). Each package instead lists its
public names once, as imports under ``TYPE_CHECKING`` (what type checkers and readers see);
:func:`lazy_exports` reads that block back and imports a name's module when the name is
first used. ``from package import name`` and ``import *`` work as before.
"""

import ast
import sys
from collections.abc import Callable, Iterable
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any


def lazy_exports(
    package: str, init_file: str, extra: Iterable[str] = ()
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package``, from its ``TYPE_CHECKING`` imports
    (``extra``: names the package defines itself, such as ``__version__``)."""
    exports = _exports(init_file)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            # A submodule, as an eager ``__init__`` made it an attribute (``api.models``).
            if not name.startswith("_") and find_spec(f"{package}.{name}") is not None:
                return import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return sorted([*exports, *extra]), __getattr__, __dir__


def _exports(init_file: str) -> dict[str, str]:
    """Name → relative module, from the ``if TYPE_CHECKING:`` block of ``init_file``."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )  # fmt: skip
    return {
        alias.asname or alias.name: "." * node.level + (node.module or "")
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
