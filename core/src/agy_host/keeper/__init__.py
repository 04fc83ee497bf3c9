"""Warm agents across commands: the keeper and its clients.

A named session's agent stays alive between ``agy-host`` commands in one
long-lived process per user, the *keeper*, which owns a
:class:`~agy_host.runtime.session.SessionRuntime` per warm session. Commands
become its clients over a Unix socket in a private directory: they send the
turn, render the events that come back, and answer what only they can
answer (permission requests and questions: their terminal, their rules,
their program's callbacks). See docs/sessions.md.

| module | holds |
|---|---|
| ``wire.py`` | the frames both sides speak: typed msgspec structs, length-prefixed, size-bounded |
| ``keep_alive.py`` | how long a session's agent stays warm: the one rule every door applies |
| ``place.py`` | where the socket, the lock and the log live (0700 directory, per version) |
| ``warm.py`` | one warm session in the keeper: its host, runtime and the relay to the attached client |
| ``proxy_tools.py`` | the attached program's own tools (``tools=``), offered by the keeper and run in the program |
| ``shared.py`` | one agent process shared by warm sessions of equal settings (the harness), a conversation each |
| ``server.py`` | the keeper process: accept, check the peer, serve turns, status, stop, cancel; idle expiry |
| ``client.py`` | the command side: find or start the keeper, run a turn through it, status, stop, cancel |
| ``attached.py`` | what an attached command says and does on Ctrl-C, SIGTERM, SIGHUP (shared by both clients) |
| ``thin.py``, ``thin_args.py`` | the trio-free client of a warm ``run`` and its reading of the command line |

The session store stays the source of truth: a warm agent is a cache, and
losing every warm process never loses a conversation binding.

Private to core (like ``runtime``): plugins never import it.
"""
