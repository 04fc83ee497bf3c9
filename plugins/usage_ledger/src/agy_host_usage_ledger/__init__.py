"""agy-host-usage-ledger: what every turn cost, in one file.

The reference plugin of agy-host: small, separately installed, and built on
four hooks at once (see ``docs/plugins/`` in the agy-host repository):

* ``agy_host_render_event`` observes each turn and appends one line to the
  ledger when it ends: session, engine, model, stop reason, duration, tool
  counts and the usage the agent reported (:mod:`agy_host_usage_ledger.ledger`);
* ``agy_host_register_commands`` adds ``agy-host ledger show`` and
  ``agy-host ledger path``;
* ``agy_host_diagnostics`` adds a ``usage ledger`` section to doctor;
* ``agy_host_register_tools`` offers the agent a ``usage_summary`` host tool.

The ledger is ``$XDG_STATE_HOME/agy-host/usage-ledger.jsonl``
(``AGY_HOST_USAGE_LEDGER`` names another file).
"""

__version__ = "0.1.0"
