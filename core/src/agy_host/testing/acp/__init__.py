"""A fake ACP agent (``python -m agy_host.testing.acp.agent``) and the scenarios that script it."""
