"""Skills: front matter rules, which folders count, and ``activate_skill``
through the bridge."""

from __future__ import annotations

from pathlib import Path

from agy_host_bridge_mcp import skills
from agy_host_bridge_mcp.testing import mcp_client, running_bridge


def write_skill(base: Path, folder: str, text: str) -> Path:
    path = base / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def test_front_matter_rules(tmp_path: Path) -> None:
    long = "word " * 60
    write_skill(tmp_path, "a", "---\nname: review\ndescription:   Review   a\n  diff\nname: other\n---\nBODY A\n")
    write_skill(tmp_path, "b", f"---\ndescription: {long}\n---\nBODY B")
    write_skill(tmp_path, "c", "no front matter at all\n")
    write_skill(tmp_path, "d", "---\nname: review\n---\nduplicate name: the first folder wins\n")
    write_skill(tmp_path, "e", "---\nname: unclosed\nbody without the closing line\n")
    found = {s.name: s for s in skills.scan([tmp_path])}
    assert sorted(found) == ["b", "c", "e", "review"]
    assert found["review"].description == "Review a"  # collapsed; only the first line of a key counts
    assert found["review"].dir == str(tmp_path / "a")
    assert len(found["b"].description) == 160 and "  " not in found["b"].description
    assert found["c"].description == "" and found["e"].description == ""
    assert skills.skill_body(found["review"]) == f"BODY A\n\n[skill resources dir: {tmp_path / 'a'}]"


def test_project_skills_only_when_trusted(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    project = tmp_path / "proj"
    write_skill(skills.global_skills_dir(env), "mine", "---\nname: shared\ndescription: global wins\n---\nG")
    write_skill(project / ".agy-host" / "skills", "theirs", "---\nname: shared\ndescription: project\n---\nP")
    write_skill(project / ".agy-host" / "skills", "extra", "---\nname: extra\n---\nX")
    untrusted = skills.scan(skills.skill_dirs(env, str(project), []))
    assert [s.name for s in untrusted] == ["shared"]
    trusted = skills.scan(skills.skill_dirs(env, str(project), [str(tmp_path)]))
    assert [(s.name, s.description) for s in trusted] == [("shared", "global wins"), ("extra", "")]
    assert not skills.project_trusted(str(tmp_path / "projector"), [str(project)])


async def test_activate_skill_through_the_bridge(tmp_path: Path) -> None:
    base = tmp_path / "home" / ".config" / "agy-host" / "skills"
    write_skill(base, "rev", "---\nname: review\ndescription: how we review\n---\nStep 1: read the diff.\n")
    async with running_bridge(tmp_path) as bridge, mcp_client(bridge) as client:
        listed = await client.list_tools()
        tool = next(t for t in listed.tools if t.name == "activate_skill")
        assert "- review: how we review" in (tool.description or "")
        assert tool.input_schema["properties"]["name"]["enum"] == ["review"]
        body = await client.call_tool("activate_skill", {"name": "review"})
        missing = await client.call_tool("activate_skill", {"name": "nope"})
        none_given = await client.call_tool("activate_skill", {})
    assert not body.is_error
    assert body.content[0].text == f"Step 1: read the diff.\n\n[skill resources dir: {base / 'rev'}]"
    assert missing.is_error and missing.content[0].text == "Error: unknown skill: nope"
    assert none_given.content[0].text == "Error: unknown skill: (none given)"
    assert bridge.turns.calls == []  # answered by the bridge: the turn never parked


async def test_no_skills_no_tool(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, mcp_client(bridge) as client:
        listed = await client.list_tools()
    assert "activate_skill" not in [t.name for t in listed.tools]
