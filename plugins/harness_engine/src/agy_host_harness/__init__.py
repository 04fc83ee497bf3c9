"""The harness engine for agy-host: Google's own Antigravity agent loop (the
``localharness`` binary of the ``google-antigravity`` wheel) driven over its
own wire: a length-prefixed protobuf bootstrap on stdio, then JSON frames on
a loopback WebSocket, one per conversation.

Nothing is imported here: the host loads :mod:`agy_host_harness.engine`
through the ``agy_host.engine.base`` entry point only when this engine is selected.
"""

__version__ = "0.1.0"
