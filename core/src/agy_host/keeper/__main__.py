"""``python -m agy_host.keeper --dir DIR --build BUILD``: run the keeper.

Started detached by the first command that wants a warm agent (its own
session, stdin from ``/dev/null``, output to ``keeper.log``). It holds the
build's lock for its whole life: a second keeper of the same build exits at
once, and a socket file nobody's lock stands behind is stale.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agy_host.keeper", description=__doc__)
    parser.add_argument("--dir", required=True, type=Path, help="the private runtime directory")
    parser.add_argument("--build", required=True, help="the build stamp this keeper serves")
    args = parser.parse_args(argv)

    from agy_host.keeper import place
    from agy_host.keeper.server import Keeper, listen, log

    lock_file = place.lock_path(args.dir, args.build)
    lock = take_lock(lock_file)
    if lock is None:
        return 0  # another keeper of this build is up (or starting): it serves
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    if place.build_stamp() != args.build:
        log(f"refusing to serve build {args.build}: this code is {place.build_stamp()}")
        return 1
    path = place.socket_path(args.dir, args.build)
    log(f"serving {path} (build {args.build})")

    import trio

    async def run() -> None:
        listener = await listen(path)
        try:
            await Keeper(args.build).serve(listener)
        finally:
            await listener.aclose()

    try:
        trio.run(run)
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        release_lock(lock, lock_file)
        log("stopped")
    return 0


def take_lock(path: Path) -> int | None:
    """The build's lock, held for the keeper's life; ``None`` when another
    keeper holds it. A keeper removes its lock file when it ends
    (:func:`release_lock`), so one that locked a file just removed would
    hold a lock nobody else sees: the lock counts only if ``path`` still
    names the file locked."""
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            path.parent.mkdir(mode=0o700, exist_ok=True)  # its folder went with the last keeper
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = -1
        if current == os.fstat(fd).st_ino:
            return fd
        os.close(fd)  # removed under us by the keeper that ended: take the new one
    return None


def release_lock(fd: int, path: Path) -> None:
    """Remove the lock file, still holding it, and the runtime folder when
    nothing else is in it: a keeper leaves nothing behind (with a long state
    path the folder is in ``/tmp``, one per state dir)."""
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # fails while another build's socket or lock is there
    os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
