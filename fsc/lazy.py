"""A package's exported names, imported when first used (PEP 562).

``import fsc.console`` runs ``fsc/__init__.py`` first; were that file to import the evaluator, every command
would wait for torch and numba before reading its arguments.  A package root calls :func:`export` instead:
``fsc.evaluate`` imports :mod:`fsc.evaluate` the first time it is looked up, and ``from fsc import
evaluate``, ``from fsc import *`` and ``dir(fsc)`` work as with plain imports.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping, Sequence

__all__ = ["export", "module"]


class _Package(types.ModuleType):
    """A package module whose exported names come from ``_exports`` (name -> module) on first use."""

    def __getattr__(self, name: str):
        source = self.__dict__["_exports"].get(name)
        if source is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module = importlib.import_module(source)
        value = module if source == f"{self.__name__}.{name}" and name in self.__dict__["_submodules"] else getattr(module, name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value) -> None:
        # Importing the submodule fsc.evaluate binds the module to fsc.evaluate; the exported name, the
        # function of that module, stays what fsc.evaluate means (as after `from fsc.evaluate import evaluate`).
        exports = self.__dict__.get("_exports", {})
        if isinstance(value, types.ModuleType) and exports.get(name) == value.__name__ and name not in self.__dict__["_submodules"]:
            value = getattr(value, name)
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__dict__["_exports"]})


def export(package: str, names: Mapping[str, Sequence[str]], submodules: Sequence[str] = ()) -> list[str]:
    """Make the package ``package`` import ``names`` (module -> the names it exports) and its ``submodules``
    on first use; return the exported names, for ``__all__``."""
    module = sys.modules[package]
    exports = {name: source for source, group in names.items() for name in group}
    exports |= {name: f"{package}.{name}" for name in submodules}
    module.__dict__["_exports"] = exports
    module.__dict__["_submodules"] = frozenset(submodules)
    module.__class__ = _Package
    return list(exports)


class _Module:
    """A module imported on first use: each name looked up once, then kept (as fast as the module's own)."""

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name

    def __getattr__(self, name: str):
        value = getattr(importlib.import_module(self.__dict__["_name"]), name)
        self.__dict__[name] = value
        return value


def module(name: str) -> types.ModuleType:
    """The module ``name``, imported when one of its names is first looked up (``kernels = module(
    "fsc.engines.kernels")`` in a module whose functions use it: numba is loaded by the first that runs)."""
    return _Module(name)  # type: ignore[return-value]
