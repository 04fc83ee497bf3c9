"""What a benchmark run knows: interpreters, the peers, sizes, a scratch folder."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import Skip
from bench.provision import Peer, Unavailable, node


@dataclass
class Sizes:
    """Counts of each benchmark; ``quick()`` is for development and the harness tests."""

    flood: int = 200_000
    scale_sessions: int = 64
    scale_chunks: int = 5_000
    bridge_calls: int = 1_000
    cli_runs: int = 5
    #: Google's harness spends a few ms per streamed model chunk itself: 10,000
    #: chunks is about half a minute per client run (50,000 about three).
    harness_flood: int = 10_000
    #: B9: sessions and megabytes of transcripts in the synthetic history.
    history_sessions: int = 2_000
    history_mb: int = 120

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            flood=5_000,
            scale_sessions=4,
            scale_chunks=500,
            bridge_calls=50,
            cli_runs=1,
            harness_flood=2_000,
            history_sessions=40,
            history_mb=2,
        )


@dataclass
class Ctx:
    repeats: int = 5
    sizes: Sizes = field(default_factory=Sizes)
    #: The interpreter with agy-host installed: runs our workers and the fake agent.
    python: str = sys.executable
    peers: dict[str, Peer | Unavailable] = field(default_factory=dict)
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="agy-bench-")))

    def peer(self, name: str) -> Peer:
        got = self.peers.get(name)
        if got is None:
            raise Skip(f"{name} was not provisioned (run without --no-peers)")
        if isinstance(got, Unavailable):
            raise Skip(f"{name} unavailable: {str(got).splitlines()[0]}")
        return got

    def node(self) -> str:
        try:
            return node()
        except Unavailable as exc:
            raise Skip(str(exc)) from None

    def home(self, name: str) -> Path:
        """A fresh HOME / XDG tree for one client run (nothing read from the user's)."""
        path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.scratch))
        for sub in ("config", "state", "cache"):
            (path / sub).mkdir()
        return path

    def isolated_env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "ACPX_"))}
        env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / "config"),
            XDG_STATE_HOME=str(home / "state"),
            XDG_CACHE_HOME=str(home / "cache"),
            NO_COLOR="1",
        )
        return env

    def cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


__all__ = ["Ctx", "Sizes"]
