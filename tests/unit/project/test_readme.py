"""The README's first two lines are the set-up commands, and CI runs exactly the second one."""

from tests.helpers.paths import ROOT


def test_readme_commands_and_ci_agree():
    first, second = ROOT.joinpath("README.md").read_text().splitlines()[:2]
    assert "relayrl train ppo CartPole-v1" in first and first.startswith("python3 -m venv .venv")
    assert second.endswith("python -m pytest") and "python3 -m venv .venv" in second
    ci_lines = [
        line
        for line in ROOT.joinpath(".ci", "run").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    ci_commands = iter(command for line in ci_lines for command in line.split(" && "))
    # every command of the README's line runs in CI, in the same order (CI adds the linters before pytest)
    assert all(command in ci_commands for command in second.split(" && ")), (second, ci_lines)
    assert ci_lines[-1] == ".venv/bin/python -m pytest"
