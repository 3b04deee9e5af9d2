"""TensorFlow, imported once, lazily, quietly, and without the ~0.5 s Keras spends importing
matplotlib.pyplot for its image-gallery helpers (Keras guards that import, so hiding matplotlib
while TensorFlow loads is safe; relayrl's own plots import matplotlib later, normally).

`from relayrl.tf_import import tf` costs nothing: the ~2.5 s import happens at the first attribute
access (or `load()`), so configs, the CLI's input checks and TF-free rollout workers never pay it,
and the Ray runtime can start its cluster while TensorFlow loads in a background thread.
"""
from __future__ import annotations

import importlib.abc
import os
import sys
import threading
from types import ModuleType

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_lock = threading.Lock()


class _HideMatplotlib(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("matplotlib hidden while TensorFlow imports")
        return None


def load() -> ModuleType:
    """Import TensorFlow (once) and return it."""
    with _lock:
        if "tensorflow" in sys.modules or "matplotlib" in sys.modules:
            import tensorflow

            return tensorflow
        hider = _HideMatplotlib()
        sys.meta_path.insert(0, hider)
        try:
            import tensorflow
        finally:
            sys.meta_path.remove(hider)
        return tensorflow


def load_in_background() -> threading.Thread:
    """Start importing TensorFlow on another thread; join() the result before using it."""
    thread = threading.Thread(target=load, name="relayrl-import-tensorflow", daemon=True)
    thread.start()
    return thread


class _LazyTensorFlow:
    def __getattr__(self, name: str):
        return getattr(load(), name)


tf = _LazyTensorFlow()
