"""Secrets (config.SECRET_FIELDS: the Redis password) never appear in what the CLI prints:
`--print-config` shows `***` in its `# --set:` line and null in its body; a refused value is not echoed."""

import pytest
import yaml

from relayrl import DQNConfig
from relayrl.cli import app as cli
from relayrl.cli.print_config import mask_set_item

SECRET = "hunter2-s3cr3t"


def test_print_config_masks_the_password_given_with_set(capsys):
    argv = [
        "train",
        "dqn",
        "CartPole-v1",
        "--set",
        "replay_backend=redis",
        "--set",
        f"redis_password={SECRET}",
        "--set",
        "lr=0.0005",
        "--print-config",
    ]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    assert "# --set: replay_backend=redis redis_password=*** lr=0.0005" in captured.out.splitlines()
    fields = yaml.safe_load(captured.out)
    assert fields["redis_password"] is None and fields["lr"] == 0.0005  # loads back: None = the env variable


def test_print_config_leaves_out_a_password_from_a_config_file(capsys, tmp_path):
    path = tmp_path / "redis.yaml"
    path.write_text(f"replay_backend: redis\nredis_password: {SECRET}\n")
    assert cli.main(["train", "dqn", "CartPole-v1", "--config", str(path), "--print-config"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out and yaml.safe_load(out)["redis_password"] is None


def test_a_refused_password_value_is_not_echoed(capsys):
    argv = ["train", "dqn", "CartPole-v1", "--set", "redis_password=123456789", "--print-config"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "relayrl: error: DQNConfig.redis_password = *** is invalid: allowed: a non-empty string, or null"
    ]
    with pytest.raises(ValueError, match=r"DQNConfig.redis_password = \*\*\* is invalid") as caught:
        DQNConfig().training(redis_password=["a", SECRET])
    assert SECRET not in str(caught.value)


def test_mask_set_item():
    assert mask_set_item(f"redis_password={SECRET}") == "redis_password=***"
    assert mask_set_item("redis_password=") == "redis_password=***"
    assert mask_set_item("lr=0.1") == "lr=0.1" and mask_set_item("redis_password") == "redis_password"


@pytest.mark.parametrize("item", [f"redis_password=[{SECRET}", f"redis_password=\x1f{SECRET}"])
def test_a_set_item_that_is_not_yaml_is_refused_without_echoing_the_password(capsys, item):
    assert cli.main(["train", "dqn", "CartPole-v1", "--set", item, "--print-config"]) == 2
    err = capsys.readouterr().err
    assert SECRET not in err and err.startswith("relayrl: error: invalid --set 'redis_password=***'"), err
