"""Every install hint names something a user can install from where they are
(issue 26 item 10).

agy-host's distributions are built from this repository: from a clone they
install as folders (``./core``, ``./plugins/harness_engine``). A hint that
names a bare distribution (``pip install agy-host-harness``) sends a user
with a clone to an index that may not serve it. This test finds every
``pip install`` in the docs and READMEs and in the code's strings, and
checks each thing it installs: a path must be a folder of this repository
(or one the reader makes in the text), and a distribution of this
repository must come with its folder in the same hint (both forms). The
hints the code builds (:mod:`agy_host.engine.install_hint`) are checked as
they read in a clone and installed from elsewhere.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agy_host.engine.install_hint import ENGINE_DISTS, FOLDERS, checkout, engine_hint, install_hint

REPO = Path(__file__).resolve().parents[1]
#: ``pip install`` and what follows, up to the end of the command.
PIP = re.compile(r"pip install((?:[ \t]+[^\s`#;&)]+)+)")
#: Paths the docs' readers create themselves (the tutorial's plugin).
READER_MADE = {"./agy-host-tally"}


def doc_hints() -> Iterator[tuple[str, Path, str, str]]:
    """``(where, folder, hint, context)``: each ``pip install`` of the docs, with its paragraph."""
    pages = [
        REPO / "README.md",
        *REPO.glob("*/README.md"),
        *REPO.glob("plugins/*/README.md"),
        *REPO.glob("docs/**/*.md"),
    ]
    for page in pages:
        for number, paragraph in enumerate(re.split(r"\n\s*\n", page.read_text("utf-8"))):
            for match in PIP.finditer(paragraph):
                yield f"{page.relative_to(REPO)} (paragraph {number})", page.parent, match.group(0), paragraph


def _text(node: ast.AST) -> str | None:
    """A string constant, or an f-string with ``{}`` where its values go."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[misc]
    return None


def code_hints() -> Iterator[tuple[str, Path, str, str]]:
    """``(where, folder, hint, context)``: each ``pip install`` in a string of the code."""
    for path in sorted([*REPO.glob("core/src/**/*.py"), *REPO.glob("plugins/*/src/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            text = _text(node)
            if text is not None and "pip install" in text:
                for match in PIP.finditer(text):
                    yield f"{path.relative_to(REPO)}:{node.lineno}", REPO, match.group(0), text  # type: ignore[attr-defined]


def problems(hint: str, folder: Path, context: str) -> list[str]:
    """What is wrong with one hint (``[]``: nothing)."""
    found = []
    for raw in hint.split()[2:]:
        token = raw.strip("\"'")
        if not token or token.startswith("-") or "{}" in token or token == "...":
            continue  # a flag, a value the code fills in, or words about a command
        name = re.split(r"[\[<>=!~]", token)[0]
        if name.startswith((".", "/", "~")):
            if name not in READER_MADE and not ((REPO / name).exists() or (folder / name).exists()):
                found.append(f"{name}: no such folder in this repository")
        elif name in FOLDERS and f"./{FOLDERS[name]}" not in context:
            found.append(f"{name}: a distribution of this repository without its folder (./{FOLDERS[name]})")
    return found


def test_the_scan_finds_the_hints() -> None:
    """The scan itself works: the README's set-up and the code's built hints are found."""
    docs = [hint for _, _, hint, _ in doc_hints()]
    assert any("./plugins/acp_engine" in hint for hint in docs), docs
    assert len(docs) >= 10
    assert problems("pip install agy-host-harness", REPO, "pip install agy-host-harness")
    assert problems("pip install ./plugins/no_such_engine", REPO, "")


@pytest.mark.parametrize("source", ["docs", "code"])
def test_every_install_hint_names_what_this_repository_has(source: str) -> None:
    hints = doc_hints() if source == "docs" else code_hints()
    bad = [f"{where}: {hint}: {p}" for where, folder, hint, context in hints for p in problems(hint, folder, context)]
    assert bad == []


def test_the_built_hints_name_the_clones_folders_or_both_forms(tmp_path: Path) -> None:
    assert checkout() == REPO, "this test runs from the clone"
    here = install_hint("agy-host", "agy-host-harness")
    assert here == f"`pip install {REPO / 'core'} {REPO / 'plugins' / 'harness_engine'}`"
    elsewhere = install_hint("agy-host-harness", here=False)
    assert elsewhere == (
        "`pip install ./plugins/harness_engine` from a clone of agy-host"
        " (or `pip install agy-host-harness` from an index that has it)"
    )
    for name, dist in ENGINE_DISTS.items():
        said = engine_hint(name)
        assert str(REPO / FOLDERS[dist]) in said and (REPO / FOLDERS[dist] / "pyproject.toml").is_file()
    assert engine_hint("no-such-engine") == ""
    wheel = tmp_path / "site-packages" / "agy_host" / "engine" / "install_hint.py"
    wheel.parent.mkdir(parents=True)
    assert checkout(str(wheel)) is None, "an installed wheel is no clone"
