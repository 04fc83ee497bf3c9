"""agy-host benchmarks, side by side with the peers (``nox -s bench`` or ``python -m bench``).

One module per benchmark (``b1_flood`` ... ``b5_stream_json``), a runner
(:mod:`bench.runner`) that repeats each measurement interleaved with the
competitors and prints a table with ratios, and the peers' installer
(:mod:`bench.provision`). Measurement code that runs inside a peer's own
environment lives in ``bench/clients/`` and uses the standard library and that
peer only. Results are written up in ``docs/performance.md``.
"""
