"""An ``npx``-style wrapper: runs the real agent as its child and passes its
stdio through, and on SIGTERM exits itself without stopping the child (what
a Node wrapper does). Only a kill of the whole process group reaches the
agent behind it. Usage: ``python npx_style.py AGENT_ARGV...``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def main() -> int:
    child = subprocess.Popen(sys.argv[1:])  # inherits stdin/stdout/stderr and the process group
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))  # the wrapper goes, the child stays
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
