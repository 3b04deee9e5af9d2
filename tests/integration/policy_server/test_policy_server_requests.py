"""The policy server's boundary: every malformed request gets a 4xx and a message saying what is
wrong, and the server keeps serving afterwards. A real server on loopback, raw HTTP."""

import http.client
import json
import re

import pytest

from relayrl import PPOConfig
from relayrl.policy_server import PolicyClient, PolicyServerError
from relayrl.policy_server.serve import ServedAlgorithm

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def served():
    served = ServedAlgorithm(
        PPOConfig().environment("CartPole-v1").training(train_batch_size=64, sgd_minibatch_size=32),
        token=TOKEN,
    ).start()
    yield served
    served.stop()


def raw(served, method, path, body=b"", headers=None):
    conn = http.client.HTTPConnection(served.server.host, served.server.port, timeout=10)
    all_headers = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
    if method == "POST" and "Content-Length" not in all_headers and body is not None:
        all_headers["Content-Length"] = str(len(body))
    conn.request(method, path, body=body, headers=all_headers)
    response = conn.getresponse()
    payload = json.loads(response.read())
    conn.close()
    return response.status, payload


def post(served, path, obj):
    return raw(served, "POST", path, json.dumps(obj).encode())


@pytest.mark.parametrize(
    "method,path,body,headers,status,message",
    [
        ("POST", "/get_action", b"{not json", None, 400, "request body is not valid JSON"),
        ("POST", "/get_action", b"[1, 2]", None, 400, "must be a JSON object, got list"),
        ("POST", "/get_action", b'{"observation": [0, 0, 0, 0]}', None, 400, "missing field 'episode_id'"),
        (
            "POST",
            "/get_action",
            b'{"episode_id": "nope", "observation": [0, 0, 0, 0]}',
            None,
            404,
            "unknown episode_id 'nope'",
        ),
        (
            "POST",
            "/log_returns",
            b'{"episode_id": "nope", "reward": 1}',
            None,
            404,
            "unknown episode_id 'nope'",
        ),
        (
            "POST",
            "/end_episode",
            b'{"episode_id": 7, "observation": [0, 0, 0, 0]}',
            None,
            400,
            "episode_id must be a non-empty string",
        ),
        (
            "POST",
            "/get_action",
            b'{"episode_id": "nope", "observation": [0, 0, 0, 0], "seq": -1}',
            None,
            400,
            "seq must be an integer from 0 to 9007199254740992, got -1",
        ),
        (
            "POST",
            "/log_returns",
            b'{"episode_id": "nope", "reward": 1, "seq": true}',
            None,
            400,
            "seq must be an integer from 0 to 9007199254740992, got True",
        ),
        ("POST", "/start_episode", b'{"seq": 1.5}', None, 400, "seq must be an integer"),
        ("POST", "/start_episode", b'{"seq": 9007199254740993}', None, 400, "seq must be an integer"),
        ("POST", "/teleport", b"{}", None, 404, "unknown path '/teleport'"),
        ("GET", "/get_action", None, None, 405, "use POST"),
        ("POST", "/start_episode", b"{}", {"Authorization": "Bearer wrong"}, 401, "missing or wrong token"),
        (
            "POST",
            "/start_episode",
            b"{}",
            {"Content-Length": str(2 << 20)},
            413,
            "over the 1048576 byte limit",
        ),
    ],
)
def test_malformed_requests_get_4xx_with_a_message(served, method, path, body, headers, status, message):
    got_status, payload = raw(served, method, path, body, headers)
    assert got_status == status and message in payload["error"], payload


def test_wrong_observations_and_rewards_name_the_problem(served):
    _, started = post(served, "/start_episode", {})
    eid = started["episode_id"]
    cases = [
        (
            "/get_action",
            {"episode_id": eid, "observation": [0.0, 0.0, 0.0]},
            "observation has shape (3,), expected (4,)",
        ),
        (
            "/get_action",
            {"episode_id": eid, "observation": [[0.0] * 4]},
            "observation has shape (1, 4), expected (4,)",
        ),
        ("/get_action", {"episode_id": eid, "observation": "up"}, "must be a nested list of numbers"),
        ("/get_action", {"episode_id": eid, "observation": [0, [1], 2, 3]}, "observation[1] must be a"),
        ("/get_action", {"episode_id": eid}, "missing field 'observation'"),
        ("/log_returns", {"episode_id": eid, "reward": 1.0}, "has no action yet"),
        (
            "/log_returns",
            {"episode_id": eid, "reward": "lots"},
            "reward must be a number within float32's range (|x| <= 3.403e+38), got 'lots'",
        ),
        (
            "/end_episode",
            {"episode_id": eid, "observation": [0.0] * 4, "truncated": "yes"},
            "truncated must be true or false",
        ),
    ]
    for path, body, message in cases:
        status, payload = post(served, path, body)
        assert status == 400 or (status == 409 and "no action yet" in message), (path, body, payload)
        assert message in payload["error"], (path, body, payload)
    status, payload = raw(
        served, "POST", "/get_action", b'{"episode_id": "%s", "observation": [NaN, 0, 0, 0]}' % eid.encode()
    )
    assert status == 400 and "observation[0] = NaN is not a finite number" in payload["error"]
    # the episode is unharmed by all of that, and the server still serves
    status, payload = post(served, "/get_action", {"episode_id": eid, "observation": [0.0, 0.0, 0.0, 0.0]})
    assert status == 200 and payload["action"] in (0, 1)
    assert post(served, "/end_episode", {"episode_id": eid, "observation": [0.0] * 4})[0] == 200
    assert post(served, "/get_action", {"episode_id": eid, "observation": [0.0] * 4})[0] == 404  # ended


def test_a_repeated_request_gets_the_first_answer(served):
    """What a client's retry sends when only the reply was lost: the same body, the same seq."""
    start = {"episode_id": "retried", "seq": 2**52 + 7}
    assert (
        post(served, "/start_episode", start)
        == post(served, "/start_episode", start)
        == (
            200,
            {"episode_id": "retried"},
        )
    )
    step = {"episode_id": "retried", "observation": [0.01, 0.0, -0.01, 0.0], "seq": 1}
    first = post(served, "/get_action", step)
    assert first[0] == 200 and all(post(served, "/get_action", step) == first for _ in range(5))
    end = {"episode_id": "retried", "observation": [0.0] * 4, "reward": 1.0, "seq": 2}
    assert post(served, "/end_episode", end) == post(served, "/end_episode", end) == (200, {})
    status, payload = post(served, "/end_episode", {**end, "seq": 3})  # a new request: the episode is over
    assert status == 404 and "unknown episode_id 'retried'" in payload["error"]


def test_client_round_trip_and_errors(served):
    client = PolicyClient(served.url, token=TOKEN)
    eid = client.start_episode("my-episode")
    with pytest.raises(PolicyServerError, match="already open") as info:
        client.start_episode("my-episode")
    assert info.value.status == 409
    for _ in range(5):
        assert client.get_action(eid, [0.01, 0.0, -0.01, 0.0]) in (0, 1)
        client.log_returns(eid, 1.0)
    client.end_episode(eid, [0.0] * 4, truncated=True)
    assert client.status()["open_episodes"] == 0
    with pytest.raises(PolicyServerError, match="missing or wrong token"):
        PolicyClient(served.url, token="").start_episode()
    client.close()


def test_served_experience_reaches_the_learner_and_new_weights_are_served():
    """70 steps of one episode fill a 64-step train batch: one PPO iteration runs on exactly them,
    and the next action is computed with the weights it published."""
    config = PPOConfig().environment("CartPole-v1").training(train_batch_size=64, sgd_minibatch_size=32)
    served = ServedAlgorithm(config).start()
    try:
        client = PolicyClient(served.url)
        eid = client.start_episode()
        for t in range(70):
            client.get_action(eid, [0.0, 0.0, 0.01 * t, 0.0])
            client.log_returns(eid, 1.0)
        client.end_episode(eid, [0.0, 0.0, 0.7, 0.0])
        result = served.train()
        assert result["training_iteration"] == 1 and result["timesteps_total"] == 70
        assert result["episode_reward_mean"] == 70.0 and result["episode_len_mean"] == 70
        assert client.status()["served_weights_version"] == 0  # no forward pass since the update
        client.get_action(client.start_episode(), [0.0] * 4)
        status = client.status()
        assert (
            status["served_weights_version"] == status["weights_version"] == 1
            and status["training_iteration"] == 1
        )
        client.close()
    finally:
        served.stop()


def test_non_loopback_needs_a_token():
    with pytest.raises(ValueError, match="needs a shared-secret token"):
        ServedAlgorithm(PPOConfig().environment("CartPole-v1"), host="0.0.0.0")


@pytest.mark.parametrize(
    "env_id,good_obs,bad_obs,message,check_action",
    [
        (
            "Pendulum-v1",
            [1.0, 0.0, 0.5],
            [1.0, 0.0],
            "observation has shape (2,), expected (3,)",
            lambda a: isinstance(a, list) and len(a) == 1 and -2.0 <= a[0] <= 2.0,
        ),  # Box action: clipped floats
        ("FrozenLake-v1", 5, 16, "observation must be an integer in [0, 15]", lambda a: a in (0, 1, 2, 3)),
    ],
)
def test_other_spaces_on_the_wire(env_id, good_obs, bad_obs, message, check_action):
    served = ServedAlgorithm(
        PPOConfig().environment(env_id).training(train_batch_size=64, sgd_minibatch_size=32)
    ).start()
    try:
        client = PolicyClient(served.url)
        eid = client.start_episode()
        assert check_action(client.get_action(eid, good_obs))
        with pytest.raises(PolicyServerError, match=re.escape(message)):
            client.get_action(eid, bad_obs)
        client.close()
    finally:
        served.stop()
