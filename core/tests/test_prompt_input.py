"""Files and images in prompts: ``@path``, ``--file``, ``--image``, pasted image
paths, ``--system-prompt @FILE``, and the clear errors when an agent cannot
take them (checked against a real ACP agent's promptCapabilities)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from agy_host.contract.prompt import ImageBlock, ResourceBlock, TextBlock
from agy_host.runtime.prompt_input import (
    PromptInputError,
    at_paths,
    build_prompt,
    describe,
    pasted_images,
    read_system_prompt,
    size_text,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
AGY_HOST = Path(sys.executable).with_name("agy-host")
ENGINES = {ep.name for ep in metadata.entry_points(group="agy_host.engines")}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "shot one.png").write_bytes(PNG)
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    return tmp_path


def test_at_paths_attach_existing_files_only(work: Path) -> None:
    text = "explain @src/app.py and @notes.md, ping @alice (mail bob@example.com)"
    assert at_paths(text, str(work)) == [work / "src" / "app.py", work / "notes.md"]


def test_blocks_text_first_then_files_then_images(work: Path) -> None:
    blocks = build_prompt("look at @notes.md", cwd=str(work), files=["src/app.py"], images=["shot one.png"])
    assert isinstance(blocks[0], TextBlock) and blocks[0].text == "look at @notes.md"
    first, image, second = blocks[1:]
    assert isinstance(first, ResourceBlock) and first.uri == (work / "src" / "app.py").as_uri()
    assert first.text == "print('hi')\n" and first.mime_type == "text/x-python"
    assert isinstance(image, ImageBlock) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG
    assert isinstance(second, ResourceBlock) and second.uri.endswith("notes.md")
    assert describe(blocks) == "2 files, 1 image"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"files": ["missing.txt"]}, "no such file: missing.txt"),
        ({"files": ["blob.bin"]}, "binary file"),
        ({"images": ["notes.md"]}, "not an image"),
        ({"files": ["src"]}, "is a directory"),
    ],
)
def test_refusals_say_why(work: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PromptInputError, match=message):
        build_prompt("x", cwd=str(work), **kwargs)


def test_attachments_have_a_size_limit(work: Path) -> None:
    with pytest.raises(PromptInputError, match="the limit is 4"):
        build_prompt("x", cwd=str(work), files=["notes.md"], max_bytes=4)


@pytest.mark.parametrize(
    "pasted",
    ["'{path}'", '"{path}"', "{escaped}", "{uri}"],
    ids=["single-quoted", "double-quoted", "backslashes", "file-uri"],
)
def test_pasted_image_paths_become_images(work: Path, pasted: str) -> None:
    path = str(work / "shot one.png")
    uri = (work / "shot one.png").as_uri()
    text = "what is wrong here? " + pasted.format(path=path, escaped=path.replace(" ", "\\ "), uri=uri)
    cleaned, images = pasted_images(text, str(work))
    assert images == [work / "shot one.png"]
    assert cleaned == "what is wrong here? [image: shot one.png]"


def test_text_that_only_mentions_a_path_is_left_alone(work: Path) -> None:
    assert pasted_images("see /no/such/file.png please", str(work)) == ("see /no/such/file.png please", [])


def test_an_at_path_that_is_no_file_is_told_and_sent_as_text(work: Path) -> None:
    """Issue 26 item 12: ``@missing.md`` used to go out as text with no word;
    a mention (``@alice``) or an address stays quiet."""
    told: list[tuple[str, str]] = []
    text = "read @missing.md, @src/nope and @src, ping @alice (mail bob@example.com)"
    blocks = build_prompt(text, cwd=str(work), note=lambda level, message: told.append((level, message)))
    assert blocks == [TextBlock(text=text)]
    assert told == [
        ("warning", f"@missing.md: no such file ({work / 'missing.md'}), sent as text"),
        ("warning", f"@src/nope: no such file ({work / 'src' / 'nope'}), sent as text"),
        ("warning", "@src is a directory, sent as text (attach its files one by one)"),
    ]


def test_each_attachment_is_told_with_its_size(work: Path) -> None:
    told: list[tuple[str, str]] = []
    build_prompt(
        "see @notes.md",
        cwd=str(work),
        images=["shot one.png"],
        note=lambda level, message: told.append((level, message)),
    )
    assert told == [("info", "attached image shot one.png (70 bytes)"), ("info", "attached file notes.md (8 bytes)")]
    assert size_text(1) == "1 byte" and size_text(1536) == "1.5 KiB" and size_text(3 * 1024 * 1024) == "3.0 MiB"


def test_system_prompt_from_a_file(work: Path) -> None:
    (work / "sys.md").write_text("You review code.")
    assert read_system_prompt("@sys.md", str(work)) == "You review code."
    assert read_system_prompt("plain text", str(work)) == "plain text"
    with pytest.raises(PromptInputError, match="cannot read"):
        read_system_prompt("@nope.md", str(work))


# -- against real agents ------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "PYTEST", "XDG_"))}
    out.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "c"), XDG_STATE_HOME=str(home / "s"))
    out["AGY_HOST_KEEP_ALIVE_MINUTES"] = "0"  # cold: no keeper outlives the test
    return out


def ask(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [str(AGY_HOST), "ask", "--format", "json", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
def test_acp_agent_receives_files_and_images(
    env: dict[str, str], work: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("echo", prompt_capabilities={"image": True, "embeddedContext": True})
    code, _, err = ask(
        env, work, "--engine", "acp", "--agent", agent.command_line, "--image", "shot one.png", "read @src/app.py"
    )
    assert code == 0, err
    [prompt] = [m["params"]["prompt"] for m in agent.requests("session/prompt")]
    kinds = [b["type"] for b in prompt]
    assert kinds == ["text", "image", "resource"]
    assert prompt[2]["resource"] == {
        "uri": (work / "src" / "app.py").as_uri(),
        "mimeType": "text/x-python",
        "text": "print('hi')\n",
    }


@pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
def test_the_cli_warns_of_a_missing_file_and_tells_an_attached_one(
    env: dict[str, str], work: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("echo")
    code, _, err = ask(env, work, "--engine", "acp", "--agent", agent.command_line, "read @missing.md and @notes.md")
    assert code == 0, err
    assert f"agy-host: warning: @missing.md: no such file ({work / 'missing.md'}), sent as text" in err
    assert "agy-host: attached file notes.md (8 bytes)" in err
    [prompt] = [m["params"]["prompt"] for m in agent.requests("session/prompt")]
    assert [b["type"] for b in prompt] == ["text", "resource"]


@pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
@pytest.mark.parametrize(
    ("caps", "args", "message"),
    [
        ({"image": False, "embeddedContext": True}, ["--image", "shot one.png", "x"], "does not accept images"),
        ({"image": True, "embeddedContext": False}, ["read @notes.md"], "does not accept embedded resources"),
    ],
)
def test_unsupported_content_is_a_clear_error(  # noqa: PLR0917 - fixtures and parameters
    env: dict[str, str],
    work: Path,
    fake_acp_agent: Callable[..., Any],
    caps: dict[str, bool],
    args: list[str],
    message: str,
) -> None:
    agent = fake_acp_agent("echo", prompt_capabilities=caps)
    code, report, _ = ask(env, work, "--engine", "acp", "--agent", agent.command_line, *args)
    assert code == 1
    assert report["status"] == "error" and message in report["error"]
    assert agent.requests("session/prompt") == [], "nothing was sent half"


@pytest.mark.skipif("stream-json" not in ENGINES, reason="the stream-json engine is not installed")
def test_stream_json_refuses_images_before_starting(env: dict[str, str], work: Path, tmp_path: Path) -> None:
    from agy_host.testing.agy_cli.agent import make_fake_agy

    agy = make_fake_agy(tmp_path / "fake-agy", "echo")
    code, report, _ = ask(env | agy.env, work, "--engine", "stream-json", "--image", "shot one.png", "x")
    assert code == 2
    assert "cannot send images" in report["error"]
    assert agy.argvs() == [], "agy was never started"
