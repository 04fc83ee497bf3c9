"""The one version of Google's harness this engine speaks.

The harness's wire has no version field and the binary reports none, so the
wheel is pinned exactly: bumping it is this one line (plus the recorded
hashes below), then the contract suite against the new binary
(``nox -s tests -- plugins/harness_engine``).
"""

from __future__ import annotations

DISTRIBUTION = "google-antigravity"
VERSION = "0.1.22"
#: Where the binary sits inside the wheel (and the installed distribution).
BINARY_IN_WHEEL = "google/antigravity/bin/localharness"

#: sha256 of the pinned wheels known here, by wheel file name. An install
#: checks the wheel it fetched against this table when the name is listed,
#: and records the hash it saw either way (``agy-host harness status``).
WHEEL_SHA256: dict[str, str] = {
    "google_antigravity-0.1.22-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl": (
        "f57c82b64360c3ac9bc65744b8a4aee2dc355acb97194bad811a3a5071574861"
    ),
}

__all__ = ["BINARY_IN_WHEEL", "DISTRIBUTION", "VERSION", "WHEEL_SHA256"]
