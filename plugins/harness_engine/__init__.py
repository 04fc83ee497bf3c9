"""Test-package anchor: gives each plugin's tests/ a unique import name under pytest."""
