"""Fenced code blocks of the Markdown docs, with their ``<!-- doc-test: ... -->`` directives.

The conventions (also in docs/architecture.md, "Docs that run"):

- every fenced block names its language: ``python``, ``sh``/``bash``/``console``, ``sql``
  (run in the page's Postgres schema), ``yaml``, ``json``, ``toml``, ``text`` (diagrams and
  output samples) or ``nginx`` (proxy configuration, not run);
- an HTML comment right before a block, ``<!-- doc-test: WORDS -->``, says how to run it:
  ``file=PATH`` (write the block to PATH in the page's folder; a ``.py`` file is then
  imported and its names join the page's namespace; ``file=PATH append`` adds the block
  to that file and imports it again), ``isolated`` (run in a copy of the namespace, so
  the block's names do not leak into later blocks), ``not run: REASON``, ``exit=N``
  (the expected exit status of the block's commands) and ``error=SQLSTATE`` (a ``sql``
  block's expected error). A comment whose first line is
  ``<!-- doc-test: prelude`` holds Python run, unseen, before the block, in the same
  namespace (stubs for what the example assumes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"<!--\s*doc-test:(?P<body>.*?)-->", re.S)


def doc_pages() -> list[Path]:
    """README.md and every Markdown file under docs/ (new pages are picked up by themselves)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    options: dict[str, str] = field(default_factory=dict)
    prelude: str = ""

    @property
    def id(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def _parse_directive(body: str) -> tuple[dict[str, str], str]:
    first, _, rest = body.partition("\n")
    first = first.strip()
    if first == "prelude":
        return {"prelude": "yes"}, rest
    if first.startswith("not run:"):
        return {"not run": first[len("not run:"):].strip()}, ""
    options: dict[str, str] = {}
    for word in first.split():
        key, _, value = word.partition("=")
        options[key] = value
    return options, ""


def extract(path: Path) -> list[Block]:
    """The page's fenced blocks, in order, each with the directives just above it."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    pending: dict[str, str] = {}
    prelude = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("<!--") and "doc-test:" in line:
            j = i
            while "-->" not in lines[j]:
                j += 1
            m = _DIRECTIVE.search("\n".join(lines[i:j + 1]))
            if m is None:
                raise ValueError(f"{path}:{i + 1}: unreadable doc-test comment")
            options, code = _parse_directive(m.group("body"))
            if options.pop("prelude", None):
                prelude += code.rstrip() + "\n"
            pending.update(options)
            i = j + 1
            continue
        m = _FENCE.match(line)
        if m:
            fence, indent = m.group("fence"), len(m.group("indent"))
            body: list[str] = []
            start = i + 1
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
                i += 1
            info = m.group("info").strip().split()
            blocks.append(Block(path, start, info[0] if info else "", "\n".join(body) + "\n",
                                pending, prelude))
            pending, prelude = {}, ""
        elif line.strip() and pending:
            raise ValueError(f"{path}:{i + 1}: a doc-test comment must come right before "
                             "a fenced block")
        i += 1
    return blocks
