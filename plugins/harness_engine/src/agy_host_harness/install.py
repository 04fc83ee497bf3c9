"""agy-host's managed install of the harness binary.

``agy-host harness install`` fetches the pinned ``google-antigravity`` wheel
with pip (``--no-deps``: none of the SDK's Python dependencies), checks its
sha256 against the pin table when the wheel is listed there and records it
either way, and unpacks only ``localharness`` into a versioned folder under
the user's data dir::

    ~/.local/share/agy-host/harness/
      0.1.22/localharness       the binary
      0.1.22/receipt.json       version, wheel, sha256, when
      current -> 0.1.22         switched atomically, last

The version folder is built under a temporary name and renamed into place,
then ``current`` is replaced by a rename: an install interrupted at any
point leaves the previous one working. ``python -m agy_host_harness.install
[--dir DIR]`` does the same for CI caches.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from agy_host import fsutil
from agy_host_harness import pin
from agy_host_harness.binary import data_dir

RECEIPT = "receipt.json"
BINARY = "localharness"
#: Platforms Google publishes the wheel for (machine names as Python reports them).
SUPPORTED = {
    ("linux", "x86_64"),
    ("linux", "amd64"),
    ("darwin", "arm64"),
    ("darwin", "x86_64"),
    ("win32", "amd64"),
}


class InstallError(Exception):
    """The install could not be done; the message says why and what to do."""


class Receipt(msgspec.Struct, kw_only=True):
    version: str
    wheel: str
    sha256: str
    pinned: bool
    installed_at: str
    binary: str


def platform_problem(system: str | None = None, machine: str | None = None) -> str | None:
    system = system or sys.platform
    machine = (machine or platform.machine()).lower()
    if system.startswith("linux"):
        system = "linux"
    if (system, machine) in SUPPORTED:
        return None
    return (
        f"Google publishes no {pin.DISTRIBUTION} wheel for this platform ({system} {machine}); "
        "the harness engine needs linux x86_64, macOS or Windows x86_64. Point ANTIGRAVITY_HARNESS_PATH "
        "at a localharness binary if you have one"
    )


def read_receipt(env: Mapping[str, str], root: Path | None = None) -> Receipt | None:
    path = (root or data_dir(env)) / "current" / RECEIPT
    try:
        return msgspec.json.decode(path.read_bytes(), type=Receipt)
    except (OSError, msgspec.MsgspecError):
        return None


def fetch_wheel(version: str, into: Path, say: Callable[[str], None]) -> Path:
    """``pip download --no-deps`` of the pinned wheel for this platform."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        f"{pin.DISTRIBUTION}=={version}",
        "-d",
        str(into),
    ]
    say(f"fetching {pin.DISTRIBUTION}=={version} with pip (about 45 MB, no dependencies)...")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=900)
    except FileNotFoundError as exc:
        raise InstallError(f"could not run pip: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise InstallError("pip did not finish within 15 minutes") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        if "No module named pip" in proc.stderr:
            raise InstallError(f"pip is not installed for {sys.executable}; run `{sys.executable} -m ensurepip`")
        raise InstallError(
            f"pip could not fetch {pin.DISTRIBUTION}=={version} (offline, or no wheel for this platform?): "
            + " | ".join(tail)
        )
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise InstallError(f"pip reported success but left no wheel in {into}")
    return wheels[0]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def install(
    *,
    root: Path,
    version: str = pin.VERSION,
    wheel: Path | None = None,
    say: Callable[[str], None] = lambda _m: None,
) -> Receipt:
    """Install (or re-install) ``version`` under ``root``; see the module docstring."""
    if wheel is None:
        problem = platform_problem()
        if problem:
            raise InstallError(problem)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".download-") as tmp:
        path = wheel if wheel is not None else fetch_wheel(version, Path(tmp), say)
        digest = sha256_of(path)
        expected = pin.WHEEL_SHA256.get(path.name)
        if expected is not None and expected != digest:
            raise InstallError(f"{path.name} has sha256 {digest}, but agy-host pins {expected}: refusing to install it")
        say(f"sha256 {digest} ({'matches the pin' if expected else 'recorded; this wheel is not in the pin table'})")
        staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{version}-"))
        try:
            target = staging / BINARY
            try:
                with zipfile.ZipFile(path) as zf, zf.open(pin.BINARY_IN_WHEEL) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except KeyError as exc:
                raise InstallError(f"{path.name} has no {pin.BINARY_IN_WHEEL}") from exc
            except zipfile.BadZipFile as exc:
                raise InstallError(f"{path.name} is not a valid wheel: {exc}") from exc
            target.chmod(0o755)
            receipt = Receipt(
                version=version,
                wheel=path.name,
                sha256=digest,
                pinned=expected is not None,
                installed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                binary=str(root / version / BINARY),
            )
            fsutil.write_atomic(staging / RECEIPT, msgspec.json.encode(receipt), mode=0o644)
            final = root / version
            if final.exists():
                old = Path(tempfile.mkdtemp(dir=root, prefix=f".old-{version}-"))
                os.replace(final, old / version)
                os.replace(staging, final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    link = root / f".current-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    os.symlink(version, link)
    os.replace(link, root / "current")
    say(f"installed {pin.DISTRIBUTION} {version}: {root / 'current' / BINARY}")
    return receipt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agy_host_harness.install", description="Install the pinned localharness binary."
    )
    parser.add_argument("--dir", help="install root (default: the user's data dir)")
    parser.add_argument("--version", default=pin.VERSION)
    parser.add_argument("--wheel", help="install from this wheel file instead of fetching it")
    parser.add_argument("--if-missing", action="store_true", help="do nothing when this version is installed")
    args = parser.parse_args(argv)
    root = Path(args.dir).resolve() if args.dir else data_dir(os.environ)
    if args.if_missing:
        receipt = read_receipt(os.environ, root)
        if receipt is not None and receipt.version == args.version and (root / "current" / BINARY).is_file():
            print(f"harness {receipt.version} already installed: {root / 'current' / BINARY}")
            return 0
    try:
        install(root=root, version=args.version, wheel=Path(args.wheel) if args.wheel else None, say=print)
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["InstallError", "Receipt", "install", "main", "platform_problem", "read_receipt", "sha256_of"]
