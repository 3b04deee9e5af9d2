"""Every python / bash / console code block in docs/**/*.md runs, page by page, in document order.

A page's python blocks run in ONE fresh interpreter (later blocks see the names earlier ones defined, as a
reader would expect); its shell blocks run with bash (`set -euo pipefail`) with this venv's bin first on
PATH; console blocks run their `$ ` lines. All blocks of a page share a temporary working directory, so a
shell block can use a file a python block wrote. A block fenced as ```text, or preceded by the comment
`<!-- no-test -->`, is not run (cluster set-up, pip installs: each says why). A failing block fails the
page's test with the block, its line number and its output.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

DOCS = ROOT / "docs"
RUNNABLE = {
    "python": "python",
    "py": "python",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
    "console": "console",
}
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NO_TEST = "<!-- no-test -->"
BLOCK_TIMEOUT_S = 240

# Runs in the page's interpreter: exec each block (one JSON line on stdin) in one namespace, then print a
# sentinel line so the test knows the block ended and how.
RUNNER = r"""
import json, sys, traceback
namespace = {"__name__": "__main__"}
for line in sys.stdin:
    block = json.loads(line)
    try:
        exec(compile(block["code"], block["name"], "exec"), namespace)
        status = "ok"
    except BaseException:
        traceback.print_exc()
        status = "error"
    sys.stdout.flush(); sys.stderr.flush()
    sys.stdout.write("\n@@docs-block@@ " + status + "\n"); sys.stdout.flush()
"""


def extract_blocks(text: str) -> list[dict]:
    """[{'lang': 'python'|'bash'|'console', 'code': ..., 'line': N}] of the runnable blocks, in order."""
    blocks = []
    for m in FENCE.finditer(text):
        lang = RUNNABLE.get(m.group(1).lower())
        before = text[: m.start()].rstrip()
        if lang is None or before.endswith(NO_TEST):
            continue
        blocks.append({"lang": lang, "code": m.group(2), "line": text.count("\n", 0, m.start()) + 1})
    return blocks


def console_commands(code: str) -> str:
    return "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))


def _env() -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


class PythonSession:
    """One interpreter for a page's python blocks; stderr goes to a file (read when a block fails)."""

    def __init__(self, cwd: Path, env: dict):
        self.stderr_path = cwd / ".docs-python-stderr"
        self._stderr = open(self.stderr_path, "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._buffer = b""

    def run(self, code: str, name: str) -> tuple[bool, str]:
        stderr_start = self.stderr_path.stat().st_size
        self.proc.stdin.write((json.dumps({"code": code, "name": name}) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + BLOCK_TIMEOUT_S
        fd = self.proc.stdout.fileno()
        while b"\n@@docs-block@@ " not in self._buffer:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                reason = "timed out" if not ready else f"interpreter exited ({self.proc.poll()})"
                return False, self._output(self._buffer, stderr_start) + f"\n[{reason}]"
            self._buffer += chunk
        out, _, rest = self._buffer.partition(b"\n@@docs-block@@ ")
        status, _, self._buffer = rest.partition(b"\n")
        return status == b"ok", self._output(out, stderr_start)

    def _output(self, stdout: bytes, stderr_start: int) -> str:
        with open(self.stderr_path) as fh:
            fh.seek(stderr_start)
            err = fh.read()
        return f"--- stdout\n{stdout.decode(errors='replace')[-4000:]}\n--- stderr\n{err[-8000:]}"

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


def run_shell(code: str, cwd: Path, env: dict) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + code],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        return False, f"[timed out]\n--- stderr\n{exc.stderr}"
    return (
        proc.returncode == 0,
        f"--- exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-8000:]}",
    )


PAGES = sorted(DOCS.rglob("*.md"))


def test_docs_have_runnable_blocks():
    assert PAGES, "no docs pages found"
    assert sum(len(extract_blocks(p.read_text())) for p in PAGES) >= 10


@pytest.mark.parametrize(
    "page", [p for p in PAGES if extract_blocks(p.read_text())], ids=lambda p: str(p.relative_to(DOCS))
)
def test_docs_page_code_blocks_run(page: Path, tmp_path: Path):
    env = _env()
    session = None
    try:
        for block in extract_blocks(page.read_text()):
            where = f"{page.relative_to(ROOT)}:{block['line']}"
            if block["lang"] == "python":
                session = session or PythonSession(tmp_path, env)
                ok, output = session.run(block["code"], where)
            else:
                code = console_commands(block["code"]) if block["lang"] == "console" else block["code"]
                ok, output = run_shell(code, tmp_path, env)
            if not ok:
                pytest.fail(
                    f"{block['lang']} block at {where} failed:\n```\n{block['code']}```\n{output}",
                    pytrace=False,
                )
    finally:
        if session is not None:
            session.close()


def test_extractor_skips_text_and_no_test_blocks():
    text = (
        "```python\nx = 1\n```\n<!-- no-test -->\n```bash\npip install x\n```\n"
        "```text\nray start --head\n```\n"
        "```console\n$ relayrl --help\nusage\n```\n"
    )
    blocks = extract_blocks(text)
    assert [(b["lang"], b["line"]) for b in blocks] == [("python", 1), ("console", 11)]
    assert console_commands(blocks[1]["code"]) == "relayrl --help"


def test_a_failing_block_is_reported_with_its_traceback(tmp_path):
    session = PythonSession(tmp_path, _env())
    try:
        assert session.run("value = 41", "page.md:1")[0]
        ok, output = session.run("assert value == 42, 'value is off'", "page.md:9")
        assert not ok and "page.md:9" in output and "value is off" in output
        ok, _ = session.run("value += 1\nassert value == 42", "page.md:12")  # state carries across blocks
        assert ok
    finally:
        session.close()
    ok, output = run_shell("relayrl train no-such-algo CartPole-v1", tmp_path, _env())
    assert not ok and "unknown algorithm" in output
