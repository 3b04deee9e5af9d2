"""run.json: the command line (secrets masked), versions, git revision; earlier starts kept, a damaged file
never read as anything but 'no earlier starts'."""

import json
import subprocess

import relayrl
from relayrl.cli.print_config import mask_argv
from relayrl.persistence import run_info
from tests.helpers.paths import ROOT


def test_secrets_on_the_command_line_are_masked():
    argv = ["relayrl", "train", "--set", "redis_password=hunter2", "--set=redis_password=x", "--set", "lr=1"]
    assert mask_argv(argv) == [
        "relayrl", "train", "--set", "redis_password=***", "--set=redis_password=***", "--set", "lr=1",
    ]  # fmt: skip


def test_each_start_is_recorded_and_earlier_ones_are_kept(tmp_path):
    run_info.write(str(tmp_path), ["relayrl", "train", "a"], tuned_file="/t.yaml")
    path = run_info.write(str(tmp_path), ["relayrl", "train", "b"], resumed_from="/ckpt")
    info = json.loads(open(path).read())
    assert info["argv"] == ["relayrl", "train", "b"] and info["resumed_from"] == "/ckpt"
    assert [e["argv"][-1] for e in info["earlier"]] == ["a"] and info["earlier"][0]["tuned_file"] == "/t.yaml"
    assert set(info["versions"]) == {"relayrl", "python", "tensorflow", "ray", "gymnasium", "numpy"}
    assert info["started_utc"].endswith("+00:00")


def test_a_damaged_run_json_is_replaced_not_trusted(tmp_path):
    for junk in ("{not json", '{"earlier": "x", "argv": ["a"]}', "[1, 2]", "\x00" * 10):
        (tmp_path / "run.json").write_text(junk)
        info = json.loads(open(run_info.write(str(tmp_path), ["relayrl"])).read())
        assert info["earlier"] == [] and info["argv"] == ["relayrl"]
    (tmp_path / "run.json").write_text('{"earlier": [1, {"argv": ["old"]}, {"argv": 5}], "argv": "x"}')
    info = json.loads(open(run_info.write(str(tmp_path), ["relayrl"])).read())
    assert info["earlier"] == [{"argv": ["old"]}]  # only entries of the shape run_info writes


def test_git_revision_is_the_source_checkouts_head_or_none():
    revision, dirty = run_info.git_revision()
    source_is_root = relayrl.__file__.startswith(str(ROOT) + "/")
    if source_is_root and (ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert revision == head.stdout.strip() and isinstance(dirty, bool)
    else:  # an installed package: no revision, never another repository's
        assert revision is None and dirty is None
