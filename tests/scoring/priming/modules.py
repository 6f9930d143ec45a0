"""The priming tests' model libraries, imported only when a test uses them."""

import importlib
import importlib.util

import pytest


class _Lazy:
    """A module imported on its first attribute."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):
            # What pytest asks of every module-level object while collecting (``__test__``, its
            # fixture markers): no test uses a private name of these libraries.
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._name), attribute)


def needs_module(name: str, reason: str):
    """``name``, imported when a test first uses it; the calling test module is skipped when it is not
    installed. Every pytest process collects every test module, and importing torch, open_clip and
    transformers there took about 6 s of each process's start: only a process that runs a priming
    test should pay for it (``pytest.importorskip`` imports at once)."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(reason, allow_module_level=True)
    return _Lazy(name)
