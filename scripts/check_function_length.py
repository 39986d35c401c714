#!/usr/bin/env python3
"""Lists every function in csrc/core longer than 80 lines; exits 1 when there is one.

    python3 scripts/check_function_length.py [ROOT] [--max LINES] [--all]

A function's length is counted from the line its signature starts on to its closing brace,
both included (what an editor shows). Lambdas and local classes count as part of the function
that holds them. Long central functions hide the order of the work: the plan reads as named
phases (csrc/core/plan/startup_plan.cc), the stage check likewise (csrc/core/stages/
stage_check.cc), and this check keeps it that way.

The scanner is deliberately small: comments, string and character literals are blanked, then
braces are matched; a brace block whose header (the text since the previous `;`, `{` or `}`)
holds a parameter list, and that is not a namespace, class or control statement, is a function.
`--all` prints every function with its length, longest first (for reading, not for CI).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MAX_LINES = 80

# Functions allowed past MAX_LINES (each entry: "relative/path.cc:Name", with the reason). Empty:
# since the model reader was split into reading steps, every function of csrc/core fits.
ALLOWED: set[str] = set()
ALLOWED_PREFIXES: tuple[str, ...] = ()

CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|try|return)\b")
AGGREGATE = re.compile(r"^\s*(namespace|extern|class|struct|union|enum)\b|\b(class|struct|union|enum)\s+\w+[^()]*$")


def blank_literals(text: str) -> str:
    """Comments, string and char literals replaced by spaces (newlines kept, so lines count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(header: str) -> str | None:
    """The name before the header's first top-level '(' (None: not a function header)."""
    header = re.sub(r"^\s*#.*$", "", header, flags=re.MULTILINE)  # preprocessor lines
    header = re.sub(r"\[\[[^\]]*\]\]", "", header)  # attributes
    if CONTROL.match(header) or AGGREGATE.search(header.strip()) or "(" not in header:
        return None
    before = header[: header.index("(")]
    if "=" in before.replace("operator=", "").replace("==", ""):  # an initializer (a lambda)
        names = re.findall(r"(\w+)\s*=", before)
        return names[-1] if names else None
    m = re.search(r"((?:[\w~]+::)*(?:operator\s*\S+|~?\w+))\s*$", before)
    return m.group(1).strip() if m else None


def functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, length in lines) of every function body in \\p text."""
    code = blank_literals(text)
    found: list[tuple[str, int, int]] = []
    stack: list[tuple[str, str | None, int]] = []  # (kind, name, start line)
    header_start = 0
    in_function = 0
    for i, c in enumerate(code):
        if c == "{":
            if in_function:
                stack.append(("inner", None, 0))
                in_function += 1
            else:
                header = code[header_start:i]
                name = function_name(header)
                if name:
                    offset = len(header) - len(header.lstrip())
                    line = code.count("\n", 0, header_start + offset) + 1
                    stack.append(("function", name, line))
                    in_function = 1
                else:
                    stack.append(("scope", None, 0))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, name, line = stack.pop()
                if kind == "function":
                    end = code.count("\n", 0, i) + 1
                    found.append((name, line, end - line + 1))
                if in_function:
                    in_function -= 1
            header_start = i + 1
        elif c == ";" and not in_function:
            header_start = i + 1
    return found


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    limit = MAX_LINES
    if "--max" in argv:
        limit = int(argv[argv.index("--max") + 1])
        args = [a for a in args if a != str(limit)]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    core = root / "csrc" / "core"
    rows = []
    for path in sorted(core.rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        rel = path.relative_to(root).as_posix()
        for name, line, length in functions(path.read_text(encoding="utf-8")):
            rows.append((length, rel, line, name))
    if "--all" in argv:
        for length, rel, line, name in sorted(rows, reverse=True):
            print(f"{length:5d}  {rel}:{line}  {name}")
        return 0
    too_long = [
        r for r in rows if r[0] > limit and f"{r[1]}:{r[3]}" not in ALLOWED and not r[1].startswith(ALLOWED_PREFIXES)
    ]
    for length, rel, line, name in sorted(too_long, reverse=True):
        print(f"{rel}:{line}: {name} is {length} lines (at most {limit}); split it into named steps")
    if too_long:
        print(f"{len(too_long)} function(s) in csrc/core over {limit} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
