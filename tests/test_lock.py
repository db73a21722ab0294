"""The lock holds: uv.lock was locked from pyproject.toml as it is, pip's requirements files are
exports of it, and what installs cra installs from them. Offline: the files are read and
compared with `packaging`, nothing is resolved.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.lockfile import export_disagreements, lock_disagreements, parse_export

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT_TEXT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
LOCK_TEXT = (ROOT / "uv.lock").read_text(encoding="utf-8")
EXPORTS = ["requirements/dev.txt", "requirements/server.txt"]


def pyproject(text: str = PYPROJECT_TEXT) -> dict[str, Any]:
    return tomllib.loads(text)


def lock(text: str = LOCK_TEXT) -> dict[str, Any]:
    return tomllib.loads(text)


def export_text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def edited(text: str, old: str, new: str) -> str:
    """`text` with its one `old` replaced: a copy of a file, changed as a person might."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def locked_version(name: str) -> str:
    [version] = [p["version"] for p in lock()["package"] if p["name"] == name]
    return str(version)


def makefile_variable(name: str) -> str:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{name}\s*:=\s*(.*)$", text, re.M)
    assert match, f"the Makefile sets no {name}"
    return match.group(1).strip()


# --- the files agree ----------------------------------------------------------------------------


def test_uv_lock_was_locked_from_pyproject_as_it_is() -> None:
    assert lock_disagreements(pyproject(), lock()) == []


@pytest.mark.parametrize("name", EXPORTS)
def test_each_export_pins_what_uv_lock_locked(name: str) -> None:
    assert export_disagreements(name, parse_export(export_text(name)), pyproject(), lock()) == []


def test_the_dev_export_has_every_extra_the_server_export_every_extra_but_dev() -> None:
    extras = set(pyproject()["project"]["optional-dependencies"])
    assert parse_export(export_text("requirements/dev.txt")).extras == extras
    assert parse_export(export_text("requirements/server.txt")).extras == extras - {"dev"}


def test_the_build_group_is_the_build_systems_requirements() -> None:
    data = pyproject()
    assert data["dependency-groups"]["build"] == data["build-system"]["requires"]


@pytest.mark.parametrize("name", EXPORTS)
def test_each_export_carries_the_build_backend(name: str) -> None:
    """Both are installed before cra is built with --no-build-isolation (make, the image)."""
    assert parse_export(export_text(name)).groups == {"build"}


# --- a disagreement is found --------------------------------------------------------------------


def test_a_dependency_added_to_pyproject_but_not_locked_is_found() -> None:
    text = edited(
        PYPROJECT_TEXT, '  "waitress>=3.0",\n', '  "waitress>=3.0",\n  "left-pad>=1.0",\n'
    )
    problems = lock_disagreements(pyproject(text), lock())
    assert "pyproject.toml requires left-pad>=1.0, uv.lock was not locked with it" in problems
    assert "left-pad (dependencies in pyproject.toml) is not in uv.lock" in problems


def test_a_range_that_excludes_the_locked_version_is_found() -> None:
    text = edited(PYPROJECT_TEXT, '"httpx>=0.27"', '"httpx>=0.27,<0.28"')
    problems = lock_disagreements(pyproject(text), lock())
    assert (
        f"uv.lock has httpx {locked_version('httpx')}, outside pyproject.toml's "
        "<0.28,>=0.27 (dependencies)"
    ) in problems


def test_a_dependency_dropped_from_pyproject_is_found() -> None:
    text = edited(PYPROJECT_TEXT, '  "gunicorn>=22.0",\n', "")
    assert lock_disagreements(pyproject(text), lock()) == [
        'uv.lock was locked with gunicorn>=22.0; extra == "dev", pyproject.toml no longer '
        "requires it"
    ]


def test_a_dependency_moved_to_another_extra_is_found() -> None:
    text = edited(PYPROJECT_TEXT, '  "gunicorn>=22.0",\n', "")
    text = edited(
        text,
        'redis = ["redis>=5.0", "rq>=1.16"]',
        'redis = ["redis>=5.0", "rq>=1.16", "gunicorn>=22.0"]',
    )
    assert (
        'pyproject.toml requires gunicorn>=22.0; extra == "redis", uv.lock was not locked with it'
    ) in lock_disagreements(pyproject(text), lock())


def test_a_dependency_group_changed_but_not_locked_is_found() -> None:
    text = edited(
        PYPROJECT_TEXT, 'build = ["setuptools>=77", "wheel"]', 'build = ["setuptools>=99", "wheel"]'
    )
    assert lock_disagreements(pyproject(text), lock()) == [
        "uv.lock was not locked with pyproject.toml's dependency groups ['build'] as they are",
        f"uv.lock has setuptools {locked_version('setuptools')}, outside pyproject.toml's "
        ">=99 (group build)",
    ]


def test_a_new_python_range_is_found() -> None:
    text = edited(PYPROJECT_TEXT, 'requires-python = ">=3.11"', 'requires-python = ">=3.12"')
    assert lock_disagreements(pyproject(text), lock()) == [
        "uv.lock is for Python >=3.11, pyproject.toml says >=3.12"
    ]


def test_an_export_left_behind_by_a_new_lock_is_found() -> None:
    """What a dependency bot's pull request does: uv.lock moves, the exports do not."""
    version = locked_version("httpx")
    relocked = lock(
        edited(
            LOCK_TEXT, f'name = "httpx"\nversion = "{version}"', 'name = "httpx"\nversion = "99.0"'
        )
    )
    problems = export_disagreements(
        "requirements/dev.txt",
        parse_export(export_text("requirements/dev.txt")),
        pyproject(),
        relocked,
    )
    assert problems == [f"requirements/dev.txt pins httpx=={version}, uv.lock has 99.0"]


def test_a_changed_hash_is_found() -> None:
    text = export_text("requirements/server.txt")
    [first] = re.findall(r"^waitress==\S+ \\\n    --hash=sha256:(\w+)", text, re.M)
    changed = edited(text, first, "0" * len(first))
    problems = export_disagreements(
        "requirements/server.txt", parse_export(changed), pyproject(), lock()
    )
    assert problems == [
        f"requirements/server.txt: the hashes of waitress=="
        f"{locked_version('waitress')} are not uv.lock's"
    ]


def test_an_export_missing_an_extras_requirements_is_found() -> None:
    text = edited(
        export_text("requirements/server.txt"), "--extra postgres", "--extra dev --extra postgres"
    )
    problems = export_disagreements(
        "requirements/server.txt", parse_export(text), pyproject(), lock()
    )
    assert "requirements/server.txt lacks pytest, which pyproject.toml's extra dev need" in problems


def test_an_export_missing_a_groups_requirement_is_found() -> None:
    text = export_text("requirements/server.txt")
    [entry] = re.findall(r"^setuptools==.*\n(?:    .*\n)*", text, re.M)
    without = parse_export(edited(text, entry, ""))
    problems = export_disagreements("requirements/server.txt", without, pyproject(), lock())
    assert problems == [
        "requirements/server.txt lacks setuptools, which pyproject.toml's group build need"
    ]


def test_a_hand_written_requirements_file_is_refused() -> None:
    with pytest.raises(ValueError, match="not written by make lock"):
        parse_export("httpx==0.28.1\n")
    with pytest.raises(ValueError, match=r"not a pinned, hashed requirement: httpx>=0\.27"):
        parse_export("#    uv export --extra dev\nhttpx>=0.27\n")


# --- what installs cra installs from the lock ---------------------------------------------------


def test_make_installs_the_dev_export_of_the_makefiles_extras() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "the Makefile has no $(STAMP) rule"
    lines = recipe.group(1).splitlines()
    assert any("install --quiet --require-hashes -r requirements/dev.txt" in ln for ln in lines)
    assert any("install --quiet --no-deps --no-build-isolation -e ." in ln for ln in lines)
    assert (
        set(makefile_variable("EXTRAS").split(","))
        == parse_export(export_text("requirements/dev.txt")).extras
    )
    assert (
        set(makefile_variable("SERVER_EXTRAS").split(","))
        == parse_export(export_text("requirements/server.txt")).extras
    )


def test_make_lock_writes_both_exports() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^lock:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe and re.search(r"^\tuv lock$", recipe.group(1), re.M)
    for name in EXPORTS:
        assert f"--output-file {name}" in recipe.group(1)


# --- who updates it -----------------------------------------------------------------------------


def dependabot_config() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def dependabot_errors(config: dict[str, Any]) -> list[str]:
    """Where `config` breaks SchemaStore's schema, as vendored by check-jsonschema (as for the
    workflows)."""
    vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads(vendor.joinpath("dependabot.json").read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(config)
    ]


def test_dependabot_config_matches_its_schema() -> None:
    assert dependabot_errors(dependabot_config()) == []


def test_the_schema_check_catches_a_broken_dependabot_config() -> None:
    config = dependabot_config()
    config["updates"][0]["package-ecosystem"] = "uv-lock"
    config["updates"][1]["schedule"] = {"interval": "fortnightly"}
    where = {error.split(":")[0] for error in dependabot_errors(config)}
    assert where == {"updates/0/package-ecosystem", "updates/1/schedule/interval"}


def test_dependabot_updates_the_lock_and_the_actions_but_not_the_exports() -> None:
    updates = {u["package-ecosystem"]: u for u in dependabot_config()["updates"]}
    assert set(updates) == {"uv", "github-actions"}
    assert all(u["directory"] == "/" for u in updates.values())
    assert updates["uv"]["exclude-paths"] == ["requirements/**"]
    assert all(name.startswith("requirements/") for name in EXPORTS)
