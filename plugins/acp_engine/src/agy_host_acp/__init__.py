"""agy-host's ACP engine. Importing this package is cheap: the engine lives in
:mod:`agy_host_acp.engine` and is imported only when selected."""

__version__ = "0.1.0"

ENGINE_NAME = "acp"
