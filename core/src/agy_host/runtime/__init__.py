"""The private runtime: what runs turns for every front-end.

Only :class:`~agy_host.runtime.session.Session` is meant for callers outside
core (the CLI commands, the benchmarks and the public Python API in
:mod:`agy_host.api` all drive turns through it); everything else here may
change without notice.
"""
