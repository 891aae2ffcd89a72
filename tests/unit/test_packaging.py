"""The wheel ships what the checkout holds."""

from __future__ import annotations

from tests.support.paths import REPO as ROOT


def test_the_wheel_lists_every_package_of_the_source_tree() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("pipeline", "stages")
        for init in (ROOT / top).rglob("__init__.py")
    }
    # A package missing here installs from a checkout (editable) but not from the wheel.
    assert found <= listed, sorted(found - listed)
