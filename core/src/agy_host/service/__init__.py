"""What a service plugin (the MCP bridge) builds on: the :class:`Service`
protocol, the round-trips that park an agent's turn while the host runs a
tool and resume it with the result, the delegation guards, and asking the
human at the terminal."""
