"""`relayrl train --help` documents every flag, the stop rule, the algorithms and examples; `relayrl list`
shows the algorithms and every tuned config with its recorded result; an untuned pair says so."""

import argparse

import pytest

from relayrl.algorithms import REGISTRY
from relayrl.cli import app as cli
from relayrl.core import tuned


def subparser(name):
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["train", "scale"])
def test_every_argument_has_help(command):
    parser = subparser(command)
    undocumented = [
        a.option_strings or a.dest for a in parser._actions if not a.help or a.help == argparse.SUPPRESS
    ]
    assert undocumented == []


def test_train_help_has_the_stop_rule_the_algorithms_and_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = capsys.readouterr().out
    assert "with none given, at the env's reward_threshold" in text and "1,000,000" in text
    assert "algorithms: " + ", ".join(sorted(REGISTRY)) in text
    assert "examples:\n  relayrl train ppo CartPole-v1\n" in text and "--resume auto" in text
    for action in subparser("train")._actions:
        for flag in action.option_strings:
            assert flag in text


def test_list_shows_every_algorithm_and_every_tuned_result(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name in REGISTRY:
        assert any(line.startswith(f"  {name} ") and line.rstrip().endswith(".") for line in lines), name
    assert any("PPO: Proximal Policy Optimization" in line for line in lines)
    flat = " ".join(out.split())
    for algo in REGISTRY:
        for env in tuned.available(algo):
            assert any(line.split()[:2] == [algo, env] for line in lines), (algo, env)
            assert " ".join(tuned.notes(tuned.path_for(algo, env))["_result"].split()) in flat
    assert all(len(line) <= 110 for line in lines)


def test_an_untuned_pair_says_so_in_one_line_and_a_tuned_one_does_not(capsys):
    assert cli.main(["train", "ppo", "MountainCar-v0", "--print-config"]) == 0
    err = capsys.readouterr().err
    assert err == "relayrl: no tuned config for ppo on MountainCar-v0: using defaults; see `relayrl list`\n"
    assert cli.main(["train", "ppo", "CartPole-v1", "--print-config"]) == 0
    assert capsys.readouterr().err == ""
