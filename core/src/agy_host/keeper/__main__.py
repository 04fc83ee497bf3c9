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

    lock = os.open(place.lock_path(args.dir, args.build), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
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
        log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
