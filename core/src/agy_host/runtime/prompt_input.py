"""What the user hands a turn besides text: files, images, a system prompt.

Reusable by every command that sends prompts (``run``, ``chat``, ``ask``):

* ``@path`` in the prompt text attaches that file, if it exists (an ``@name``
  that is no file stays text: it may be a mention or an e-mail address; one
  that looks like a path, ``@missing.md``, ``@src/x``, is sent as text with
  a warning that names the file it looked for);
* ``--file PATH`` attaches a file, ``--image PATH`` an image (a file with an
  image extension is an image either way);
* in ``chat``, a pasted path to an image (terminals paste dragged files as
  quoted or backslash-escaped paths) is attached as that image;
* ``--system-prompt TEXT`` or ``--system-prompt @FILE``.

Text files become embedded resources (``file://`` URIs), images become image
blocks; each attachment is told (which file, how big), so a file sent
without the user knowing is never a surprise. Whether the agent takes them is checked twice: here against the
engine's capabilities (stream-json takes no images), and by the engine
against what the agent advertised (ACP ``promptCapabilities``), each time
with an error that says what was refused and why, never a silent drop.
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import re
import shlex
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agy_host.contract.prompt import ImageBlock, PromptBlock, ResourceBlock, TextBlock

if TYPE_CHECKING:
    from agy_host.engine.base import Engine

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}
IMAGE_TYPES[".webp"] = "image/webp"
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
#: ``@path`` tokens: after start or whitespace, up to the next whitespace.
_AT_PATH = re.compile(r"(?:(?<=\s)|^)@((?:\\ |[^\s])+)")
_TRAILING = ".,;:!?)]}'\""
#: An ``@name`` that looks like a file: a directory part, or an extension.
_FILE_LIKE = re.compile(r"[/\\]|^~|\.[A-Za-z0-9]{1,10}$")

#: ``note(level, message)``: what the caller shows the user about a prompt's
#: files; ``level`` is ``info`` (a file attached) or ``warning`` (an ``@path``
#: sent as text).
Note = Callable[[str, str], None]


def log_note(level: str, message: str) -> None:
    """The default :data:`Note`: the ``agy_host`` logger (a warning shows on
    stderr in a program that configured no logging)."""
    logging.getLogger("agy_host").log(logging.WARNING if level == "warning" else logging.INFO, message)


class PromptInputError(Exception):
    """A file or image that cannot be attached; the message says which and why."""


def is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_TYPES


def _read(path: Path, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise PromptInputError(f"{path} is {size} bytes; the limit is {max_bytes} ([prompt] max_attachment_bytes)")
        return path.read_bytes()
    except PromptInputError:
        raise
    except OSError as exc:
        raise PromptInputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def image_block(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> ImageBlock:
    mime = IMAGE_TYPES.get(path.suffix.lower())
    if mime is None:
        known = ", ".join(sorted(IMAGE_TYPES))
        raise PromptInputError(f"{path} is not an image agy-host can send ({known})")
    return ImageBlock(data=base64.b64encode(_read(path, max_bytes)).decode("ascii"), mime_type=mime)


def file_block(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> ResourceBlock:
    data = _read(path, max_bytes)
    if b"\0" in data:
        raise PromptInputError(f"{path} is a binary file; only text files and images can be attached")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptInputError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    mime = mimetypes.guess_type(path.name)[0] or "text/plain"
    if not mime.startswith("text/") and mime not in {"application/json", "application/xml", "application/toml"}:
        mime = "text/plain"
    return ResourceBlock(uri=path.resolve().as_uri(), text=text, mime_type=mime)


def attachment(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> ImageBlock | ResourceBlock:
    """An image block for images, an embedded resource for text files."""
    if path.is_dir():
        raise PromptInputError(f"{path} is a directory; attach files one by one")
    return image_block(path, max_bytes) if is_image(path) else file_block(path, max_bytes)


def _resolve(raw: str, cwd: str) -> Path:
    path = Path(raw).expanduser()
    return (path if path.is_absolute() else Path(cwd) / path).resolve()


def at_paths(text: str, cwd: str) -> list[Path]:
    """The files ``@path`` tokens in ``text`` name (existing files only, once each)."""
    return at_mentions(text, cwd)[0]


def at_mentions(text: str, cwd: str) -> tuple[list[Path], list[str]]:
    """The files ``@path`` tokens name (once each), and why each ``@path``
    that looks like a file (:data:`_FILE_LIKE`) but is none stays text."""
    found: list[Path] = []
    unsent: list[str] = []
    for match in _AT_PATH.finditer(text):
        raw = match.group(1).replace("\\ ", " ")
        hit = next((p for c in (raw, raw.rstrip(_TRAILING)) if c and (p := _resolve(c, cwd)).is_file()), None)
        if hit is not None:
            if hit not in found:
                found.append(hit)
            continue
        name = raw.rstrip(_TRAILING)
        path = _resolve(name, cwd) if name else None
        if path is not None and path.is_dir():
            unsent.append(f"@{name} is a directory, sent as text (attach its files one by one)")
        elif path is not None and _FILE_LIKE.search(name):
            unsent.append(f"@{name}: no such file ({path}), sent as text")
    return found, unsent


def size_text(size: int) -> str:
    """``812 bytes``, ``1.2 KiB``, ``3.4 MiB``."""
    if size < 1024:
        return f"{size} byte{'s' * (size != 1)}"
    return f"{size / 1024:.1f} KiB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MiB"


def _attached(path: Path, cwd: str, block: PromptBlock) -> str:
    """``attached notes.md (1.2 KiB)``: which file, as the user would name it, and how big."""
    try:
        shown = str(path.relative_to(Path(cwd).resolve()))
    except ValueError:
        shown = str(path)
    kind = "image" if isinstance(block, ImageBlock) else "file"
    return f"attached {kind} {shown} ({size_text(path.stat().st_size)})"


def pasted_images(text: str, cwd: str) -> tuple[str, list[Path]]:
    """Image paths pasted into ``text`` (quoted, backslash-escaped or
    ``file://``), replaced by ``[image: NAME]``; other text is left alone."""
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:
        return text, []
    images: list[Path] = []
    out = text
    for token in tokens:
        raw = urllib.parse.unquote(token[len("file://") :]) if token.startswith("file://") else token
        if not raw or ("/" not in raw and not raw.startswith("~")):
            continue
        path = _resolve(raw, cwd)
        if not (is_image(path) and path.is_file()):
            continue
        for spelled in (shlex.quote(token), f"'{token}'", f'"{token}"', token.replace(" ", "\\ "), token):
            if spelled in out:
                out = out.replace(spelled, f"[image: {path.name}]", 1)
                break
        if path not in images:
            images.append(path)
    return out, images


def build_prompt(
    text: str,
    *,
    cwd: str,
    files: Sequence[str | Path] = (),
    images: Sequence[str | Path] = (),
    expand_at: bool = True,
    detect_pasted: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    note: Note = log_note,
) -> list[PromptBlock]:
    """The prompt blocks of one turn: the text first, then attachments in the
    order given (``--file``, ``--image``, ``@path``, pasted images). Each
    attachment, and each ``@path`` left as text, is told to ``note``."""
    paths: list[Path] = []
    if detect_pasted:
        text, pasted = pasted_images(text, cwd)
    else:
        pasted = []
    for given in [*files, *images]:
        path = _resolve(str(given), cwd)
        if not path.exists():
            raise PromptInputError(f"no such file: {given}")
        paths.append(path)
    for image in images:
        resolved = _resolve(str(image), cwd)
        if not is_image(resolved):
            raise PromptInputError(f"--image {image}: not an image ({', '.join(sorted(IMAGE_TYPES))})")
    if expand_at:
        found, unsent = at_mentions(text, cwd)
        paths.extend(p for p in found if p not in paths)
        for why in unsent:
            note("warning", why)
    paths.extend(p for p in pasted if p not in paths)
    blocks: list[PromptBlock] = [TextBlock(text=text)] if text else []
    attached = [attachment(p, max_bytes) for p in paths]  # all read before any is told
    for path, block in zip(paths, attached, strict=True):
        note("info", _attached(path, cwd, block))
    return blocks + attached


def check_blocks(blocks: Sequence[PromptBlock], engine: Engine) -> None:
    """Refuse early what the engine cannot send at all (the agent's own
    ``promptCapabilities`` are checked by the engine when it sends)."""
    caps = engine.capabilities
    if not caps.images and any(isinstance(b, ImageBlock) for b in blocks):
        raise PromptInputError(f"the {engine.ENGINE_NAME} engine cannot send images; use an engine that can (acp)")


def read_system_prompt(value: str | None, cwd: str) -> str | None:
    """``--system-prompt TEXT`` or ``--system-prompt @FILE``."""
    if value is None:
        return None
    if value.startswith("@") and len(value) > 1:
        path = _resolve(value[1:], cwd)
        try:
            return path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptInputError(f"--system-prompt {value}: cannot read {path}: {exc}") from exc
    return value


def prepare(
    text: str,
    engine: Engine,
    *,
    cwd: str,
    files: Sequence[str | Path] = (),
    images: Sequence[str | Path] = (),
    detect_pasted: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    note: Note = log_note,
) -> list[PromptBlock]:
    """:func:`build_prompt` + :func:`check_blocks`: the blocks to hand
    ``TurnLayer.run_turn`` (an engine without embedded resources inlines
    files itself). ``note`` hears about the files once the prompt passed."""
    told: list[tuple[str, str]] = []
    blocks = build_prompt(
        text,
        cwd=cwd,
        files=files,
        images=images,
        detect_pasted=detect_pasted,
        max_bytes=max_bytes,
        note=lambda level, message: told.append((level, message)),
    )
    check_blocks(blocks, engine)
    for level, message in told:
        note(level, message)
    return blocks


def describe(blocks: Sequence[PromptBlock]) -> str:
    """``2 files, 1 image`` for a status line; ``""`` for plain text."""
    files = sum(1 for b in blocks if isinstance(b, ResourceBlock))
    images = sum(1 for b in blocks if isinstance(b, ImageBlock))
    parts = [f"{files} file{'s' * (files != 1)}"] if files else []
    parts += [f"{images} image{'s' * (images != 1)}"] if images else []
    return ", ".join(parts)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "IMAGE_TYPES",
    "Note",
    "PromptInputError",
    "at_mentions",
    "at_paths",
    "attachment",
    "build_prompt",
    "check_blocks",
    "describe",
    "file_block",
    "image_block",
    "is_image",
    "log_note",
    "pasted_images",
    "prepare",
    "read_system_prompt",
    "size_text",
]
