"""The kit's scripted model API: a real HTTP server process, both dialects."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.models.api import ENDED, ModelApiProcess, gemini_position, openai_position


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": f"<USER_REQUEST>\n{text}\n</USER_REQUEST>\n<ADDITIONAL_METADATA>x"}]}


def test_positions_count_requests_and_function_responses_sent_as_model() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "t", "args": {}}}]}
    answer = {"role": "model", "parts": [{"functionResponse": {"name": "t", "response": {}}}]}
    body = {"contents": [_user("one"), {"role": "model", "parts": [{"text": "hi"}]}, _user("two"), call, answer]}
    assert gemini_position(body) == ("two", 2, 1)
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "content": "r"},
    ]
    assert openai_position({"messages": messages}) == ("a", 1, 1)


def test_gemini_stream_text_thought_call_usage_and_script_end(tmp_path: Path) -> None:
    script = {
        "turns": [
            [
                [{"thought": "hm"}, {"text": ["a", "b"]}, {"usage": {"input": 5, "output": 2}}],
                [{"call": {"name": "ls", "args": {"p": 1}}}],
            ]
        ]
    }
    with ModelApiProcess(tmp_path, script) as api:
        url = f"{api.url}/v1beta/models/m1:streamGenerateContent?alt=sse"
        status, text = _post(url, {"contents": [_user("go")]})
        frames = _sse(text)
        assert status == 200
        parts = [p for f in frames for p in f["candidates"][0]["content"]["parts"]]
        assert parts == [{"text": "hm", "thought": True}, {"text": "a"}, {"text": "b"}]
        assert frames[-1]["usageMetadata"]["promptTokenCount"] == 5 and "usageMetadata" not in frames[0]
        answered = {"role": "model", "parts": [{"functionResponse": {"name": "x", "response": {}}}]}
        _, text = _post(url, {"contents": [_user("go"), answered]})
        assert _sse(text)[0]["candidates"][0]["content"]["parts"] == [
            {"functionCall": {"name": "ls", "args": {"p": 1}}}
        ]
        _, text = _post(url, {"contents": [_user("go"), answered, answered]})
        assert _sse(text)[0]["candidates"][0]["content"]["parts"] == [{"text": ENDED}]
        logged = api.requests()
        assert [(r["model"], r["user_text"], r["call"]) for r in logged] == [
            ("m1", "go", 0),
            ("m1", "go", 1),
            ("m1", "go", 2),
        ]


def test_errors_and_the_api_key(tmp_path: Path) -> None:
    script = {"rules": [{"match": "boom", "replies": [[{"error": {"status": 429, "message": "slow down"}}]]}]}
    with ModelApiProcess(tmp_path, script, api_key="right") as api:
        url = f"{api.url}/v1beta/models/m:streamGenerateContent?alt=sse"
        status, text = _post(url, {"contents": [_user("hi")]}, {"x-goog-api-key": "wrong"})
        assert status == 401 and json.loads(text)["error"]["status"] == "UNAUTHENTICATED"
        status, text = _post(url, {"contents": [_user("boom")]}, {"x-goog-api-key": "right"})
        assert status == 429 and json.loads(text)["error"]["message"] == "slow down"
        status, text = _post(url, {"contents": [_user("hi")]}, {"x-goog-api-key": "right"})
        assert status == 200 and _sse(text)[0]["candidates"][0]["content"]["parts"] == [{"text": "hi"}]


@pytest.mark.parametrize("stream", [True, False])
def test_openai_chat_completions(tmp_path: Path, stream: bool) -> None:
    script = {"turns": [[[{"text": ["x", "y"]}, {"usage": {"input": 3, "output": 2}}]]]}
    with ModelApiProcess(tmp_path, script) as api:
        body = {"model": "llama", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        status, text = _post(f"{api.url}/v1/chat/completions", body)
        assert status == 200
        if stream:
            chunks = _sse(text)
            content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
            assert content == "xy" and chunks[-1]["usage"]["total_tokens"] == 5 and text.rstrip().endswith("[DONE]")
        else:
            answer = json.loads(text)
            assert answer["choices"][0]["message"]["content"] == "xy" and answer["usage"]["prompt_tokens"] == 3
