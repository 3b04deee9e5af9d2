"""YAML loading for configs: PyYAML's safe loader with YAML 1.2's float syntax, so `lr: 1e-3` is the number
0.001 (YAML 1.1, which PyYAML follows, needs a dot, `1.0e-3`, and reads `1e-3` as a string)."""

from __future__ import annotations

import re
from typing import Any

import yaml


class ConfigLoader(yaml.SafeLoader):
    pass


ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                  |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                  |\\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                  |[-+]?\\.(?:inf|Inf|INF)
                  |\\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def load(stream: Any) -> Any:
    """yaml.safe_load, reading 1e-3 as a float."""
    return yaml.load(stream, Loader=ConfigLoader)  # noqa: S506 - a SafeLoader subclass
