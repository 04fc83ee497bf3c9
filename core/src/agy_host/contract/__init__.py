"""What every plugin programs against: the wire-neutral types of a turn.

Events and activities, prompt blocks and prompt parts, permission requests
and decisions, host tools, renderers, diagnostics and the turn's result.
msgspec Structs and Protocols, no I/O: safe to import from anywhere, stable
for plugin authors. The names are also exported from :mod:`agy_host`.
"""
