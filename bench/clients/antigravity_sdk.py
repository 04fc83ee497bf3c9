"""One chat through Google's Antigravity SDK (``google-antigravity``), as its
README shows it: ``Agent(LocalAgentConfig())``, ``agent.chat(prompt)``, the
text streamed to stdout. Runs with the SDK venv's interpreter; the model
endpoint comes from ``GOOGLE_GEMINI_BASE_URL`` and ``GEMINI_API_KEY`` (the
scripted model API), the binary is the SDK's own.

    sdk-python bench/clients/antigravity_sdk.py "prompt"
"""

from __future__ import annotations

import asyncio
import sys

from google.antigravity import Agent, LocalAgentConfig  # type: ignore[import-not-found,unused-ignore]


async def main(prompt: str) -> int:
    async with Agent(LocalAgentConfig()) as agent:
        response = await agent.chat(prompt)
        chars = 0
        async for token in response:
            sys.stdout.write(token)
            chars += len(token)
    sys.stdout.flush()
    return 0 if chars else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "hi")))
