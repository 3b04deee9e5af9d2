"""TensorFlow, imported once, lazily, quietly, and without the ~0.5 s Keras spends importing
matplotlib.pyplot for its image-gallery helpers (Keras guards that import, so hiding matplotlib
while TensorFlow loads is safe; relayrl's own plots import matplotlib later, normally).

`from relayrl.models.tf_import import tf` costs nothing: the ~2.5 s import happens at the first attribute
access (or `load()`), so configs, the CLI's input checks and TF-free rollout workers never pay it,
and the Ray runtime can start its cluster while TensorFlow loads in a background thread.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from types import ModuleType

from relayrl.core import logs

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_lock = threading.Lock()
# Native start-up lines TF_CPP_MIN_LOG_LEVEL does not reach: absl's pre-init banner, absl-formatted
# lines ("I0000 00:00:... cudart_stub.cc:31] Could not find cuda drivers ..."), TF's timestamped notes
# (oneDNN, CPU instructions) and their continuation line.
_CHATTER = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|[IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\]"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] \S+:\d+\]"
    r"|To enable the following instructions: )"
)


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
            with _native_chatter_filtered():
                import tensorflow
        finally:
            sys.meta_path.remove(hider)
        return tensorflow


@contextlib.contextmanager
def _native_chatter_filtered() -> Iterator[None]:
    """Point file descriptor 2 at a temporary file while TensorFlow loads, then pass on every line that is
    not start-up chatter. Native code writes to fd 2 directly, so this is the only place to catch it;
    anything else written meanwhile (other threads, a real error) reaches stderr, only later."""
    if logs.verbose():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [
                line
                for line in sink.read().decode(errors="replace").splitlines(keepends=True)
                if not _CHATTER.match(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def load_in_background() -> threading.Thread:
    """Start importing TensorFlow on another thread; join() the result before using it."""
    thread = threading.Thread(target=load, name="relayrl-import-tensorflow", daemon=True)
    thread.start()
    return thread


class _LazyTensorFlow:
    def __getattr__(self, name: str):
        return getattr(load(), name)


tf = _LazyTensorFlow()
