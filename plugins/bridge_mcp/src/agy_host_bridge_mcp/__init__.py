"""agy-host's MCP bridge: host tools served to the agent over loopback HTTP.

Importing the package is cheap: the server (the ``mcp`` SDK, hypercorn) is
imported only when the bridge service starts.
"""

__version__ = "0.1.0"
