"""Every fenced block of README.md and docs/*.md runs here, so an example can never be wrong.

One test per block (its id is ``FILE:LINE``). The blocks of a page run in order, in one
temporary folder and one Python namespace (the page reads top to bottom); asking for a
later block runs the earlier ones first. Conventions for writers: tests/docblocks.py and
docs/architecture.md ("Docs that run"). What runs how:

- ``python``: executed (top-level ``await`` allowed); ``file=X.py`` writes and imports it.
  ``App("postgresql://...")`` is redirected to the test server, one random schema per
  page; ``App("sqlite:///jobs.db")`` lands in the page's folder.
- ``sh``/``bash``/``console``: each command. ``shiftwork ...`` runs in this process against
  the page's app; ``worker``, ``dashboard`` and ``top`` (without ``--once``) run as real
  processes on free ports, are checked to start, and are stopped at the end of the block.
  ``python manage.py ...`` runs the Django project the page wrote (``manage.py shiftwork
  worker`` as a real process, like ``shiftwork worker``).
  ``./dev X``, ``pip install``, ``python -m venv`` and ``python -m benchmarks`` are checked
  (the subcommand, extra or options exist), not run. In ``console`` blocks the lines
  after a ``$ command`` are its expected output (``...`` and numbers match anything).
- ``yaml``/``json``/``toml``: parsed; alert rules may only name metrics shiftwork exports.
- ``sql``: run on the test server (autocommit, as psql runs a script), in the page's
  schema (first on the search path; ``shiftwork.``, the default schema, is read as the
  page's), so an earlier block
  must have migrated an ``App("postgresql://...")``. ``error=SQLSTATE``: the block must
  fail with that code.
- ``text``: diagrams and samples, not executable; ``nginx``: proxy configuration, not run.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from shiftwork import App
from shiftwork.cli import main as shiftwork_cli

from .conftest import PG_DSN, ROOT, require_pg
from .docblocks import Block, doc_pages, extract

BLOCKS = [b for page in doc_pages() for b in extract(page)]
SHELLS = {"sh", "bash", "console"}
PARSED = {"yaml", "json", "toml"}
#: A SQL block's names in the default schema, ``shiftwork.enqueue(...)``: the page's schema.
SQL_SCHEMA = re.compile(r"\bshiftwork\.(?=[a-z_])")
NOT_EXECUTABLE = {"text", "nginx"}  # diagrams, sample output, grammar; proxy config
LONG_RUNNING = {"worker": "worker.started", "dashboard": "shiftwork dashboard on http://",
                "top": "queues"}
TOKEN = "doc-test-token-0123456789"


@dataclass
class Page:
    """One page's run: its folder, namespace, apps and the blocks done so far."""

    dir: Path
    schema: str = field(default_factory=lambda: f"doc_{uuid.uuid4().hex[:12]}")
    ns: dict[str, Any] = field(default_factory=dict)
    done: int = 0
    failed: str | None = None
    apps: list[App] = field(default_factory=list)
    modules: set[str] = field(default_factory=set)
    last_rc: int = 0
    used_pg: bool = False

    @property
    def pg_dsn(self) -> str:
        """The test server, with the page's schema first on the search path."""
        return f"{PG_DSN}?options=-csearch_path%3D{self.schema}"


class Pages:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pages: dict[Path, Page] = {}

    def get(self, path: Path) -> Page:
        if path not in self.pages:
            folder = self.root / path.relative_to(ROOT).as_posix().replace("/", "_")
            folder.mkdir()
            self.pages[path] = Page(folder)
        return self.pages[path]

    def close(self) -> None:
        for page in self.pages.values():
            for app in page.apps:
                app.close()
            for name in page.modules:
                sys.modules.pop(name, None)
            if page.used_pg:
                with psycopg.connect(PG_DSN, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{page.schema}" CASCADE')


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    registry = Pages(tmp_path_factory.mktemp("docs"))
    yield registry
    registry.close()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_block(block: Block, pages: Pages) -> None:
    page = pages.get(block.path)
    blocks = [b for b in BLOCKS if b.path == block.path]
    index = blocks.index(block)
    while page.done < index:  # the page's earlier blocks, when run alone (-k)
        earlier = blocks[page.done]
        page.done += 1
        try:
            run_block(page, earlier)
        except pytest.skip.Exception:
            pass
        except (Exception, pytest.fail.Exception) as exc:
            page.failed = f"{earlier.id}: {exc}"
    if page.failed:
        pytest.fail(f"an earlier block of this page failed ({page.failed})")
    page.done = index + 1
    try:
        run_block(page, block)
    except BaseException as exc:
        if not isinstance(exc, pytest.skip.Exception):
            page.failed = f"{block.id}: {type(exc).__name__}"
        raise


def test_every_skip_names_a_reason() -> None:
    not_run = [b for b in BLOCKS if "not run" in b.options]
    for b in not_run:
        assert len(b.options["not run"]) >= 10, f"{b.id}: say why it is not run"
    assert len(not_run) <= len(BLOCKS) // 10, "not run is for exceptions: make examples run"


def test_new_pages_are_picked_up(tmp_path: Path) -> None:
    assert {p.name for p in doc_pages()} >= {"README.md", "long-jobs.md", "workflows.md"}
    page = tmp_path / "x.md"
    page.write_text("text\n\n<!-- doc-test: file=a.py -->\n```python\nx = 1\n```\n\n"
                    "```\nno lang\n```\n")
    found = extract(page)
    assert [(b.line, b.lang, b.options) for b in found] == [(4, "python", {"file": "a.py"}),
                                                             (8, "", {})]
    with pytest.raises(pytest.fail.Exception, match="no rule covers"):
        run_block(Page(tmp_path), found[1])


def test_sql_blocks_run_in_the_page_schema(tmp_path: Path) -> None:
    require_pg()
    page = tmp_path / "x.md"
    page.write_text("```sql\nCREATE SCHEMA shiftwork_doc_probe;\n"
                    "CREATE TABLE shiftwork.t (x int);\n```\n\n"
                    "<!-- doc-test: error=22012 -->\n```sql\nSELECT 1 / 0;\n```\n\n"
                    "```sql\nSELECT 1 / 0;\n```\n\n"
                    "<!-- doc-test: error=22012 -->\n```sql\nSELECT 1;\n```\n")
    run = Page(tmp_path)
    try:
        first, *later = extract(page)
        first.code = first.code.replace("CREATE SCHEMA shiftwork_doc_probe;",
                                        f'CREATE SCHEMA "{run.schema}";')
        run_sql(run, first)  # shiftwork.t: the page's schema
        with psycopg.connect(PG_DSN) as c:
            assert c.execute("SELECT to_regclass(%s)", (f'"{run.schema}".t',)).fetchone() \
                != (None,)
        run_sql(run, later[0])
        with pytest.raises(pytest.fail.Exception, match="SQLSTATE 22012"):
            run_sql(run, later[1])
        with pytest.raises(pytest.fail.Exception, match="should fail with SQLSTATE 22012"):
            run_sql(run, later[2])
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{run.schema}" CASCADE')


# -- dispatch -----------------------------------------------------------------------------

def run_block(page: Page, block: Block) -> None:
    if "not run" in block.options:
        pytest.skip(f"not run: {block.options['not run']}")
    # isolated: the block (and its prelude) see the page's names but leave them unchanged
    ns = dict(page.ns) if "isolated" in block.options else page.ns
    with inside(page):
        if block.prelude:
            _exec(block.prelude, ns, block.path, block.line - block.prelude.count("\n") - 1)
        if "file" in block.options:
            write_file(page, block)
        elif block.lang == "python":
            _exec(block.code, ns, block.path, block.line)
        elif block.lang in SHELLS:
            run_commands(page, block)
        elif block.lang in PARSED:
            check_parsed(block)
        elif block.lang == "sql":
            run_sql(page, block)
        elif block.lang not in NOT_EXECUTABLE:
            pytest.fail(f"{block.id}: no rule covers a block in language {block.lang or '(none)'!r}"
                        f": tag it python, sh, console, sql, yaml, json, toml or text")


@contextmanager
def inside(page: Page) -> Iterator[None]:
    """The page's folder as cwd and import root; Postgres DSNs go to the test server."""
    original_init = App.__init__

    def init(app: App, dsn: str, *args: Any, **kwargs: Any) -> None:
        if dsn.startswith(("postgresql://", "postgres://")):
            require_pg()
            page.used_pg = True
            dsn, kwargs["schema"] = PG_DSN, page.schema
        original_init(app, dsn, *args, **kwargs)
        page.apps.append(app)

    cwd, env = os.getcwd(), dict(os.environ)
    for var in ("SHIFTWORK_APP", "SHIFTWORK_DSN", "SHIFTWORK_SCHEMA"):
        os.environ.pop(var, None)
    os.environ.update(SHIFTWORK_TOKEN=TOKEN, COLUMNS="200")
    os.chdir(page.dir)
    sys.path.insert(0, str(page.dir))
    page.ns.setdefault("__name__", "__doc__")
    page.ns.setdefault("DOC_PG_DSN", page.pg_dsn)
    App.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        App.__init__ = original_init  # type: ignore[method-assign]
        sys.path.remove(str(page.dir))
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)


def _exec(code: str, ns: dict[str, Any], path: Path, line: int) -> None:
    # Leading newlines make tracebacks point at the Markdown file's own line numbers.
    compiled = compile("\n" * line + code, str(path), "exec",
                       flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, ns)  # the docs' own examples
    if inspect.iscoroutine(result):
        asyncio.run(result)


def write_file(page: Page, block: Block) -> None:
    rel = block.options["file"]
    target = page.dir / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    for parent in target.relative_to(page.dir).parents:
        if str(parent) != "." and rel.endswith(".py"):
            (page.dir / parent / "__init__.py").touch()
    if "append" in block.options:  # a page that grows one file section by section
        target.write_text(target.read_text() + "\n\n" + block.code)
    else:
        target.write_text(block.code)
    if rel.endswith(".py"):
        name = rel[:-3].replace("/", ".")
        top = name.split(".")[0]  # another page's module or package of the same name
        for mod in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
            del sys.modules[mod]
        page.modules.add(name)
        module = importlib.import_module(name)
        page.ns.update({k: v for k, v in vars(module).items() if not k.startswith("__")})


# -- commands -----------------------------------------------------------------------------

def commands(block: Block) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)``; in sh blocks every line is a command."""
    out: list[tuple[str, list[str]]] = []
    lines = block.code.splitlines()
    if block.lang == "console":
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif line.strip() and out:
                out[-1][1].append(line)
        return out
    joined = "\n".join(lines).replace("\\\n", " ")
    return [(line, []) for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def run_commands(page: Page, block: Block) -> None:
    procs: list[tuple[str, subprocess.Popen[bytes], list[bytes]]] = []
    expect_rc = int(block.options.get("exit", "0"))
    try:
        for command, expected in commands(block):
            for part in command.split(" && "):
                output = run_one(page, block, part.strip(), procs, expect_rc)
            for line in expected:
                assert _matches(line, output), (
                    f"{block.id}: `{command}` printed\n{output}\nwhich lacks:\n{line}")
    finally:
        for what, proc, buf in procs:
            stop(proc)
            assert proc.returncode in (0, -signal.SIGINT, -signal.SIGTERM), (
                f"{block.id}: `{what}` ended with {proc.returncode}:\n{b''.join(buf).decode()}")


def _matches(expected: str, output: str) -> bool:
    flat = " ".join(output.split())
    parts = [re.sub(r"\\d\+", r"\\d+", re.sub(r"\d+", r"\\d+", re.escape(p)))
             for p in " ".join(expected.split()).split("...")]
    return re.search(".*".join(parts), flat) is not None


def run_one(page: Page, block: Block, command: str,
            procs: list[tuple[str, subprocess.Popen[bytes], list[bytes]]],
            expect_rc: int) -> str:
    argv = shlex.split(os.path.expandvars(command), comments=True)
    while argv and re.match(r"^[A-Z_]+=", argv[0]):  # VAR=value prefixes
        argv.pop(0)
    if not argv:
        return ""
    head = argv[0]
    if head == "shiftwork":
        if argv[1] in LONG_RUNNING and not (argv[1] == "top" and "--once" in argv):
            procs.append((command, *start_long_running(page, block, argv)))
            return ""
        result = CliRunner().invoke(shiftwork_cli, argv[1:], catch_exceptions=False)
        page.last_rc = result.exit_code
        output = result.output + (result.stderr if result.stderr_bytes is not None else "")
        assert result.exit_code == expect_rc, (
            f"{block.id}: `{command}` exited {result.exit_code} (expected {expect_rc}):\n"
            f"{output}")
        return output
    if head == "echo" and argv[1:] == ["$?"]:
        return str(page.last_rc)
    if head == "./dev":
        assert f"\n    {argv[1]})" in (ROOT / "dev").read_text(), f"./dev has no {argv[1]!r}"
        return ""
    if head.endswith("pip") and argv[1] == "install":
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"]
        for arg in argv[2:]:
            for extra in re.findall(r"\[([\w,]+)\]", arg):
                assert set(extra.split(",")) <= set(extras), f"no extra {extra!r}"
        return ""
    if head == "python" and argv[1:2] == ["manage.py"]:  # a Django project the page wrote
        if argv[2:3] == ["shiftwork"] and len(argv) > 3 and argv[3] in LONG_RUNNING:
            procs.append((command, *start_long_running(
                page, block, argv[2:], launcher=[sys.executable, "manage.py", "shiftwork"])))
            return ""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(page.dir), str(ROOT / "src")])}
        run = subprocess.run([sys.executable, *argv[1:]], cwd=page.dir, env=env,
                             capture_output=True, text=True, timeout=120)
        page.last_rc = run.returncode
        assert run.returncode == expect_rc, (
            f"{block.id}: `{command}` exited {run.returncode} (expected {expect_rc}):\n"
            f"{run.stdout}{run.stderr}")
        return run.stdout + run.stderr
    if head == "python" and argv[1:3] == ["-m", "venv"]:
        return ""
    if head == "python" and argv[1:3] == ["-m", "benchmarks"]:
        from benchmarks.cli import main as bench

        # The group's own parse leaves a subcommand's options unread: parse them too.
        sub = bench.commands.get(argv[3]) if len(argv) > 3 else None
        assert sub is not None, f"{block.id}: `{command}`: no such benchmarks command"
        sub.make_context(argv[3], argv[4:], resilient_parsing=False)
        return ""
    pytest.fail(f"{block.id}: no rule runs `{command}` (see tests/test_docs.py)")


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def start_long_running(page: Page, block: Block, argv: list[str],
                       launcher: list[str] | None = None
                       ) -> tuple[subprocess.Popen[bytes], list[bytes]]:
    """Start it as a real process (on free ports) and wait until it says it started;
    ``launcher``: how to start ``shiftwork`` (``python manage.py shiftwork`` in Django)."""
    args = list(argv[1:])
    for flag in ("--port", "--metrics-port"):
        if flag in args:
            args[args.index(flag) + 1] = _free_port()
    if args[0] == "dashboard" and "--port" not in args:
        args += ["--port", _free_port()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(page.dir), str(ROOT / "src")])}
    launcher = launcher or [sys.executable, "-m", "shiftwork.cli"]
    proc = subprocess.Popen([*launcher, *args], cwd=page.dir,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    buf: list[bytes] = []
    assert proc.stdout is not None
    threading.Thread(target=lambda: buf.extend(iter(proc.stdout.readline, b"")),  # type: ignore[union-attr]
                     daemon=True).start()
    marker = LONG_RUNNING[args[0]].encode()
    deadline = time.monotonic() + 30
    while marker not in b"".join(buf):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            pytest.fail(f"{block.id}: `shiftwork {' '.join(args)}` did not start:\n"
                        f"{b''.join(buf).decode()}")
        time.sleep(0.05)
    return proc, buf


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- sql ----------------------------------------------------------------------------------

def run_sql(page: Page, block: Block) -> None:
    """The block as one script on the test server, in the page's schema."""
    require_pg()
    page.used_pg = True
    expected = block.options.get("error")
    script = SQL_SCHEMA.sub(f'"{page.schema}".', block.code)
    try:
        with psycopg.connect(page.pg_dsn, autocommit=True) as conn:  # its own tables too
            conn.execute(script.encode())  # bytes: no placeholders, % is plain text
    except psycopg.Error as exc:
        if expected and exc.sqlstate == expected:
            return
        pytest.fail(f"{block.id}: SQLSTATE {exc.sqlstate}: {exc}")
    if expected:
        pytest.fail(f"{block.id}: ran, where it should fail with SQLSTATE {expected}")


# -- configuration ------------------------------------------------------------------------

def exported_metrics() -> set[str]:
    from shiftwork.observe.metric_defs import ALL_METRICS

    names = {d.exposed for d in ALL_METRICS}
    return names | {d.name + s for d in ALL_METRICS if d.kind == "histogram"
                    for s in ("_bucket", "_sum", "_count")}


def check_parsed(block: Block) -> None:
    if block.lang == "json":
        for line in block.code.splitlines():
            if line.strip():
                json.loads(line)
    elif block.lang == "toml":
        tomllib.loads(block.code)
    else:
        import yaml

        doc = yaml.safe_load(block.code)
        exprs = [r["expr"] for g in (doc or {}).get("groups", []) for r in g["rules"]]
        known = exported_metrics()
        for expr in exprs:
            for name in re.findall(r"\bshiftwork_[a-z_]+", expr):
                assert name in known, f"{block.id}: alert rule names unknown metric {name}"
