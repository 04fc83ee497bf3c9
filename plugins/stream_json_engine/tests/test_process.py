"""The stdout reader of a real agy-speaking child: what it keeps alive.

The dialect's ``result`` line repeats the whole answer, so on a long answer
it is megabytes; the reader must not hold it once it has been handled.
"""

from __future__ import annotations

import os
import sys
import tracemalloc

import trio

from agy_host_stream_json.process import AgyProcess
from agy_host_stream_json.profile import Profile
from agy_host_stream_json.wire import Event, ResultEvent

ANSWER_BYTES = 8 * 1024 * 1024

#: A child that writes one ``result`` line with a long answer, then stays
#: alive with stdout open (so the reader waits for its next read).
CHILD = (
    "import json, sys, time\n"
    f"line = json.dumps({{'event': 'result', 'result': {{'status': 'SUCCESS', 'response': 'x' * {ANSWER_BYTES}}}}})\n"
    "sys.stdout.write(line + '\\n'); sys.stdout.flush(); time.sleep(30)\n"
)


class Sink:
    def __init__(self) -> None:
        self.result: ResultEvent | None = None
        self.got = trio.Event()

    def on_chunk(self, child: AgyProcess) -> None:
        pass

    def on_event(self, child: AgyProcess, event: Event) -> None:
        if isinstance(event, ResultEvent):
            self.result = event
            self.got.set()

    def on_stderr(self, child: AgyProcess, line: str) -> None:
        pass

    def on_eof(self, child: AgyProcess) -> None:
        pass

    def on_exit(self, child: AgyProcess) -> None:
        pass


async def test_the_result_line_is_released_once_handled() -> None:
    sink = Sink()
    tracemalloc.start()
    try:
        async with trio.open_nursery() as nursery:
            child = await AgyProcess.spawn(
                nursery,
                [sys.executable, "-c", CHILD],
                cwd=os.getcwd(),
                env=dict(os.environ),
                generation=1,
                profile=Profile(cwd=os.getcwd()),
                sink=sink,
            )
            await sink.got.wait()
            # The reader has handled the line and waits for the next read: what
            # it still holds is traced now. The decoded answer (the result's
            # ``response``) is the sink's and must stay; the line's bytes must not.
            held, _peak = tracemalloc.get_traced_memory()
            await child.finish(0.1, 0.5)
            nursery.cancel_scope.cancel()
    finally:
        tracemalloc.stop()
    assert sink.result is not None and sink.result.result.response == "x" * ANSWER_BYTES
    assert ANSWER_BYTES <= held < 1.5 * ANSWER_BYTES, f"{held / ANSWER_BYTES:.2f} answers' worth of memory held"
