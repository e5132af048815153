"""Issue 27 (first contact, second pass): what a newcomer meets in the first hour, through
the real commands (subprocesses on real SQLite files, the real Postgres server), the
examples through their documented commands in a temporary folder. Item 7 (the login page)
is pinned in the web tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shiftwork(cwd: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess, in an 80-column terminal."""
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "80",
                               "PYTHONPATH": f"{cwd}{os.pathsep}{ROOT / 'src'}",
                               **(env or {})})


# -- 1. an install line that works today -----------------------------------------------

def test_install_by_name_is_only_given_as_the_line_for_after_a_release() -> None:
    """Item 1: `pip install shiftwork` failed ("No matching distribution"): the package is
    not published. Each install by name must be said to be for after the first release;
    the lines that work today install the checkout (the built wheel and sdist are installed
    by tests/test_packaging.py)."""
    by_name = re.compile(r"pip install (?:-\S+ +)*'?shiftwork(?=[\[' `\n])")
    for page in DOCS:
        text = page.read_text()
        for match in by_name.finditer(text):
            around = text[max(0, match.start() - 200):match.end() + 60]
            assert "first release" in around, (
                f"{page.name}: {text[match.start():match.end() + 30]!r} is not said to be "
                "for after a release")
    getting_started = (ROOT / "docs" / "getting-started.md").read_text()
    assert "pip install '.[postgres]'" in getting_started
    assert "dist/shiftwork-0.1.0-py3-none-any.whl[postgres,web]" in getting_started
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version and f"shiftwork-{version[1]}-py3" in getting_started


# -- 2. examples that can be migrated ---------------------------------------------------

def _doc_modules(page: Path) -> dict[str, str]:
    """The modules a page writes (``doc-test: file=X.py``, appends joined), as written."""
    from .docblocks import extract

    files: dict[str, str] = {}
    for block in extract(page):
        name = block.options.get("file")
        if name and name.endswith(".py"):
            files[name] = files.get(name, "") + block.code if "append" in block.options \
                else block.code
    return files


PAGES_WITH_MODULES = [p for p in DOCS if _doc_modules(p)]


@pytest.mark.parametrize("page", PAGES_WITH_MODULES, ids=lambda p: p.name)
def test_the_docs_example_modules_import_without_a_database(page: Path,
                                                            tmp_path: Path) -> None:
    """Item 2: docs/flow-control.md's `myapp.py` enqueued at module level, so every
    `shiftwork queues --app myapp:app` enqueued two more jobs (and before `migrate`, the
    import failed). Each module the docs have you write imports in a folder with no
    database, and creates none."""
    files = _doc_modules(page)
    for name, code in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(code)
    settings = next((n[:-3].replace("/", ".") for n in files if n.endswith("settings.py")),
                    None)
    # A Django project's modules import once Django is set up, as manage.py would.
    setup = f"import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = '{settings}'; " \
        "django.setup(); " if settings else ""
    for name in files:
        module = name[:-3].replace("/", ".")
        run = subprocess.run([sys.executable, "-c", f"{setup}import {module}"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}"
                                  f"{ROOT / 'src'}"})
        assert run.returncode == 0, f"{page.name}: import {module}:\n{run.stderr}"
    assert not list(tmp_path.rglob("*.db")), f"{page.name}: importing created a database"


def documented_commands(example: Path) -> list[str]:
    """The commands an example's docstring tells you to run, in order (comments cut)."""
    import ast

    doc = ast.get_docstring(ast.parse(example.read_text())) or ""
    return [line.split("  #")[0].strip() for line in doc.splitlines()
            if line.startswith("    ") and line.split()[0] in ("shiftwork", "python")]


class Folder:
    """A temporary folder holding a copy of examples/, where the documented commands run
    as the newcomer types them (``shiftwork`` and ``python`` the real programs)."""

    def __init__(self, root: Path, *examples: str) -> None:
        self.root = root
        (root / "examples").mkdir()
        for name in examples:
            (root / "examples" / name).write_text((ROOT / "examples" / name).read_text())
        self.workers: list[subprocess.Popen[str]] = []

    def run(self, command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        argv = command.split()
        if argv[0] == "shiftwork" and argv[1] == "worker":
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "shiftwork.cli", *argv[1:]], cwd=self.root,
                text=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": f"{self.root}{os.pathsep}{ROOT / 'src'}"}))
            return subprocess.CompletedProcess(argv, 0, "", "")
        if argv[0] == "shiftwork":
            return shiftwork(self.root, *argv[1:], timeout=timeout)
        return subprocess.run([sys.executable, *argv[1:]], cwd=self.root, text=True,
                              capture_output=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src")})

    def stop(self) -> None:
        for worker in self.workers:
            worker.terminate()
            worker.wait(30)


def test_the_backfill_example_runs_from_its_documented_commands(tmp_path: Path) -> None:
    """Item 2: `shiftwork migrate --app examples.backfill:app` failed (the module read the
    store at import time) and the docstring never said to migrate. Its commands, in order,
    in a fresh folder: migrate, seed, a worker, start, follow to the end, pause, resume."""
    folder = Folder(tmp_path, "backfill.py")
    commands = documented_commands(ROOT / "examples" / "backfill.py")
    assert commands[0] == "shiftwork migrate --app examples.backfill:app"
    job_id = ""
    try:
        for command in commands:
            if " seed " in command:
                command = re.sub(r"seed \d+", "seed 5000", command)  # quick, same path
            command = command.replace("ID", job_id)
            out = folder.run(command)
            assert out.returncode == 0, f"{command}:\n{out.stdout}{out.stderr}"
            if command.endswith(" start") or " start " in command:
                job_id = re.search(r"job (\d+) enqueued", out.stdout)[1]  # type: ignore[index]
    finally:
        folder.stop()
    assert job_id, commands
    shown = shiftwork(tmp_path, "jobs", "show", job_id, "--app", "examples.backfill:app")
    assert "succeeded" in shown.stdout, shown.stdout + shown.stderr


def test_the_invoice_example_runs_from_its_documented_commands(tmp_path: Path) -> None:
    """Item 2: `shiftwork migrate --app examples.invoice:app` failed the same way."""
    folder = Folder(tmp_path, "invoice.py")
    commands = documented_commands(ROOT / "examples" / "invoice.py")
    assert commands[0] == "shiftwork migrate --app examples.invoice:app"
    try:
        outputs = [folder.run(command) for command in commands]
        for command, out in zip(commands, outputs, strict=True):
            assert out.returncode == 0, f"{command}:\n{out.stdout}{out.stderr}"
        job_id = re.search(r"job (\d+) enqueued", outputs[-1].stdout)[1]  # type: ignore[index]
        follow = shiftwork(tmp_path, "jobs", "follow", job_id, "--app",
                           "examples.invoice:app")
        assert follow.returncode == 0, follow.stdout + follow.stderr
    finally:
        folder.stop()


def test_migrate_says_when_the_apps_import_used_the_database(tmp_path: Path) -> None:
    """Item 2: an App module that enqueues at import made `shiftwork migrate` fail with
    "SQLite file ... does not exist: run `shiftwork migrate`", the very command that
    failed. It now says what happened and gives a command that works."""
    (tmp_path / "eager.py").write_text(
        "from shiftwork import App\n\napp = App('sqlite:///jobs.db')\n\n\n"
        "@app.task(queue='emails')\ndef send(user_id: int) -> None: ...\n\n\n"
        "send.enqueue(1)  # at import: the mistake\n")
    out = shiftwork(tmp_path, "migrate", "--app", "eager:app")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "importing eager used the database before it was migrated" in out.stderr
    assert f"SQLite file {tmp_path / 'jobs.db'} does not exist" in out.stderr
    assert "do not touch the database at import time" in out.stderr
    suggested = re.search(r"without importing the module: (shiftwork migrate \S+ \S+)",
                          out.stderr)
    assert suggested, out.stderr
    again = shiftwork(tmp_path, *suggested[1].split()[1:])
    assert again.returncode == 0 and "applied migrations" in again.stdout, again.stderr
    # Migrated, the same import works (and enqueues, as that module asks).
    assert shiftwork(tmp_path, "queues", "--app", "eager:app").returncode == 0


# -- 3. the Django example ----------------------------------------------------------------

DJANGO = ROOT / "examples" / "django_project"


def readme_commands(readme: Path) -> list[str]:
    """The indented commands of a README, comments cut (``cd`` lines left out: they run
    in the copy's folder)."""
    return [line.split("  #")[0].strip() for line in readme.read_text().splitlines()
            if line.startswith("    ") and line.split()[0] in ("python", "uvicorn")]


@pytest.fixture
def django_copy(tmp_path: Path) -> Path:
    pytest.importorskip("django")
    import shutil

    copy = tmp_path / "django_project"
    shutil.copytree(DJANGO, copy, ignore=shutil.ignore_patterns(
        "__pycache__", "*.sqlite3*", "static"))
    return copy


def _manage_env(copy: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOP_")}
    return {**env, "DJANGO_SETTINGS_MODULE": "shop_project.settings",
            "PYTHONPATH": str(ROOT / "src"), "DJANGO_SUPERUSER_USERNAME": "ada",
            "DJANGO_SUPERUSER_PASSWORD": "a long example password",
            "DJANGO_SUPERUSER_EMAIL": "ada@example.com"}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_django_example_runs_from_its_readme(django_copy: Path) -> None:
    """Item 3: the README had no `createsuperuser` (no one could log in), and under uvicorn
    the admin came unstyled (no STATIC_URL: its CSS was a 404). The README's commands in a
    copy of the project: migrate, createsuperuser, the worker, uvicorn; the superuser logs
    in at /admin/, whose stylesheet is served, then sees /admin/jobs/. (`manage.py test
    shop` runs in tests/test_django_example.py.)"""
    import httpx

    from .conftest import wait_for

    commands = readme_commands(django_copy / "README.md")
    assert [c.split()[:3] for c in commands[:2]] == [["python", "manage.py", "migrate"],
                                                     ["python", "manage.py",
                                                      "createsuperuser"]]
    env = _manage_env(django_copy)
    procs: list[subprocess.Popen[str]] = []
    port = _free_port()
    try:
        for command in commands:
            argv = command.split()
            if argv[:3] == ["python", "manage.py", "test"]:
                continue  # its own suite: tests/test_django_example.py
            if argv[0] == "uvicorn":
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "uvicorn", *argv[1:], "--port", str(port)],
                    cwd=django_copy, env=env, text=True, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL))
                continue
            if argv[2:4] == ["shiftwork", "worker"]:
                procs.append(subprocess.Popen([sys.executable, *argv[1:]], cwd=django_copy,
                                              env=env, text=True, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
                continue
            if argv[2] == "createsuperuser":
                argv.append("--noinput")  # the same command, its answers in the env
            run = subprocess.run([sys.executable, *argv[1:]], cwd=django_copy, env=env,
                                 capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, f"{command}:\n{run.stdout}{run.stderr}"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as web:
            def up() -> bool:
                try:
                    return web.get("/admin/login/").status_code == 200
                except httpx.TransportError:
                    return False

            wait_for(up, timeout=60, what="uvicorn serving the example")
            login = web.get("/admin/login/")
            css = re.search(r'href="([^"]+/base\.css)"', login.text)
            assert css, login.text[:500]
            sheet = web.get(css[1])
            assert sheet.status_code == 200 and "text/css" in sheet.headers["content-type"]
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
            assert token
            done = web.post("/admin/login/?next=/admin/",
                            data={"username": "ada", "password": "a long example password",
                                  "csrfmiddlewaretoken": token[1], "next": "/admin/"},
                            headers={"Referer": f"http://127.0.0.1:{port}/admin/login/"})
            assert done.status_code == 302, done.text[:500]
            assert web.get("/admin/jobs/").status_code == 200
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)


def test_manage_py_migrate_upgrades_shiftworks_tables(django_copy: Path) -> None:
    """Item 3: the README said `manage.py migrate` creates *and upgrades* shiftwork's
    tables, but its one RunPython migration runs once: a database that an older shiftwork
    made (Django's record of that migration there, the schema a version behind) stayed
    behind, and the App then refused it. Every `manage.py migrate` now upgrades it."""
    env = _manage_env(django_copy)

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        run = subprocess.run([sys.executable, "manage.py", *args], cwd=django_copy,
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        return run

    # What the older release's first migrate left: the tables it made (every schema
    # version but this release's last) ...
    older = ("from shiftwork.store.sqlite.store import SQLiteStore\n"
             f"s = SQLiteStore({str(django_copy / 'shop.sqlite3')!r})\n"
             "s._migrations = s._migrations[:-1]\nprint(s.migrate()[-1])\n")
    behind = subprocess.run([sys.executable, "-c", older], env=env, capture_output=True,
                            text=True, timeout=60, check=True).stdout.strip()
    # ... and Django's record that shiftwork's Django migration ran.
    manage("shell", "-c", "from django.db import connection\n"
           "from django.db.migrations.recorder import MigrationRecorder\n"
           "MigrationRecorder(connection).record_applied('shiftwork', "
           "'0001_shiftwork_tables')\n")
    refused = subprocess.run([sys.executable, "manage.py", "shiftwork", "queues"],
                             cwd=django_copy, env=env, capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 2 and f"is at migration {behind}" in refused.stderr
    # The upgrade: the same command as always.
    manage("migrate", "--noinput")
    assert manage("shiftwork", "queues").returncode == 0


# -- 4. words that disagree ---------------------------------------------------------------

SHOP = '''
from shiftwork import App, Workflow

app = App("sqlite:///jobs.db")


@app.task(queue="emails")
def send(user_id: int) -> None: ...


@app.workflow(queue="flows", max_attempts=5)
def onboarding(wf: Workflow, user_id: int) -> str:
    wf.step("welcome", lambda: "sent")
    return f"paid {wf.wait_for_event('paid')}"
'''


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    (tmp_path / "shopapp.py").write_text(SHOP)
    assert shiftwork(tmp_path, "migrate", "--app", "shopapp:app").returncode == 0
    return tmp_path


def test_jobs_list_takes_waiting_the_word_queues_counts_by(shop: Path) -> None:
    """Item 4: `queues` and `top` head the due jobs "waiting", the state is `available`,
    and `jobs list --state waiting` was refused. Both words are taken now."""
    assert shiftwork(shop, "enqueue", "shopapp.send", "--args", "[1]",
                     "--app", "shopapp:app").returncode == 0
    queues = shiftwork(shop, "queues", "--app", "shopapp:app")
    assert re.search(r"^ *queue +waiting ", queues.stdout, re.MULTILINE), queues.stdout
    for word in ("waiting", "available"):
        listed = shiftwork(shop, "jobs", "list", "--state", word, "--app", "shopapp:app")
        assert listed.returncode == 0, listed.stderr
        assert "shopapp.send" in listed.stdout and "available" in listed.stdout, listed.stdout
    helped = shiftwork(shop, "jobs", "list", "--help")
    assert "waiting (as queues and top count them) is available" in " ".join(
        helped.stdout.split())


def test_enqueue_help_lists_only_what_it_takes_and_which_priority_runs_first(
        shop: Path) -> None:
    """Item 4: `enqueue --help` listed --dsn/--schema, which enqueue then refuses, and
    --priority had no help (the direction was only in architecture.md)."""
    for command in ("enqueue", "worker"):
        helped = shiftwork(shop, command, "--help")
        assert "--app" in helped.stdout
        assert "--dsn" not in helped.stdout and "--schema" not in helped.stdout, helped.stdout
    helped = " ".join(shiftwork(shop, "enqueue", "--help").stdout.split())
    assert "--priority INTEGER Higher runs first among the due jobs of its queue" in helped
    # Typed anyway, it is refused with the reason.
    refused = shiftwork(shop, "enqueue", "shopapp.send", "--dsn", "sqlite:///jobs.db")
    assert refused.returncode == 2 and "give --app MODULE:ATTR" in refused.stderr


def test_health_after_the_workers_stopped_says_when_one_was_last_seen(shop: Path) -> None:
    """Item 4: after workers ran and stopped (a stopped worker removes its row), `health`
    said "none has ever registered"."""
    from .conftest import wait_for

    assert shiftwork(shop, "enqueue", "shopapp.send", "--args", "[1]",
                     "--app", "shopapp:app").returncode == 0
    worker = subprocess.Popen([sys.executable, "-m", "shiftwork.cli", "worker", "shopapp:app",
                               "-q", "emails=1"], cwd=shop, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": f"{shop}{os.pathsep}"
                                   f"{ROOT / 'src'}"})
    try:
        wait_for(lambda: "succeeded" in shiftwork(
            shop, "jobs", "list", "--app", "shopapp:app").stdout, timeout=60,
            what="the worker running the job")
    finally:
        worker.terminate()
        assert worker.wait(30) == 0
    health = shiftwork(shop, "health", "--app", "shopapp:app")
    assert health.returncode == 1
    assert "none has ever registered" not in health.stdout
    assert re.search(r"no worker is alive \(last seen [\d.]+[smh] ago, finishing jobs; a "
                     r"worker that stops removes its row\)", health.stdout), health.stdout


def test_a_cancelled_workflow_reads_as_what_happened(shop: Path) -> None:
    """Item 4: `workflows show` printed `attempt 0/5 (runs 4)`, a `next run` for a finished
    workflow, `cause: cancelled (cancelled)`, a wait step still "waiting" after the
    cancel; a duplicate `workflows signal --key` said "event 1 sent" twice."""
    driver = (
        "import sys\nfrom shiftwork.testing import drain\nfrom shopapp import app, onboarding\n"
        "if sys.argv[1] == 'start':\n    print(onboarding.enqueue(7).id)\n"
        "drain(app)\n")
    env = {**os.environ, "PYTHONPATH": f"{shop}{os.pathsep}{ROOT / 'src'}"}

    def drive(what: str) -> str:
        return subprocess.run([sys.executable, "-c", driver, what], cwd=shop, env=env,
                              capture_output=True, text=True, check=True,
                              timeout=60).stdout.strip()

    wf = drive("start")
    shown = shiftwork(shop, "workflows", "show", wf, "--app", "shopapp:app").stdout
    assert "attempt 0/5 (1 run, 1 not counted)" in " ".join(shown.split())
    assert "next run" in shown  # waiting: it has one
    first = shiftwork(shop, "workflows", "signal", wf, "paid", "--key", "inv-1",
                      "--app", "shopapp:app")
    again = shiftwork(shop, "workflows", "signal", wf, "paid", "--key", "inv-1",
                      "--app", "shopapp:app")
    assert re.fullmatch(r"event \d+ sent to workflow \d+\n", first.stdout), first.stdout
    assert "already sent" in again.stdout and "deduplicated, not delivered again" in " ".join(
        again.stdout.split()), again.stdout
    assert shiftwork(shop, "workflows", "cancel", wf, "--app", "shopapp:app").returncode == 0
    drive("run")
    shown = shiftwork(shop, "workflows", "show", wf, "--app", "shopapp:app").stdout
    flat = " ".join(shown.split())
    assert "status=cancelled" in flat and "next run" not in flat, shown
    assert "cause: cancelled" in flat and "(cancelled) (cancelled)" not in flat
    assert "cancelled (cancelled)" not in flat
    wait_row = next(line for line in shown.splitlines() if " wait " in line)
    assert "waiting" not in wait_row and "cancelled" in wait_row, shown
    job = " ".join(shiftwork(shop, "jobs", "show", wf, "--app", "shopapp:app").stdout.split())
    assert re.search(r"attempt \d+/\d+ \(\d+ runs?, \d+ not counted\)", job), job
    assert re.search(r"\brun \d+ cancelled:", job), job


# -- 5. typos that act ----------------------------------------------------------------------

def test_pausing_an_unknown_queue_is_refused_unless_forced(shop: Path) -> None:
    """Item 5: `queues pause emials` warned "did you mean emails?" and paused anyway,
    making a phantom queue row. Refused (exit 1, nothing paused) unless --force."""
    out = shiftwork(shop, "queues", "pause", "emials", "--app", "shopapp:app")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "did you mean emails?" in out.stderr and "nothing paused" in out.stderr
    assert "paused" not in out.stdout
    listed = shiftwork(shop, "queues", "--app", "shopapp:app")
    assert "emials" not in listed.stdout, listed.stdout
    forced = shiftwork(shop, "queues", "pause", "emials", "--force", "--app", "shopapp:app")
    assert forced.returncode == 0 and "queue emials: paused" in forced.stdout
    assert "is not known" in forced.stderr
    # A known queue needs no --force, and neither does resuming what was paused.
    assert shiftwork(shop, "queues", "pause", "emails", "--app", "shopapp:app").returncode == 0
    assert shiftwork(shop, "queues", "resume", "emials", "--app", "shopapp:app").returncode == 0
    refused = shiftwork(shop, "queues", "resume", "emails-x", "--app", "shopapp:app")
    assert refused.returncode == 1 and "nothing resumed" in refused.stderr


def test_a_misspelt_app_attribute_names_the_apps_in_the_module(shop: Path) -> None:
    """Item 5: `--app myapp:ap` said "myapp.ap is not a shiftwork App (got NoneType)"."""
    out = shiftwork(shop, "queues", "--app", "shopapp:ap")
    assert out.returncode == 2
    assert "module shopapp has no attribute 'ap'" in out.stderr, out.stderr
    assert "(Apps in it: app)" in out.stderr and "NoneType" not in out.stderr


def test_jobs_list_of_a_bare_function_name_suggests_the_task_name(shop: Path) -> None:
    """Item 5: `jobs list --task charge_customer` gave an empty table and no "did you mean
    dashapp.charge_customer" (task names are module.function). `--task` now takes a part
    of the name (issue 29), so the bare function name finds the task; a typo gets the
    hint."""
    out = shiftwork(shop, "jobs", "list", "--task", "sned", "--app", "shopapp:app")
    assert out.returncode == 0
    assert "did you mean shopapp.send?" in out.stderr, out.stderr
    # Through --dsn (no code), the names of the jobs in the table are what is known.
    assert shiftwork(shop, "enqueue", "shopapp.send", "--args", "[1]",
                     "--app", "shopapp:app").returncode == 0
    out = shiftwork(shop, "jobs", "list", "--task", "shopapp.sned", "--dsn",
                    f"sqlite:///{shop / 'jobs.db'}")
    assert "did you mean shopapp.send?" in out.stderr, out.stderr
    # A known task with no jobs now: no hint, the empty table is the answer.
    out = shiftwork(shop, "jobs", "list", "--task", "shopapp.onboarding", "--app",
                    "shopapp:app")
    assert "no task is named" not in out.stderr


# -- 6. terminal output ----------------------------------------------------------------------

FAILING = '''
from shiftwork import App

app = App("sqlite:///jobs.db")


@app.task(queue="billing", max_attempts=1)
def charge_customer(customer_id: int) -> None:
    raise RuntimeError("card declined by the issuing bank: insufficient funds on the "
                       "account ending 4242, please try another card")


@app.task(queue="emails-transactional", max_attempts=1)
def send_the_monthly_statement_email(user_id: int) -> None:
    raise ValueError("smtp said no")


@app.periodic("0 3 * * *", name="nightly-report")
def nightly_report() -> None: ...


@app.periodic("*/5 * * * *")
def refresh_rates() -> None: ...
'''


@pytest.fixture
def failing(tmp_path: Path) -> Path:
    (tmp_path / "dashapp.py").write_text(FAILING)
    assert shiftwork(tmp_path, "migrate", "--app", "dashapp:app").returncode == 0
    return tmp_path


def test_jobs_list_in_80_columns_keeps_words_whole_and_marks_cut_errors(failing: Path
                                                                        ) -> None:
    """Item 6: `jobs list` in 80 columns wrapped task names mid-word and cut errors
    without an ellipsis."""
    for task in ("dashapp.charge_customer", "dashapp.send_the_monthly_statement_email"):
        assert shiftwork(failing, "enqueue", task, "--args", "[1]",
                         "--app", "dashapp:app").returncode == 0
    subprocess.run([sys.executable, "-c", "from shiftwork.testing import drain\n"
                    "from dashapp import app\ndrain(app)\n"], cwd=failing, check=True,
                   env={**os.environ, "PYTHONPATH": f"{failing}{os.pathsep}{ROOT / 'src'}"},
                   capture_output=True, timeout=60)
    out = shiftwork(failing, "jobs", "list", "--app", "dashapp:app").stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    # The task column, line by line (between the "task" and "queue" headings): each
    # piece ends at a word's end (after "." or "_", or the name's own end).
    table = out.split("last errors:")[0].splitlines()
    header = next(line for line in table if " task " in line and " queue " in line)
    left, right = header.index(" task ") + 1, header.index(" queue ") + 1
    pieces = [line[left:right].strip() for line in table[table.index(header) + 2:]]
    pieces = [p for p in pieces if p]
    names = ["dashapp.send_the_monthly_statement_email", "dashapp.charge_customer"]
    assert "".join(pieces) == "".join(names), (pieces, out)
    assert len(pieces) > 2, out  # 80 columns do break them
    for piece in pieces:
        assert piece[-1] in "._" or any(n.endswith(piece) for n in names), (piece, out)
    # The long error is cut with an ellipsis; the short one whole.
    assert "RuntimeError: card declined by the issuing bank" in out and "…" in out, out
    assert "ValueError: smtp said no\n" in out
    # A wide terminal has room for the error column.
    wide = shiftwork(failing, "jobs", "list", "--app", "dashapp:app",
                     env={"COLUMNS": "160"}).stdout
    assert "last error" in wide and "dashapp.charge_customer" in wide


def test_schedules_before_any_worker_names_the_ones_declared_in_code(failing: Path) -> None:
    """Item 6: `schedules` before any worker ran showed an empty table, no sign that two
    schedules are declared in code (a worker's start stores them)."""
    out = shiftwork(failing, "schedules", "--app", "dashapp:app")
    assert out.returncode == 0
    flat = " ".join(out.stdout.split())
    assert ("2 declared in code, not stored until a worker starts: dashapp.refresh_rates, "
            "nightly-report") in flat, out.stdout


def test_the_demo_prints_its_final_table_once_and_no_worker_lines(tmp_path: Path) -> None:
    """Item 6: the demo's worker banners interleaved with its live table, the final table
    printed twice, `--db` said "a fresh temp file" (it is always the same path) and the
    demo suggested `--token demo-token`, which the dashboard then warns about."""
    db = tmp_path / "demo.db"
    out = shiftwork(tmp_path, "demo", "--jobs", "20", "--db", str(db), timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("done in") == 1, out.stdout
    assert "live," not in out.stdout  # the live table does not stay behind
    assert "--token" not in out.stdout and "demo-token" not in out.stdout
    assert f"SHIFTWORK_DEMO_DB={db} shiftwork dashboard shiftwork.cli.demo_app:app" in out.stdout
    for worker_line in ("worker.started", "shiftwork.worker", "INFO", "WARNING"):
        assert worker_line not in out.stdout + out.stderr, out.stdout + out.stderr
    assert Path(f"{db}.workers.log").exists()
    helped = " ".join(shiftwork(tmp_path, "demo", "--help").stdout.split())
    assert "fresh temp file" not in helped and "the same file at every run" in helped
    assert "shiftwork-demo.db" in "".join(helped.split())  # (click wraps after its "-")


def test_a_wrong_postgres_port_prints_no_literal_tab(tmp_path: Path) -> None:
    """Item 6: libpq's hint line is tab-indented, and the error printed `\\tIs the server
    running ...` with a literal backslash-t."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = shiftwork(tmp_path, "queues", "--dsn", f"postgresql://postgres@127.0.0.1:{port}/test")
    assert out.returncode == 2
    assert "cannot connect to PostgreSQL" in out.stderr, out.stderr
    assert "\\t" not in out.stderr and "\t" not in out.stderr, out.stderr
    assert "\n  Is the server running" in out.stderr, out.stderr


# -- 8. a schedule declaration's mistake, at the user's line ---------------------------------

def test_a_bad_schedule_declaration_points_at_the_users_file_and_line(tmp_path: Path) -> None:
    """Item 8: `@app.periodic("0 25 * * *")` gave a good message, but its traceback
    pointed into the library, never at the user's file and line."""
    (tmp_path / "badsched.py").write_text(
        "from shiftwork import App\n\napp = App('sqlite:///jobs.db')\n\n\n"
        "@app.periodic('0 25 * * *')\ndef nightly() -> None: ...\n")
    where = f"{tmp_path / 'badsched.py'}, line 6"
    imported = subprocess.run([sys.executable, "-c", "import badsched"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}"
                                   f"{ROOT / 'src'}"})
    last = imported.stderr.strip().splitlines()[-1]
    assert "hour field: 25 is out of range 0-23" in last, imported.stderr
    assert last.endswith(f"(declared at {where})"), imported.stderr
    out = shiftwork(tmp_path, "queues", "--app", "badsched:app")
    assert out.returncode == 2
    assert f'File "{tmp_path / "badsched.py"}", line 6, in <module>' in out.stderr, out.stderr
    assert "@app.periodic('0 25 * * *')" in out.stderr
    assert "shiftwork/app.py" not in out.stderr and "importlib" not in out.stderr, out.stderr
    # A schedule declared with app.schedule(...) is placed the same way, and the refused
    # periodic left no task behind.
    (tmp_path / "badsched2.py").write_text(
        "from shiftwork import App\n\napp = App('sqlite:///jobs.db')\n\n\n"
        "@app.task()\ndef nightly() -> None: ...\n\n\n"
        "app.schedule('nightly', '0 3 * * *', nightly, tz='Mars/Olympus')\n")
    out = shiftwork(tmp_path, "queues", "--app", "badsched2:app")
    assert f"(declared at {tmp_path / 'badsched2.py'}, line 10)" in out.stderr, out.stderr


# -- 9. a worker that says what it does ---------------------------------------------------------

@pytest.mark.parametrize("flag", [[], ["--log-jobs"]], ids=["default", "log-jobs"])
def test_log_jobs_gives_a_line_per_job(shop: Path, flag: list[str]) -> None:
    """Item 9: at the default level a worker printed nothing per job, so a newcomer could
    not tell it was working; `--log-jobs` adds a line per job (and getting-started says
    so)."""
    from .conftest import wait_for

    assert shiftwork(shop, "enqueue", "shopapp.send", "--args", "[1]",
                     "--app", "shopapp:app").returncode == 0
    worker = subprocess.Popen([sys.executable, "-m", "shiftwork.cli", "worker", "shopapp:app",
                               "-q", "emails=1", *flag], cwd=shop, text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": f"{shop}{os.pathsep}"
                                   f"{ROOT / 'src'}"})
    try:
        wait_for(lambda: "succeeded" in shiftwork(
            shop, "jobs", "list", "--app", "shopapp:app").stdout, timeout=60,
            what="the worker running the job")
    finally:
        worker.terminate()
        _, log = worker.communicate(timeout=30)
    assert "worker.started" in log and "worker.stopped" in log, log
    lines = [line for line in log.splitlines() if "job.succeeded" in line]
    if flag:
        assert len(lines) == 1 and "job_id=1 task=shopapp.send queue=emails" in lines[0], log
        assert any("job.started" in line for line in log.splitlines())
    else:
        assert lines == [], log
    if flag:
        assert "--log-jobs" in (ROOT / "docs" / "getting-started.md").read_text()


# -- 10. a backfill slow enough to kill -----------------------------------------------------

def test_the_backfill_with_slow_can_be_killed_mid_way_and_resumes(tmp_path: Path) -> None:
    """Item 10: examples/backfill.py's suggested 200,000 rows finished in a second on
    SQLite, before anyone could `kill -9` it as its text invites. `start --slow` rests
    after each batch: a kill -9 lands mid-way, and the next worker resumes from the
    checkpoint (the seed here is smaller; the pace per batch is the same)."""
    import json as jsonlib
    import signal

    from .conftest import wait_for

    folder = Folder(tmp_path, "backfill.py")
    commands = documented_commands(ROOT / "examples" / "backfill.py")
    assert "python examples/backfill.py start --slow" in commands
    assert folder.run("shiftwork migrate --app examples.backfill:app").returncode == 0
    assert folder.run("python examples/backfill.py seed 20000").returncode == 0  # 10 batches
    started = folder.run("python examples/backfill.py start --slow")
    job_id = re.search(r"job (\d+) enqueued", started.stdout)[1]  # type: ignore[index]

    def job() -> dict[str, object]:
        out = shiftwork(tmp_path, "jobs", "show", job_id, "--json", "--app",
                        "examples.backfill:app")
        return dict(jsonlib.loads(out.stdout))

    folder.run("shiftwork worker examples.backfill:app -q backfill=1")
    try:
        wait_for(lambda: (job().get("checkpoint") or {}).get("done", 0) >= 4000,  # type: ignore[union-attr]
                 timeout=60, what="a few batches checkpointed")
        folder.workers[0].send_signal(signal.SIGKILL)
        folder.workers[0].wait(30)
        killed = job()
        assert killed["state"] == "running", killed  # cut short, lease still held
        done_at_kill = killed["checkpoint"]["done"]  # type: ignore[index]
        assert 4000 <= done_at_kill < 20000, killed
        folder.workers.clear()
        folder.run("shiftwork worker examples.backfill:app -q backfill=1")
        wait_for(lambda: job()["state"] == "succeeded", timeout=90,
                 what="the rescued backfill finishing")
    finally:
        folder.stop()
    final = job()
    assert final["attempt"] == 2 and final["result"] == 20000, final
    import sqlite3

    with sqlite3.connect(tmp_path / "backfill-example.db") as conn:
        assert conn.execute("SELECT count(*) FROM events WHERE size IS NULL").fetchone() == (0,)
