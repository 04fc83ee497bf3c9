"""The engine SDK: what an engine author builds an engine from.

``base`` (the :class:`Engine` protocol, its context, discovery by entry
point), ``driver`` (the :class:`TurnDriver` an engine hands the host),
``turn`` (one engine turn, parked turns, the one failure type, the failed
outcome), ``timers``, ``process`` (the agent child in its own process group,
line framing), ``trace`` (the wire trace every engine writes its frames
to) and ``redact`` (the secrets kept out of it), ``textguard``, ``utf8``
(an agent's line with invalid UTF-8, kept with U+FFFD), ``lifecycle``,
``model_tiers`` and ``concurrency``. Engines share this code
instead of copying it.
"""
