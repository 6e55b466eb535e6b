"""The kinds of long-term memory entry, each declared once: :data:`TYPES`.

A type's :class:`TypeSpec` holds everything clio derives about it: the letter of its ids, its
fields (text fields are its identity, list fields its examples or steps, and which are
required), how it fades (its decay class, :data:`HALF_LIFE_BY_CLASS`; after the scriptling
memory design's classes, docs/memory.md says why), how many entries of it a prompt may carry
(``cap``), whether it applies to every task (ranked as fully relevant whatever the task), the
memory tool's operation that adds it (``tool_op``: its arguments are the type's fields) and the
words prompts use for it (``heading`` for its section of the prompt's memory block, ``noun`` for
the system prompt's list of what the model may store).

A type without a cap or a known decay class is an error when this module is imported, never a
silent zero. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

# Days for an entry's weight to halve, by decay class (None: never decays).
HALF_LIFE_BY_CLASS: dict[str, float | None] = {"fact": 90.0, "event": 30.0, "note": 7.0, "preference": None}


@dataclass(frozen=True)
class TypeSpec:
    prefix: str  # the letter of its ids ("d-1a2b3c")
    heading: str  # its section in the prompt's memory block
    text: tuple[str, ...]  # text fields, identity of the entry (with ``steps``)
    lists: tuple[str, ...]
    required: tuple[str, ...]
    decay: str  # a key of HALF_LIFE_BY_CLASS
    cap: int  # at most this many entries of the type in one prompt
    every_task: bool = False  # applies to every task: ranked as fully relevant whatever the task
    tool_op: str | None = None  # the memory tool's operation that adds one (its fields are the arguments)
    noun: str = ""  # how the system prompt names it among what the model may store (with tool_op)

    def __post_init__(self) -> None:
        if self.decay not in HALF_LIFE_BY_CLASS:
            raise ValueError(f"memory type {self.heading!r}: decay class {self.decay!r} is not one of {list(HALF_LIFE_BY_CLASS)}")
        if not isinstance(self.cap, int) or self.cap <= 0:
            raise ValueError(f"memory type {self.heading!r}: give it a cap of at least 1 entry in a prompt")
        unknown = [f for f in self.required if f not in (*self.text, *self.lists)]
        if not self.required or unknown:
            raise ValueError(f"memory type {self.heading!r}: its required fields must be among its fields ({unknown})")
        if self.tool_op is not None and not self.noun:
            raise ValueError(f"memory type {self.heading!r}: a type the tool adds needs the noun prompts use for it")

    @property
    def fields(self) -> tuple[str, ...]:
        return (*self.text, *self.lists)


TYPES: dict[str, TypeSpec] = {
    "rule": TypeSpec("r", "Rules", ("rule",), (), ("rule",), decay="preference", cap=10, every_task=True),
    "failure": TypeSpec(
        "f", "Failures to avoid", ("what", "impact", "prevention"), (), ("what",), decay="event", cap=5
    ),
    "solution": TypeSpec(
        "s", "Solutions", ("error", "solution"), ("examples",), ("error", "solution"), decay="fact", cap=15,
        tool_op="add_solution", noun="a solution to an error",
    ),
    "discovery": TypeSpec(
        "d", "Discoveries", ("fact",), (), ("fact",), decay="fact", cap=15,
        tool_op="add_discovery", noun="a discovery",
    ),
    "pattern": TypeSpec(
        "p", "Patterns", ("pattern",), ("examples",), ("pattern",), decay="fact", cap=10,
        tool_op="add_pattern", noun="a code pattern",
    ),
    "workflow": TypeSpec("w", "Workflows", ("name",), ("steps",), ("name", "steps"), decay="fact", cap=5),
}  # fmt: skip  # also the order of sections in the prompt


def added_by_tool() -> dict[str, str]:
    """The memory tool's operation -> the type it adds, in the table's order."""
    return {spec.tool_op: name for name, spec in TYPES.items() if spec.tool_op}


def storable_nouns() -> str:
    """What the system prompt says the model may store: "a solution to an error, a discovery, ..."."""
    return ", ".join(TYPES[t].noun for t in added_by_tool().values())
