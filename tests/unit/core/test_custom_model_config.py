"""The model dict's custom_model / custom_critic keys: a class or its import path, how they survive copy()
and config.json, and the checkpoint rule (a stored class name is never
imported: the caller supplies the class)."""

import json

import pytest

from relayrl import DQNConfig, PPOConfig
from relayrl.core.config_io import custom_class
from tests.helpers.custom_models import CriticNet, QNetwork

PATH = "tests.helpers.custom_models:QNetwork"


def test_a_class_is_kept_by_its_path_through_copy_and_json():
    config = DQNConfig().training(model={"custom_model": QNetwork, "custom_model_kwargs": {"hidden": 8}})
    assert config.model["custom_model"] == PATH
    copied = config.copy()
    assert custom_class(copied.model["custom_model"], "custom_model") is QNetwork
    stored = json.loads(json.dumps(config.to_dict()))
    assert stored["model"]["custom_model"] == PATH and stored["model"]["custom_model_kwargs"] == {"hidden": 8}


def test_a_class_defined_where_no_import_reaches_is_found_again():
    class LocalNet(QNetwork):
        pass

    config = DQNConfig().environment("CartPole-v1").training(model={"custom_model": LocalNet})
    path = config.copy().model["custom_model"]
    assert "<locals>" in path and custom_class(path, "custom_model") is LocalNet
    config.validate()  # the stored path passes the model check again


def test_yaml_names_the_class_by_import_path():
    config = DQNConfig.from_yaml(f"env: CartPole-v1\nmodel:\n  custom_model: '{PATH}'\n")
    assert custom_class(config.model["custom_model"], "custom_model") is QNetwork
    config.update_from_dict({"model": {"custom_critic": "tests.helpers.custom_models:CriticNet"}})
    assert custom_class(config.model["custom_critic"], "custom_critic") is CriticNet


@pytest.mark.parametrize(
    "model, problem",
    [
        ({"custom_model": 3}, "allowed: None, a tf.keras.Model subclass, or its import path"),
        ({"custom_model": "not a path"}, "allowed: None, a tf.keras.Model subclass, or its import path"),
        ({"custom_model_kwargs": {"a": object()}}, "allowed: a mapping of str keyword: JSON value"),
        ({"custom_critic_kwargs": [1]}, "allowed: a mapping of str keyword: JSON value"),
    ],
)
def test_bad_values_are_refused_in_one_line(model, problem):
    with pytest.raises(ValueError) as err:
        PPOConfig().training(model=model)
    assert problem in str(err.value) and str(err.value).startswith("PPOConfig.model = ")
    assert "\n" not in str(err.value)


def stored(**model):
    return json.loads(json.dumps(DQNConfig().environment("CartPole-v1").training(model=model).to_dict()))


def test_a_checkpoint_naming_a_class_is_refused_without_it():
    data = stored(custom_model=QNetwork)
    with pytest.raises(ValueError) as err:
        DQNConfig.from_checkpoint_dict(data)
    message = str(err.value)
    assert message.startswith(f"model.custom_model = '{PATH}' names a Python class")
    assert "custom_model=Class" in message and "--custom-model module:Class" in message


def test_a_checkpoint_with_the_class_supplied():
    class Other(QNetwork):  # the caller's class is used, whatever the checkpoint names
        pass

    config = DQNConfig.from_checkpoint_dict(stored(custom_model=QNetwork), classes={"custom_model": Other})
    assert custom_class(config.model["custom_model"], "custom_model") is Other


def test_a_class_for_a_checkpoint_without_one_is_refused():
    with pytest.raises(ValueError, match="custom_model was passed but this checkpoint's model has no"):
        DQNConfig.from_checkpoint_dict(stored(), classes={"custom_model": QNetwork})


def test_a_checkpoint_class_name_is_never_imported(tmp_path, monkeypatch):
    """A name of a module that would run code on import: refused before anything is imported."""
    (tmp_path / "evil_model_module.py").write_text("raise SystemExit('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = stored()
    data["model"]["custom_model"] = "evil_model_module:Net"
    with pytest.raises(ValueError, match="names a Python class and a checkpoint never imports code"):
        DQNConfig.from_checkpoint_dict(data)
