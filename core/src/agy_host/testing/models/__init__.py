"""A scripted model API over real HTTP (``python -m agy_host.testing.models.api``):
Gemini SSE and OpenAI chat completions, for the real harness binary."""
