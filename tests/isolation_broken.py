"""Imported as a preload module by tests/unit/test_isolation.py: it fails on purpose."""

raise RuntimeError("tests.isolation_broken fails on import on purpose")
