"""Pydantic validation errors in plain words: which key, what was expected, what was given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from agent.console import did_you_mean

INPUT_CHARS = 60
_EXPECTED = {
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "text (a quoted string)",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "missing": "a value",
    "url_parsing": "a URL",
    "path_type": "a file path",
    "json_invalid": "valid JSON",
}
_BOUNDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "at most"),
}


def describe_input(value: Any) -> str:
    """A given value as a person would name it: `the text "abc"`, `-1`, `a table`."""
    if isinstance(value, str):
        text = value if len(value) <= INPUT_CHARS else value[:INPUT_CHARS] + "…"
        return f"the text {text!r}"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def expected(error: ErrorDetails) -> str | None:
    """What a key wanted, in words, for the error types a person meets; None otherwise."""
    kind, context = error["type"], error.get("ctx") or {}
    if kind in _EXPECTED:
        return _EXPECTED[kind]
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"a number {words} {context.get(key)}"
    if kind == "literal_error":
        return f"one of {context.get('expected')}"
    if kind in ("string_too_short", "too_short"):
        return "a non-empty value"
    return None


def plain(error: ErrorDetails, key: str, *, siblings: Sequence[str] = ()) -> str:
    """One error as `key: expected …, got …` (or `unknown key …; did you mean …?`)."""
    if error["type"] == "extra_forbidden":
        nearest = did_you_mean(key.rsplit(".", 1)[-1], siblings)
        prefix = key.rsplit(".", 1)[0] + "." if "." in key else ""
        hint = f"; did you mean {prefix}{nearest}?" if nearest else ""
        return f"unknown key {key}{hint}"
    if error["type"] == "missing":
        return f"{key} is required"
    wanted = expected(error)
    if wanted is None:
        message = str(error["msg"]).removeprefix("Value error, ")
        return f"{key}: {message}" if key else message
    return f"{key}: expected {wanted}, got {describe_input(error.get('input'))}"


def fields_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The field names of the (nested) model that `loc` points into; [] when not a model."""
    current: Any = model
    for part in loc:
        field = current.model_fields.get(str(part)) if _is_model(current) else None
        if field is None or not _is_model(field.annotation):
            return []
        current = field.annotation
    return list(current.model_fields) if _is_model(current) else []


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def dotted(loc: Sequence[int | str]) -> str:
    """A location as a dotted key: `testing.timeout`."""
    return ".".join(str(part) for part in loc)


def plain_errors(
    errors: Sequence[ErrorDetails],
    model: type[BaseModel],
    name: Callable[[Sequence[int | str]], str] = dotted,
) -> list[str]:
    """Every error of a validation in plain words; `name` turns a location into the key shown."""
    return [
        plain(error, name(error["loc"]), siblings=fields_at(model, error["loc"][:-1]))
        for error in errors
    ]
