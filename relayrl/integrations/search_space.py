"""Search expressions for hyper-parameter tuning: `lr=loguniform(1e-4,1e-2)` -> a checked `SearchSpec`.

Parsed and validated here without Ray or TensorFlow, so `relayrl tune` rejects a typo (an unknown
distribution, a field the config does not have, a range whose ends the field would refuse) before any
process starts. `SearchSpec.to_tune()` turns a spec into the Ray Tune domain when the search runs;
`check_search` checks the whole search (scheduler, counts, metric) the same way.

    uniform(a, b)       float, a <= x <= b
    loguniform(a, b)    float, log-uniform, 0 < a < b
    randint(a, b)       integer, a <= x < b (upper bound excluded, as in Ray Tune)
    choice(v1, v2, ...) one of the values, sampled
    grid(v1, v2, ...)   every value (each sample repeats the whole grid)
"""

from __future__ import annotations

import ast
import numbers
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relayrl.core.config import Config

KINDS = ("uniform", "loguniform", "randint", "choice", "grid")
SCHEDULERS = ("fifo", "asha", "pbt")
# result fields every algorithm reports (Algorithm.train); per-algorithm ones sit under these prefixes
RESULT_FIELDS = (
    "episode_reward_mean",
    "episode_reward_min",
    "episode_reward_max",
    "episode_len_mean",
    "episodes_total",
    "timesteps_total",
    "training_iteration",
    "time_total_s",
    "time_this_iter_s",
    "env_steps_per_s",
)
RESULT_PREFIXES = ("learner/", "timers/", "workers/", "memory/")
_EXPR = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.S)


@dataclass(frozen=True)
class SearchSpec:
    """One searched config field: its distribution kind and arguments."""

    key: str  # a config field name, or model.<option>
    kind: str
    args: tuple
    text: str = field(default="", compare=False)  # as the user wrote it, for error messages

    def values_to_check(self) -> list[Any]:
        """Values the field must accept: the ends of a range, every option of a choice or grid."""
        if self.kind == "randint":
            return [self.args[0], self.args[1] - 1]
        return list(self.args)

    def to_tune(self):
        """The Ray Tune domain (imports ray.tune)."""
        from ray import tune

        if self.kind == "grid":
            return tune.grid_search(list(self.args))
        if self.kind == "choice":
            return tune.choice(list(self.args))
        return getattr(tune, self.kind)(*self.args)

    def mutation(self):
        """What PBT may resample this field from when it explores (a list for discrete options)."""
        return list(self.args) if self.kind in ("choice", "grid") else self.to_tune()

    def __str__(self) -> str:
        return self.text or f"{self.key}={self.kind}({', '.join(repr(a) for a in self.args)})"


def parse(text: str) -> SearchSpec:
    """'lr=loguniform(1e-4,1e-2)' -> SearchSpec('lr', 'loguniform', (0.0001, 0.01)); ValueError naming the
    expression and what is allowed otherwise."""
    match = _EXPR.match(text)
    if not match:
        raise ValueError(
            f"invalid --search {text!r}: expected KEY=KIND(ARGS), e.g. lr=loguniform(1e-4,1e-2); "
            f"KIND is one of {', '.join(KINDS)}"
        )
    key, kind, raw_args = match.groups()
    if kind not in KINDS:
        raise ValueError(
            f"invalid --search {text!r}: unknown distribution {kind!r}; allowed: {', '.join(KINDS)}"
        )
    try:
        args = _parse_args(raw_args)
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"invalid --search {text!r}: cannot read the arguments ({exc})") from None
    problem = _check_args(kind, args)
    if problem:
        raise ValueError(f"invalid --search {text!r}: {problem}")
    return SearchSpec(key, kind, args, text.strip())


def _parse_args(raw: str) -> tuple:
    """Python literals (numbers, strings, lists, True/None); a bare word is a string (choice(relu,tanh))."""
    if not raw.strip():
        return ()
    call = ast.parse(f"f({raw})", mode="eval").body
    if not isinstance(call, ast.Call) or call.keywords:
        raise ValueError("expected positional values separated by commas")
    return tuple(node.id if isinstance(node, ast.Name) else ast.literal_eval(node) for node in call.args)


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _check_args(kind: str, args: tuple) -> str | None:
    if kind in ("choice", "grid"):
        return None if args else f"{kind} needs at least one value"
    if len(args) != 2:
        return f"{kind} needs exactly 2 arguments (low, high), got {len(args)}"
    low, high = args
    if kind == "randint":
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in args):
            return "randint needs 2 integers (low, high)"
    elif not all(_is_number(v) for v in args):
        return f"{kind} needs 2 numbers (low, high)"
    if not low < high:
        return f"{kind} needs low < high, got {low} and {high}"
    if kind == "loguniform" and low <= 0:
        return f"loguniform needs 0 < low, got {low}"
    return None


def check_against(specs: list[SearchSpec], config) -> None:
    """Every searched key must be a field of `config` (or a model option) and every value the spec can
    produce at its ends must pass that field's check: ValueError naming the expression otherwise."""
    from relayrl.core.knobs import MODEL_CHECKS

    fields = {f: None for f in config.field_docs()}
    seen = set()
    for spec in specs:
        if spec.key in seen:
            raise ValueError(f"invalid --search {str(spec)!r}: {spec.key} is searched twice")
        seen.add(spec.key)
        if spec.key.startswith("model."):
            option = spec.key[len("model.") :]
            if option not in MODEL_CHECKS:
                raise ValueError(
                    f"invalid --search {str(spec)!r}: unknown model option {option!r}; allowed: "
                    f"{', '.join('model.' + k for k in MODEL_CHECKS)}"
                )
            for value in spec.values_to_check():
                problem = MODEL_CHECKS[option](value)
                if problem:
                    raise ValueError(f"invalid --search {str(spec)!r}: model.{option} = {value!r}: {problem}")
            continue
        if spec.key not in fields:
            try:
                config._group_of(spec.key)  # relayrl's own message, with its did-you-mean hint
            except ValueError as exc:
                raise ValueError(f"invalid --search {str(spec)!r}: {exc}") from None
        for value in spec.values_to_check():
            try:
                config._check_field(spec.key, value)
            except ValueError as exc:
                raise ValueError(f"invalid --search {str(spec)!r}: {exc}") from None


def split_model_keys(flat: dict[str, Any]) -> dict[str, Any]:
    """{'lr': 1e-3, 'model.fcnet_hiddens': [32]} -> {'lr': 1e-3, 'model': {'fcnet_hiddens': [32]}}."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if key.startswith("model."):
            out.setdefault("model", {})[key[len("model.") :]] = value
        else:
            out[key] = value
    return out


def check_search(
    base: Config,
    specs: list[SearchSpec],
    num_samples: int,
    scheduler: str,
    stop_iters: int,
    mode: str,
    perturbation_interval: int,
    metric: str = "episode_reward_mean",
) -> None:
    """Everything about a search that can be wrong, checked before Ray starts (ValueError naming it), Ray
    Tune being installed included."""
    from relayrl.extras import require

    require("ray.tune", "a Ray Tune search")
    if not specs:
        raise ValueError(
            "nothing to search: give at least one --search KEY=KIND(ARGS), e.g. lr=loguniform(1e-4,1e-2)"
        )
    check_against(specs, base)
    base.validate()
    for name, value, low in (
        ("samples", num_samples, 1),
        ("stop-iters", stop_iters, 1),
        ("perturbation-interval", perturbation_interval, 1),
    ):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"--{name} {value}: allowed: an integer >= {low}")
    if scheduler not in SCHEDULERS:
        raise ValueError(f"--scheduler {scheduler!r}: allowed: {', '.join(SCHEDULERS)}")
    if mode not in ("max", "min"):
        raise ValueError(f"--mode {mode!r}: allowed: max, min")
    if metric not in RESULT_FIELDS and not metric.startswith(RESULT_PREFIXES):
        raise ValueError(
            f"--metric {metric!r} is not a result field; allowed: {', '.join(RESULT_FIELDS)}, "
            f"or a field under {', '.join(RESULT_PREFIXES)} (e.g. learner/total_loss)"
        )
