"""The wheel ships what the checkout holds."""

from __future__ import annotations

from tests.support.paths import REPO as ROOT


def test_the_wheel_lists_every_package_of_the_source_tree() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    import_name = config["package-dir"]  # the folders' import names
    found = {
        ".".join((name, *init.parent.relative_to(ROOT / import_name[name]).parts))
        for name in ("pg_pipeline", "pg_pipeline_documents")
        for init in (ROOT / import_name[name]).rglob("__init__.py")
    }
    # A package missing here installs from a checkout (editable) but not from the wheel.
    assert found <= listed, sorted(found - listed)
