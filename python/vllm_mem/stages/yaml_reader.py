"""Stage files read as YAML with bounded work.

PyYAML's safe loader still expands aliases (a few hundred bytes of ``&a [*b, *b, ...]`` become
billions of values once re-serialised for the core), keeps the last of duplicate keys silently,
and recurses once per nesting level. This reader therefore

1. streams the file's events once (libyaml's ``CSafeLoader`` where present, else the
   pure-Python ``SafeLoader``), refusing more than ``MAX_STAGE_DEPTH`` levels before anything
   recursive runs;
2. composes the node graph (aliases stay shared nodes there) and measures its size *as
   expanded*, memoised per node, so an alias bomb is refused in time linear in the file;
3. constructs the document refusing duplicate keys.

The file size is bounded before the file is read (``_validate.read_text``).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from .. import _limits as L
from .. import _validate as V

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _NoDuplicatesConstructor(yaml.SafeLoader):  # type: ignore[misc]
    """Constructs documents from composed nodes, refusing a key given twice in one mapping
    (merged ``<<`` keys may still be overridden, as YAML intends)."""

    field = "stage config"

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _value in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:  # an unhashable key: SafeConstructor names it below
                    continue
                if first is not key_node:
                    line = key_node.start_mark.line + 1
                    V.fail(self.field, f"line {line}: key {V.show(key)} appears twice in one mapping "
                                       "(the later one would silently replace the first)")
        return super().construct_mapping(node, deep=deep)


def _check_events(text: str, field: str) -> None:
    depth = events = 0
    for event in yaml.parse(text, Loader=_Loader):
        events += 1
        if events > L.MAX_STAGE_NODES * 2:  # start and end events per collection
            V.fail(field, f"holds more than {L.MAX_STAGE_NODES} values; at most {L.MAX_STAGE_NODES} are read")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > L.MAX_STAGE_DEPTH:
                line = event.start_mark.line + 1
                V.fail(field, f"nested deeper than {L.MAX_STAGE_DEPTH} levels (line {line})")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _check_expansion(root: Any, field: str) -> None:
    """Values and scalar characters of the document with every alias expanded, memoised per
    node (aliases are shared nodes), iterative, refusing recursive aliases."""
    sizes: dict[int, tuple[int, int]] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = (1, len(node.value))
            continue
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        if not children_done:
            if key in sizes:
                continue
            if key in on_path:
                V.fail(field, "an alias refers to a node that contains it (a recursive alias)")
            on_path.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        on_path.discard(key)
        values = 1 + sum(sizes[id(c)][0] for c in children)
        chars = sum(sizes[id(c)][1] for c in children)
        if values > L.MAX_STAGE_NODES:
            V.fail(field, f"expands to more than {L.MAX_STAGE_NODES} values (aliases included); "
                          f"at most {L.MAX_STAGE_NODES} are read")
        if chars > L.MAX_STAGE_EXPANDED_CHARS:
            V.fail(field, f"expands to more than {L.MAX_STAGE_EXPANDED_CHARS} characters (aliases "
                          "included)")
        sizes[key] = (values, chars)


def load_json(text: str, field: str) -> Any:
    """A ``.json`` stage file, read as JSON rather than YAML: PyYAML reads YAML 1.1, where
    ``1e-5`` is a string, not a number. Duplicate keys and NaN/Infinity are refused; deep
    nesting is a ValueError, not a RecursionError (the depth bound applies afterwards)."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                V.fail(field, f"key {V.show(key)} appears twice in one object (the later one would "
                              "silently replace the first)")
            out[key] = value
        return out

    def no_constant(name: str) -> Any:
        V.fail(field, f"{name} is not a JSON number; give a finite value")

    try:
        return json.loads(text, object_pairs_hook=unique, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        V.fail(field, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")
    except RecursionError:
        V.fail(field, f"nested deeper than {L.MAX_STAGE_DEPTH} levels")


def load_yaml(text: str, field: str) -> Any:
    """The document of a stage file's text (YAML, which includes JSON), bounded as above.
    Malformed YAML, bombs, nesting and duplicate keys are ValueErrors naming ``field``."""
    try:
        _check_events(text, field)
        root = yaml.compose(text, Loader=_Loader)
        if root is None:
            return None
        _check_expansion(root, field)
        constructor = _NoDuplicatesConstructor("")
        constructor.field = field
        return constructor.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in str(problem):
            # PyYAML >= 6.0.4's scanner has its own nesting limit and, scanning flow collections
            # ahead of the events, can reach it before _check_events counts our bound: the file
            # is then deeper than our bound too, and is refused in the same words.
            V.fail(field, f"nested deeper than {L.MAX_STAGE_DEPTH} levels{where}")
        V.fail(field, f"not valid YAML{where}: {V.clip(str(problem), 120)}")
