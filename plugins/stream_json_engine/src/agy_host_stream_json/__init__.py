"""The stream-json engine for agy-host: drives the ``agy`` CLI with
``--input-format stream-json --output-format stream-json``.

Nothing is imported here: the host loads :mod:`agy_host_stream_json.engine`
through the ``agy_host.engine.base`` entry point only when this engine is selected.
"""

__version__ = "0.1.0"
