"""Model answers into typed artifacts (plan JSON, edit blocks); plan validation and ordering."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from pydantic import ValidationError

from agent.errors import ParseError, PlanInvalid
from agent.llm.thinking import split_thinking
from agent.models import (
    LLMResponse,
    MetaPlan,
    PartPlan,
    PatchEdit,
    PlanAdjustment,
    RefinementRequest,
    StepResult,
)

if TYPE_CHECKING:  # the client is passed in; its module is the caller's
    from agent.llm.logged import LoggedLLMClient

PassType = Literal["meta_plan", "part_plan", "adjustment", "adjustment_finalize"]
Plan = MetaPlan | PartPlan | PlanAdjustment
PlanT = TypeVar("PlanT", MetaPlan, PartPlan, PlanAdjustment)

_PLAN_MODELS: dict[str, type[MetaPlan] | type[PartPlan] | type[PlanAdjustment]] = {
    "meta_plan": MetaPlan,
    "part_plan": PartPlan,
    "adjustment": PlanAdjustment,
    "adjustment_finalize": PlanAdjustment,
}

EXCERPT_CHARS = 400
_EDIT_OPEN = re.compile(r"<edit(?=[\s>/])")
_EDIT_HEADER = re.compile(r"<edit\b([^<>]*)>")
_FILE_ATTR = re.compile(r"""\bfile\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_FENCE_OPEN = re.compile(r"```[\w.+#-]*[ \t]*")
_FENCE_CLOSE = re.compile(r"```[ \t]*")
# In these files a ``` line is content, never a wrapper the model added.
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` cut to `limit` characters, marked when cut."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


# --- plans -----------------------------------------------------------------------------------


def first_json_object(text: str) -> dict[str, object] | None:
    """The first complete JSON object in `text` (prose and fences around it ignored); failing
    that, the same after the obvious repair of trailing commas."""
    found = _first_object(text)
    if found is None and "," in text:
        found = _first_object(without_trailing_commas(text))
    return found


def without_trailing_commas(text: str) -> str:
    """`text` without commas that directly close an object or array (outside strings)."""
    out: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            in_string = char != '"' or escaped
            escaped = char == "\\" and not escaped
        elif char == '"':
            in_string = True
        elif char == "," and text[i + 1 :].lstrip()[:1] in ("}", "]"):
            continue
        out.append(char)
    return "".join(out)


def _first_object(text: str) -> dict[str, object] | None:
    """The first complete JSON object in `text`."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON, nested past the stack, a huge number
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_plan_response(text: str, pass_type: PassType) -> Plan:
    """The plan artifact of `pass_type` from a model answer; ParseError names what is wrong."""
    model = _PLAN_MODELS.get(pass_type)
    if model is None:
        raise ValueError(f"unknown plan pass type {pass_type!r}")
    visible, unclosed = split_thinking(text)
    data = first_json_object(visible)
    if data is None and unclosed:  # a model that never closed its <think> block
        data = first_json_object(unclosed)
    if data is None:
        raise ParseError(f"no JSON object in the {pass_type} answer: {excerpt(text)!r}", raw=text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ParseError(_field_problems(pass_type, exc, text), raw=text) from exc


def _field_problems(pass_type: str, exc: ValidationError, text: str) -> str:
    """A message naming the missing and mistyped fields of a plan answer."""
    missing: list[str] = []
    mistyped: list[str] = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        if error["type"] == "missing":
            missing.append(where)
        else:
            mistyped.append(f"{where} ({error['msg']})")
    parts = [f"missing fields: {', '.join(missing)}"] if missing else []
    parts += [f"mistyped fields: {', '.join(mistyped)}"] if mistyped else []
    return f"{pass_type} answer has {'; '.join(parts)}; answer: {excerpt(text)!r}"


class PlanItem(Protocol):
    """A part or a step: an id and the ids it depends on."""

    id: str
    depends_on: list[str]


ItemT = TypeVar("ItemT", bound=PlanItem)


def plan_items(plan: Plan) -> tuple[str, Sequence[PlanItem]]:
    """("part", parts) of a meta-plan, ("step", steps) of a part plan or adjustment."""
    if isinstance(plan, MetaPlan):
        return "part", plan.parts
    if isinstance(plan, PartPlan):
        return "step", plan.steps
    return "step", plan.revised_steps


def validate_plan(plan: Plan, known_ids: set[str] | None = None) -> list[str]:
    """The plan's problems (empty, duplicate ids, unknown dependencies, cycles); [] when valid.

    `known_ids` are ids that exist outside the plan (completed steps). For an adjustment without
    `known_ids`, dependencies outside the revised list are accepted: they may be completed steps.
    """
    kind, items = plan_items(plan)
    problems = [] if items or isinstance(plan, PlanAdjustment) else [f"the plan has no {kind}s"]
    problems += _id_problems(kind, items)
    open_world = isinstance(plan, PlanAdjustment) and known_ids is None
    if not open_world:
        problems += _unknown_dependencies(kind, items, known_ids or set())
    problems += [f"dependency cycle: {' -> '.join(cycle)}" for cycle in find_cycles(items)]
    return problems


def ensure_valid_plan(plan: PlanT, known_ids: set[str] | None = None) -> PlanT:
    """The plan itself when valid; PlanInvalid listing its problems otherwise."""
    problems = validate_plan(plan, known_ids)
    if problems:
        raise PlanInvalid(problems)
    return plan


def _id_problems(kind: str, items: Sequence[PlanItem]) -> list[str]:
    """Empty and duplicate ids."""
    problems = [f"a {kind} has an empty id" for item in items if not item.id.strip()]
    counts: dict[str, int] = {}
    for item in items:
        counts[item.id] = counts.get(item.id, 0) + 1
    problems += [f"duplicate {kind} id {i!r} (used {n} times)" for i, n in counts.items() if n > 1]
    return problems


def _unknown_dependencies(kind: str, items: Sequence[PlanItem], known: set[str]) -> list[str]:
    """Dependencies naming neither an item of the plan nor a known id."""
    ids = {item.id for item in items} | known
    return [
        f"{kind} {item.id!r} depends on unknown id {dep!r}"
        for item in items
        for dep in item.depends_on
        if dep not in ids
    ]


def find_cycles(items: Sequence[PlanItem]) -> list[list[str]]:
    """Each dependency cycle once, as [a, b, …, a] where a depends on b."""
    graph: dict[str, list[str]] = {}
    for item in items:
        graph.setdefault(item.id, []).extend(item.depends_on)
    state: dict[str, str] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for dep in graph[node]:
            if dep not in graph:
                continue
            if state.get(dep) == "open":
                cycle = [*stack[stack.index(dep) :], dep]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    cycles.append(cycle)
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node)
    return cycles


def topological_order(items: Sequence[ItemT]) -> list[ItemT]:
    """Items with every dependency first; ties keep plan order. Unknown ids count as done."""
    problems = _id_problems("item", items)
    if problems:
        raise PlanInvalid(problems)
    ids = {item.id for item in items}
    done: set[str] = set()
    remaining = list(items)
    order: list[ItemT] = []
    while remaining:
        ready = next(
            (
                i
                for i, item in enumerate(remaining)
                if all(dep in done or dep not in ids for dep in item.depends_on)
            ),
            None,
        )
        if ready is None:
            raise PlanInvalid([f"dependency cycle: {' -> '.join(c)}" for c in find_cycles(items)])
        item = remaining.pop(ready)
        order.append(item)
        done.add(item.id)
    return order


# --- edit blocks -----------------------------------------------------------------------------


def parse_implement_response(text: str) -> list[PatchEdit]:
    """The `<edit>` blocks of an implement answer, in answer order; ParseError when malformed."""
    visible, unclosed = split_thinking(text)
    edits = _parse_blocks(visible, raw=text)
    if not edits and unclosed:  # a model that never closed its <think> block
        edits = _parse_blocks(unclosed, raw=text)
    if not edits:
        raise ParseError(f"no <edit> blocks found in the answer: {excerpt(text)!r}", raw=text)
    return edits


def _parse_blocks(text: str, *, raw: str) -> list[PatchEdit]:
    """Every edit block of `text`; ParseError quoting the first malformed one."""
    edits: list[PatchEdit] = []
    match = _EDIT_OPEN.search(text)
    while match is not None:
        edit, end = _parse_block(text, match.start(), raw)
        edits.append(edit)
        match = _EDIT_OPEN.search(text, end)
    return edits


def _parse_block(text: str, start: int, raw: str) -> tuple[PatchEdit, int]:
    """The edit block starting at `start` and the index just after its `</edit>`."""
    header = _EDIT_HEADER.match(text, start)
    if header is None:
        raise _malformed("the <edit …> tag is not closed with '>'", text, start, raw)
    attribute = _FILE_ATTR.search(header.group(1))
    if attribute is None:
        raise _malformed('missing file="…" attribute', text, start, raw)
    path = (attribute.group(1) if attribute.group(1) is not None else attribute.group(2)).strip()
    if not path:
        raise _malformed("empty file path", text, start, raw)
    search, pos = _section(text, header.end(), "search", start, raw)
    replacement, pos = _section(text, pos, "replacement", start, raw)
    pos = _skip_space(text, pos)
    if not text.startswith("</edit>", pos):
        raise _malformed("missing </edit> after </replacement>", text, start, raw)
    keep_fences = path.lower().endswith(_MARKDOWN_SUFFIXES)
    search = _clean_section(search, keep_fences)
    edit = PatchEdit(
        file_path=path,
        search="" if not search.strip() else search,
        replacement=_clean_section(replacement, keep_fences),
    )
    return edit, pos + len("</edit>")


def _section(text: str, pos: int, tag: str, start: int, raw: str) -> tuple[str, int]:
    """The raw content of `<tag>…</tag>` expected at `pos` (after whitespace), and its end."""
    pos = _skip_space(text, pos)
    opening, closing = f"<{tag}>", f"</{tag}>"
    if not text.startswith(opening, pos):
        raise _malformed(f"missing <{tag}>", text, start, raw)
    end = text.find(closing, pos)
    content = text[pos + len(opening) : end]
    if end == -1 or "</edit>" in content:
        raise _malformed(f"<{tag}> is not closed with {closing}", text, start, raw)
    return content, end + len(closing)


def _skip_space(text: str, pos: int) -> int:
    """The index of the first non-whitespace character at or after `pos`."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _clean_section(content: str, keep_fences: bool) -> str:
    """Section text without the one newline after the opening / before the closing tag.

    A ``` fence line at both the very start and the very end is a wrapper the model added,
    except in Markdown files where fences are content.
    """
    if content.startswith("\r\n"):
        content = content[2:]
    elif content.startswith("\n"):
        content = content[1:]
    if content.endswith("\r\n"):
        content = content[:-2]
    elif content.endswith("\n"):
        content = content[:-1]
    return content if keep_fences else _strip_fence(content)


def _strip_fence(content: str) -> str:
    """`content` without a ``` line at its start and end, when both are there."""
    lines = content.split("\n")
    if (
        len(lines) >= 2
        and _FENCE_OPEN.fullmatch(lines[0].rstrip("\r"))
        and _FENCE_CLOSE.fullmatch(lines[-1].rstrip("\r"))
    ):
        return "\n".join(lines[1:-1])
    return content


def _malformed(reason: str, text: str, start: int, raw: str) -> ParseError:
    """A ParseError quoting the malformed block that starts at `start`."""
    end = text.find("</edit>", start)
    following = _EDIT_OPEN.search(text, start + 1)
    stop = len(text) if end == -1 else end + len("</edit>")
    if following is not None and following.start() < stop:
        stop = following.start()
    block = excerpt(text[start:stop], 800)
    return ParseError(f"malformed edit block ({reason}):\n{block}", raw=raw)


def edits_of(response: LLMResponse, llm: LoggedLLMClient) -> StepResult:
    """An answer of edit blocks as a StepResult: its edits, what it asked to see instead
    (`<need_context>`), or why it could not be parsed."""
    wanted = needs_context(response.text)
    if wanted is not None and "<edit" not in response.text:
        return StepResult(
            success=False,
            error_info=f"needs context: {', '.join(wanted.missing_files)}",
            raw_response=response.raw_text,
            usage=response.usage,
            refinement=wanted,
        )
    try:
        edits = parse_implement_response(response.raw_text)
    except ParseError as exc:
        cut = response.cut_off(llm.role, llm.config.max_tokens)
        return StepResult(
            success=False,
            error_info=f"unparseable answer: {cut}{exc}",
            raw_response=response.raw_text,
            usage=response.usage,
        )
    return StepResult(
        success=True, edits=edits, raw_response=response.raw_text, usage=response.usage
    )


_NEED_CONTEXT = re.compile(r"<need_context>\s*(.*?)\s*</need_context>", re.S)


def needs_context(text: str) -> RefinementRequest | None:
    """The `<need_context>` requests of an answer, as a RefinementRequest (None if none)."""
    wanted = [m.strip() for m in _NEED_CONTEXT.findall(text) if m.strip()]
    if not wanted:
        return None
    files = [w for w in wanted if "/" in w or "." in w.rsplit("/", 1)[-1]]
    symbols = [w for w in wanted if w not in files]
    return RefinementRequest(
        reason="the implementer asked for context", missing_files=files, missing_symbols=symbols
    )
