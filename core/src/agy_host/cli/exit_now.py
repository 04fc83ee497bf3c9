"""How the ``agy-host`` process ends: at once, once everything it wrote is out.

When a command has returned, what is left of the process is the
interpreter's own finalization: several full garbage collections over the
~37,000 objects that ~430 modules leave behind, then the modules' teardown,
about 50 ms on a quiet machine (more on a busy one) for nothing the command
needs. Its durable writes are done by then: the session store, the
transcript and ``last-driver.json`` are written atomically and closed while
the command runs, and the agent has been stopped and waited for.

So the console script's process ends with :func:`os._exit` after doing
what a normal exit would do for its output:

* the exit handlers run (``atexit``: logging's shutdown flushes its handlers);
* every open file's buffer is flushed (a plugin's file left open included);
* stdout and stderr are flushed last.

It leaves it to Python's own exit when that could differ: a non-daemon
thread still running (Python would wait for it), or stdout that cannot be
flushed (its reader left: Python reports that with its own status). The
exit code is the command's, unchanged.

Only :func:`agy_host.cli.main.main` of the real process calls this (the
console script, ``python -m agy_host.cli.main``), after the command
returned; in-process callers (the Python API, tests, benchmark workers)
get the code back as before. docs/ARCHITECTURE.md ("Start-up and exit")
and docs/reliability.md (issue 29) say what it guarantees;
``core/tests/test_exit_now.py`` checks it on real processes.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import sys
import threading
from typing import Any


def exit_now(code: int) -> None:
    """End the process with ``code`` unless something needs Python's own
    exit; then return (the caller returns ``code`` as before)."""
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()  # each handler once: they are cleared as they run
    std = _std_objects()
    for obj in gc.get_objects():
        if type(obj) in _BUFFERED and id(obj) not in std:
            _flush_quietly(obj)  # what their finalizers would do at exit
    if _flush_std():
        os._exit(code)


#: The file objects that hold written data until flushed. Compared by exact
#: type: ``isinstance`` (an ABC check for ``io.IOBase``) over the ~37,000
#: objects of a finished command took 10-20 ms, the type test 3-5 ms.
_BUFFERED = frozenset({io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom, io.BufferedRWPair})


def _std_objects() -> set[int]:
    """stdout, stderr and the buffers under them: flushed by :func:`_flush_std`
    alone, so that a failed flush is seen there (and left to Python's exit)."""
    out: set[int] = set()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        for obj in (stream, getattr(stream, "buffer", None)):
            if obj is not None:
                out.add(id(obj))
    return out


def _flush_quietly(obj: Any) -> None:
    """Flush an open file; one that cannot be flushed would not be at exit either."""
    try:
        if not obj.closed:
            obj.flush()
    except (OSError, ValueError):
        pass


def _flush_std() -> bool:
    """Flush stdout then stderr; ``False`` when stdout could not be."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout:
                return False
    return True


__all__ = ["exit_now"]
