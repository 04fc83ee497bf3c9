"""The retry budgets and the reachability check, in pieces (issue 28 item 7,
issue 26 item 8); the real harness against a failing model API is in
``test_faults.py``."""

from __future__ import annotations

import socket

import pytest
import trio
from agy_host_harness import reachability, retries, wire
from agy_host_harness.harness_config import Endpoint
from agy_host_harness.settings import HarnessSettings, narrow

LOCAL = Endpoint(kind="gemini", base_url="http://127.0.0.1:9", source="[harness] base_url")
URL = 'Post \\"http://127.0.0.1:9/v1beta/models/m:streamGenerateContent?alt=sse\\"'


def _step(text: str, code: int, *, source: str = "SOURCE_SYSTEM") -> wire.StepUpdate:
    head = text.split(" (", 1)[0]
    error = wire.ActionError(error_message=text, http_code=code)
    return wire.StepUpdate(source=source, state=wire.STEP_ERROR, error_message=head, text=text, error=error)


def test_the_harness_retryable_error_steps_are_told_apart() -> None:
    status = _step(
        "Encountered retryable error from model provider: Agent execution terminated due to error. "
        '("Error 503, Message: overloaded, Status: UNAVAILABLE, Details: []")',
        503,
    )
    assert retries.trouble_of(status) == retries.Trouble(kind="status", status=503, detail="UNAVAILABLE (overloaded)")
    assert retries.trouble_of(status).code == "HTTP_503"  # type: ignore[union-attr]
    refused = _step(
        "Encountered retryable error from model provider: There was a network issue connecting to the server, "
        f'please try again. ("doRequest: error sending request: {URL}: dial tcp 127.0.0.1:9: connect: '
        f"connection refused: doRequest: error sending request: {URL}: dial tcp 127.0.0.1:9: connect: "
        'connection refused")',
        2,
    )
    assert retries.trouble_of(refused) == retries.Trouble(kind="connect", detail="connection refused")
    dropped = _step(
        "Encountered retryable error from model provider: There was a network issue connecting to the server, "
        f'please try again. ("doRequest: error sending request: {URL}: EOF")',
        2,
    )
    assert retries.trouble_of(dropped) == retries.Trouble(kind="connect", detail="closed without an answer")
    assert retries.trouble_of(dropped).code == "UNREACHABLE"  # type: ignore[union-attr]
    # a failure the harness does not retry (a refused key) is the outcome's, not the budgets'
    key = _step('Agent execution terminated due to error. ("Error 401, Message: API key not valid")', 401)
    assert retries.trouble_of(key) is None
    assert retries.trouble_of(_step(status.text, 503, source="SOURCE_MODEL")) is None


def test_the_schedule_outlasts_the_longer_budget_and_api_retries_hands_the_count_back() -> None:
    assert retries.retries_to_cover(15) == 6  # 1 + 1.5 + 2.25 + 3.4 + 5.1 + 7.6 s
    default = retries.harness_retry_config(HarnessSettings())
    assert default == {
        "apiRetry": {
            "maxRetries": retries.retries_to_cover(60) + retries.SPARE_RETRIES,
            "initialSleepDurationMs": 1000,
            "exponentialMultiplier": 1.5,
        }
    }
    assert retries.harness_retry_config(HarnessSettings(api_retries=3)) == {"apiRetry": {"maxRetries": 3}}
    assert not retries.keeps_budgets(HarnessSettings(api_retries=3))
    unbounded = retries.harness_retry_config(HarnessSettings(retry_seconds=0))
    assert unbounded is not None and unbounded["apiRetry"]["maxRetries"] == 2**32 - 1
    assert retries.harness_retry_config(HarnessSettings(retry_seconds=0, connect_retry_seconds=0)) is None
    warned: list[str] = []
    narrowed = narrow({"retry_seconds": -1, "connect_retry_seconds": 2}, warned.append)
    assert (narrowed.retry_seconds, narrowed.connect_retry_seconds) == (60.0, 2.0)
    assert warned and "harness.retry_seconds" in warned[0]
    assert "429/503: up to 60s" in retries.summary(HarnessSettings())


@pytest.mark.trio
async def test_a_budget_runs_out_from_the_last_progress_and_progress_ends_the_streak() -> None:
    watch = retries.RetryWatch(HarnessSettings(retry_seconds=0.3, connect_retry_seconds=0.2), LOCAL)
    overloaded = retries.Trouble(kind="status", status=429, detail="RESOURCE_EXHAUSTED (slow down)")
    told = watch.failed(overloaded)
    assert told is not None and "429" in told and "up to 0.3s" in told and "retry_seconds" in told
    assert watch.failed(overloaded) is None, "said once per kind"
    with trio.move_on_after(0.15):
        await watch.exhausted()
        pytest.fail("the budget ran out before its time")
    watch.progress()  # the model answered: the streak is over
    with trio.move_on_after(0.5):
        await watch.exhausted()
        pytest.fail("a streak that ended cannot exhaust a budget")
    watch.failed(retries.Trouble(kind="connect", detail="connection refused"))
    with trio.fail_after(5):
        spent = await watch.exhausted()
    assert spent.code == "UNREACHABLE"
    message = watch.gave_up(spent, by_harness=False)
    assert "http://127.0.0.1:9" in message and "connect_retry_seconds" in message and "[harness] base_url" in message


@pytest.mark.trio
async def test_no_budget_means_waiting_for_the_harness() -> None:
    watch = retries.RetryWatch(HarnessSettings(api_retries=2), LOCAL)
    told = watch.failed(retries.Trouble(kind="status", status=503))
    assert told is not None and "api_retries" in told
    with trio.move_on_after(0.3):
        await watch.exhausted()
        pytest.fail("agy-host keeps no budget when api_retries is set")
    assert "gave up after 1 failed attempt ([harness] api_retries raises it)" in watch.gave_up(
        retries.Trouble(kind="status", status=503), by_harness=True
    )


@pytest.mark.trio
async def test_reachability_names_the_endpoint_and_its_setting() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    point = Endpoint(kind="openai", base_url=f"http://127.0.0.1:{port}/v1", source="[harness] openai_base_url")
    said = await reachability.problem(point, {})
    assert said is not None and f"http://127.0.0.1:{port}/v1" in said and "connection refused" in said
    assert "[harness] openai_base_url" in said
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen()
    with listener:
        live = Endpoint(kind="gemini", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}", source="x")
        assert await reachability.problem(live, {}) is None
    assert reachability.target(Endpoint(kind="gemini"), {}) is None, "Google's own endpoint is not checked"
    assert reachability.target(Endpoint(kind="vertex", project="p"), {}) is None
    proxied = Endpoint(kind="gemini", base_url="https://models.example", source="x")
    assert reachability.target(proxied, {"HTTPS_PROXY": "http://proxy:3128"}) is None, "the proxy answers, not it"
    assert reachability.target(proxied, {}) == ("models.example", 443)
    assert reachability.target(LOCAL, {"http_proxy": "http://proxy:3128"}) == ("127.0.0.1", 9), "loopback: direct"
    bad = reachability.target(Endpoint(kind="gemini", base_url="127.0.0.1:8080", source="[harness] base_url"), {})
    assert isinstance(bad, str) and "not an http(s) URL" in bad
