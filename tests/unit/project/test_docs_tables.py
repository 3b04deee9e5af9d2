"""The generated parts of docs/ match the code (config defaults, tuned results) and every relative link in the
docs and the README points at a file that exists."""

from __future__ import annotations

import importlib.util
import re

from tests.helpers.paths import ROOT

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"^```.*?^```|`[^`\n]*`", re.M | re.S)  # links inside code are not links


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_tables", DOCS / "gen_config_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_are_current():
    assert _generator().stale_pages() == [], "run: python docs/gen_config_tables.py"


def test_every_algorithm_has_a_page_with_its_generated_table():
    from relayrl.algorithms import REGISTRY

    for name in REGISTRY:
        text = (DOCS / "algorithms" / f"{name}.md").read_text()
        assert (
            f"<!-- BEGIN generated:config:{name} -->" in text
            and f"<!-- BEGIN generated:tuned:{name} -->" in text
        )
        assert "arXiv" in text or "no arXiv" in text, f"{name}.md names no paper"


def test_generated_table_shows_the_class_defaults():
    from relayrl.algorithms.ppo import PPOConfig

    table = _generator().config_table("ppo")
    assert f"| `train_batch_size` | `.training()` | `{PPOConfig().train_batch_size}` |" in table
    assert "| `num_sgd_iter` | `.training()` | `10` |" in table
    assert "`num_envs_per_worker`" not in table  # unchanged shared fields live in configuration.md only


def test_relative_links_resolve():
    broken = []
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for target in LINK.findall(CODE.sub("", page.read_text())):
            if "://" in target or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
    assert "](docs/index.md)" in (ROOT / "README.md").read_text()
