"""The plugin docs are held to the code.

* Every hook specification has a reference page,
  ``docs/plugins/reference/<hook>.md``, headed by its exact signature and its
  ``firstresult``/``historic`` semantics, with every parameter listed.
* No page documents a hook that does not exist, and the reference index and
  a how-to page mention every hook.
* Anywhere under ``docs/``, a hook written with its arguments (an
  implementation, a call, a signature) uses the hook's real argument names,
  and any annotation or return type it shows is the code's; an
  ``agy_host_*`` name written as a hook (with arguments, as a page link, or on
  a line about hooks) that is neither a hook, a fixture nor a package fails.

The hooks are read from the code when the tests run (a pluggy
``PluginManager`` with :mod:`agy_host.hookspecs` added, and
``inspect.signature`` of each spec), so a hook added later fails here until it
is documented; the failure prints the page header to start from.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pluggy
import pytest

from agy_host import hookspecs

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS = REPO_ROOT / "docs"
PLUGIN_DOCS = DOCS / "plugins"
REFERENCE = PLUGIN_DOCS / "reference"


@dataclass(frozen=True)
class Spec:
    name: str
    params: tuple[tuple[str, str], ...]
    returns: str
    firstresult: bool
    historic: bool

    @property
    def argnames(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.params)

    @property
    def signature(self) -> str:
        params = ", ".join(f"{name}: {annotation}" for name, annotation in self.params)
        return f"{self.name}({params}) -> {self.returns}"

    @property
    def block(self) -> str:
        """The first code block of the reference page, exactly."""
        opts = [f"{key}=True" for key, on in (("firstresult", self.firstresult), ("historic", self.historic)) if on]
        decorator = "@hookspec" + (f"({', '.join(opts)})" if opts else "")
        return f"{decorator}\ndef {self.signature}"

    def stub(self) -> str:
        """What a new reference page starts with."""
        first = (
            "yes — the first implementation that returns something other than `None` answers; the others are not asked."
            if self.firstresult
            else "no — every implementation is called and agy-host collects what they give."
        )
        historic = (
            "yes — a plugin registered after the call is called for it too."
            if self.historic
            else "no — a plugin registered after the call (an engine's `hooks` object) is not called for it "
            "retroactively."
        )
        params = "\n".join(f"- `{name}` (`{annotation}`): ..." for name, annotation in self.params)
        return (
            f"# {self.name}\n\n```python\n{self.block}\n```\n\n**firstresult:** {first}\n\n"
            f"**historic:** {historic}\n\n...\n\n## Parameters\n\n{params}\n\n## Returns\n\n...\n\n"
            "## When it is called\n\n...\n\n## How agy-host calls it\n\n...\n\n## Example\n\n...\n"
        )


def read_specs() -> dict[str, Spec]:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    found: dict[str, Spec] = {}
    for name, caller in vars(pm.hook).items():
        if not isinstance(caller, pluggy.HookCaller) or caller.spec is None:
            continue
        spec = caller.spec
        # ``from __future__ import annotations``: annotations are the source text
        sig = inspect.signature(spec.function, eval_str=False)
        params = tuple((p.name, str(p.annotation)) for p in sig.parameters.values())
        names = tuple(n for n, _ in params)
        assert names == spec.argnames, f"{name}: a parameter with a default is not a hook argument"
        found[name] = Spec(
            name=name,
            params=params,
            returns=str(sig.return_annotation),
            firstresult=bool(spec.opts.get("firstresult")),
            historic=bool(spec.opts.get("historic")),
        )
    return found


SPECS = read_specs()


def first_code_block(text: str, lang: str = "python") -> str | None:
    match = re.search(rf"^```{lang}\n(.*?)\n```", text, re.M | re.S)
    return match.group(1) if match else None


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


def relative(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def test_the_hook_specifications_are_read_from_the_code() -> None:
    assert "agy_host_render_event" in SPECS and "agy_host_register_tools" in SPECS
    assert SPECS["agy_host_render_diff"].firstresult
    assert SPECS["agy_host_render_event"].signature == "agy_host_render_event(event: HostEvent) -> None"
    assert len(SPECS) >= 11


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_hook_has_a_reference_page_with_its_exact_signature(name: str) -> None:
    spec = SPECS[name]
    page = REFERENCE / f"{name}.md"
    assert page.is_file(), (
        f"hook {name} has no reference page. Create {relative(page)}, starting with:\n\n{spec.stub()}\n"
        f"and add it to {relative(REFERENCE / 'index.md')} and to the how-to page of its family."
    )
    text = page.read_text("utf-8")
    assert text.splitlines()[0] == f"# {name}", f"{relative(page)} must start with the heading '# {name}'"
    shown = first_code_block(text)
    assert shown == spec.block, (
        f"{relative(page)} shows a signature that differs from hookspecs.py:\n"
        f"--- docs ---\n{shown}\n--- code ---\n{spec.block}"
    )
    for label, value in (("firstresult", spec.firstresult), ("historic", spec.historic)):
        expected = "yes" if value else "no"
        assert re.search(rf"^\*\*{label}:\*\* {expected}\b", text, re.M), (
            f"{relative(page)} must say '**{label}:** {expected} — ...' (the hookspec says {label}={value})"
        )
    params = section(text, "Parameters")
    for arg, annotation in spec.params:
        assert f"- `{arg}` (`{annotation}`)" in params, (
            f"{relative(page)}: '## Parameters' must list '- `{arg}` (`{annotation}`): ...'"
        )
    listed = re.findall(r"^- `(\w+)`", params, re.M)
    assert set(listed) <= set(spec.argnames), f"{relative(page)} lists parameters {name} does not have: {listed}"


def test_every_reference_page_documents_an_existing_hook() -> None:
    pages = {p.stem for p in REFERENCE.glob("*.md")} - {"index"}
    assert pages, f"no reference pages in {relative(REFERENCE)}"
    stale = sorted(pages - set(SPECS))
    assert not stale, f"reference pages for hooks that do not exist in hookspecs.py: {stale}"


def test_the_reference_index_and_a_how_to_page_name_every_hook() -> None:
    index = (REFERENCE / "index.md").read_text("utf-8")
    how_tos = {p: p.read_text("utf-8") for p in PLUGIN_DOCS.glob("*.md") if p.name != "index.md"}
    for name in sorted(SPECS):
        assert f"]({name}.md)" in index, f"{relative(REFERENCE / 'index.md')} does not link {name}.md"
        assert any(name in text for text in how_tos.values()), (
            f"no how-to page under {relative(PLUGIN_DOCS)} mentions {name}"
        )
    linked = set(re.findall(r"\]\((agy_host_\w+)\.md\)", index))
    assert linked <= set(SPECS), f"the reference index links hooks that do not exist: {sorted(linked - set(SPECS))}"


# ---------------------------------------------------------------------------
# hook mentions anywhere under docs/
# ---------------------------------------------------------------------------


def doc_files() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*") if p.suffix in {".md", ".py", ".toml"} and p.is_file())


def known_non_hooks() -> set[str]:
    """``agy_host_*`` names that are not hooks: fixtures, packages, tool names."""
    names: set[str] = set()
    plugin_source = (REPO_ROOT / "core" / "src" / "agy_host" / "testing" / "pytest_plugin.py").read_text("utf-8")
    names |= set(re.findall(r"@pytest\.fixture[^\n]*\ndef (agy_host_\w+)", plugin_source))
    for src in [*REPO_ROOT.glob("plugins/*/src"), *DOCS.glob("examples/*/src")]:
        names |= {p.name for p in src.iterdir() if p.is_dir() and p.name.startswith("agy_host_")}
        for module in src.rglob("*.py"):  # tools agy-host itself offers (the bridge's question tool)
            names |= set(re.findall(r'^NAME = "(agy_host_\w+)"', module.read_text("utf-8"), flags=re.M))
    for path in doc_files():
        text = path.read_text("utf-8")
        names |= set(re.findall(r"\b(?:from|import)\s+(agy_host_\w+)", text))
        names |= set(re.findall(r"\b(agy_host_\w+)(?=/|\.\w)", text))  # paths and dotted module names
    return names - set(SPECS)


def split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


@dataclass
class Mention:
    path: Path
    line: int
    name: str
    args: str | None  # the text between the parentheses, if written with them
    returns: str | None
    context: str = ""  # the line it is on

    @property
    def as_hook(self) -> bool:
        """Written as a hook is: with arguments, as a page link, or on a line about hooks."""
        return self.args is not None or f"{self.name}.md" in self.context or "hook" in self.context.lower()

    def where(self) -> str:
        return f"{relative(self.path)}:{self.line}"


def mentions(path: Path) -> list[Mention]:
    text = path.read_text("utf-8")
    found: list[Mention] = []
    for match in re.finditer(r"(?<![\w.])(agy_host_[a-z0-9_]+)\b", text):
        name, end = match.group(1), match.end()
        line = text.count("\n", 0, match.start()) + 1
        start = text.rfind("\n", 0, match.start()) + 1
        stop = text.find("\n", end)
        context = text[start : stop if stop >= 0 else len(text)]
        if end >= len(text) or text[end] != "(":
            found.append(Mention(path, line, name, None, None, context))
            continue
        depth, i = 0, end
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        args = text[end + 1 : i]
        ret = re.match(r"\s*->\s*([^\n`:]+)", text[i + 1 :])
        found.append(Mention(path, line, name, args, ret.group(1).strip() if ret else None, context))
    return found


def check_mention(mention: Mention, spec: Spec) -> list[str]:
    problems: list[str] = []
    where = mention.where()
    if mention.args is None:
        return problems
    params = dict(spec.params)
    chunks = [c for c in split_top_level(mention.args) if c and c != "self"]
    annotated: list[tuple[str, str]] = []
    for chunk in chunks:
        head = re.match(r"^(\w+)\s*(?::\s*(.+?))?\s*(?:=.*)?$", chunk, re.S)
        if head is None:
            problems.append(f"{where}: {spec.name}({mention.args}): hooks take keyword arguments only: {chunk!r}")
            continue
        arg, annotation = head.group(1), head.group(2)
        if arg not in params:
            problems.append(f"{where}: {spec.name} has no argument {arg!r} (it has: {', '.join(spec.argnames)})")
        elif annotation is not None:
            shown = annotation.strip()
            annotated.append((arg, shown))
            if shown != params[arg]:
                problems.append(f"{where}: {spec.name}: `{arg}: {shown}` differs from `{arg}: {params[arg]}`")
    is_signature = mention.returns is not None and (not chunks or len(annotated) == len(chunks))
    if is_signature:
        shown = f"{spec.name}({', '.join(f'{a}: {t}' for a, t in annotated)}) -> {mention.returns}"
        if shown != spec.signature:
            problems.append(f"{where}: the docs show `{shown}`; the code says `{spec.signature}`")
    return problems


def test_docs_show_no_hook_signature_that_differs_from_the_code() -> None:
    problems: list[str] = []
    checked = 0
    for path in doc_files():
        for mention in mentions(path):
            spec = SPECS.get(mention.name)
            if spec is not None and mention.args is not None:
                checked += 1
                problems += check_mention(mention, spec)
    assert checked >= len(SPECS), "the scan found fewer hook signatures than there are hooks: is it broken?"
    assert not problems, "\n".join(problems)


def test_every_hook_the_docs_name_exists() -> None:
    others = known_non_hooks()
    unknown = sorted(
        {
            f"{m.where()}: {m.name}"
            for path in doc_files()
            for m in mentions(path)
            if m.as_hook and m.name not in SPECS and m.name not in others
        }
    )
    assert not unknown, (
        "the docs name hooks that hookspecs.py does not define (a typo, or a removed hook):\n" + "\n".join(unknown)
    )


# ---------------------------------------------------------------------------
# the checker itself
# ---------------------------------------------------------------------------


def test_the_checker_catches_a_wrong_signature_and_a_wrong_argument(tmp_path: Path) -> None:
    spec = SPECS["agy_host_render_diff"]
    page = tmp_path / "page.md"
    page.write_text(
        "`agy_host_render_diff(card: ToolCard, cwd: str) -> str | None` is right;\n"
        "`agy_host_render_diff(card: ToolCard, cwd: Path) -> str | None` is not;\n"
        "`agy_host_render_diff(card: ToolCard) -> str` is not;\n"
        "def agy_host_render_diff(card, path): is not;\n"
        "def agy_host_render_diff(self, card): is;\n"
        "[hook] agy_host_render_diff(card, cwd) -> ['diff_render'] is trace output, fine\n"
    )
    problems = [p for m in mentions(page) for p in check_mention(m, spec)]
    assert len(problems) == 4, problems
    assert "cwd: Path" in problems[0] and "differs" in problems[0]
    assert "-> str`" in problems[2]
    assert "no argument 'path'" in problems[3]


def test_the_checker_flags_an_unknown_hook_written_as_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "The hook `agy_host_render_evnt` is a typo.\n"
        "def agy_host_register_toolz(register): too.\n"
        "`agy_host_mything` (the import package) is a package.\n"
    )
    flagged = [m.name for m in mentions(page) if m.as_hook and m.name not in SPECS]
    assert flagged == ["agy_host_render_evnt", "agy_host_register_toolz"]
