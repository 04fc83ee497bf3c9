"""Recorded traffic: the parsers, and an agent that serves one recording
(``python -m agy_host.testing.replay.agent``)."""
