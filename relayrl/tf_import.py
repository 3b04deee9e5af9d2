"""Import TensorFlow once, quietly and without the ~0.5 s Keras spends importing matplotlib.pyplot
for its image-gallery helpers (it guards that import, so hiding matplotlib while TensorFlow loads is
safe; relayrl's own plots import matplotlib later, normally)."""
from __future__ import annotations

import importlib.abc
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class _HideMatplotlib(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("matplotlib hidden while TensorFlow imports")
        return None


def _import_tensorflow():
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


tf = _import_tensorflow()
