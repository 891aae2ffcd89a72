"""Side-by-side benchmark of pg-pipeline, PgQueuer and Procrastinate.

    python -m benchmarks.compare --help

The `*_child.py` modules run in the benchmark's own virtualenv (benchmarks/.venv-compare), where
the competitors are installed; they import nothing from pg-pipeline, and this package's
`__init__` must stay import-free so that they can be run as `python -m`.
"""
