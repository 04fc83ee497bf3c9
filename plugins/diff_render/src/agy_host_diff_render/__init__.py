"""agy-host-diff-render: the diffs behind agents' edit cards.

Installed, it answers ``agy_host_render_diff`` for every finished edit card:

* ACP edits carry the agent's own ``oldText``/``newText``: a unified diff of
  those, with line numbers (:mod:`agy_host_diff_render.unified`);
* stream-json edits name a file: the working tree against what the file was
  before the turn, from git (the commit checked out at turn start, plus the
  files that were dirty or untracked then, snapshotted), or from a plain
  snapshot of the working directory when it is not a git repository
  (:mod:`agy_host_diff_render.baseline`).

Diffs are capped at 100 lines ("… N more lines"). Without this plugin the
renderers show ``[edit: PATH]`` labels.
"""

__version__ = "0.1.0"
