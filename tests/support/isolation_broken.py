"""Imported as a preload module by tests/unit/pipeline/test_isolation.py: it fails on purpose."""

raise RuntimeError("tests.support.isolation_broken fails on import on purpose")
