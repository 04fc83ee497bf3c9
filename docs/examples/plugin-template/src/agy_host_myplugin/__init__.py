"""agy-host-myplugin: <what it does>.

The hooks are in :mod:`agy_host_myplugin.hooks`, the module the ``agy_host``
entry point names.
"""

__version__ = "0.1.0"
