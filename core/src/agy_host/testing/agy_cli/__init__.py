"""A fake ``agy`` CLI speaking stream-json (``python -m agy_host.testing.agy_cli.agent``)."""
