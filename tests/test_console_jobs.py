"""The operations console's jobs list and bulk actions by filter (issue 29), through a
really served dashboard and the real `shiftwork` command."""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from markupsafe import escape

from shiftwork import App, ConfigurationError, FakeClock, JobState
from shiftwork.flow.claiming import claim
from shiftwork.jobs.bulk import bulk_apply
from shiftwork.model.filter import FilterError, parse_filter
from shiftwork.model.new_job import NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.web import create_dashboard

from .conftest import FAST
from .test_cli import cli
from .test_security import TOKEN, Served, csrf_of, login

TASK = "dashapp.charge_customer"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    made = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST, clock=FakeClock())
    made.migrate()
    yield made
    made.close()


def add_jobs(app: App, count: int, task: str = TASK, queue: str = "billing",
             dead: str | None = None, key: str | None = None) -> list[int]:
    """``count`` jobs; with ``dead``, each dies with that error message."""
    ids = [r.id for r in app.store.jobs.insert([
        NewJob(task, queue, '{"args": []}', max_attempts=1, unique_key=key)
        for _ in range(count)])]
    if dead is not None:
        claimed = claim(app.store, queue, count, "w1", 30.0, None)
        app.store.jobs.complete_many([Outcome(j.id, j.attempt, JobState.DEAD, error={
            "type": "BankError", "message": dead, "kind": "error"}) for j in claimed])
    return ids


def rows(page: httpx.Response) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-job="(\d+)"', page.text)]


def test_filters_combine_in_the_url_with_a_total(app: App) -> None:
    timeouts = add_jobs(app, 3, dead="timeout talking to the bank")
    add_jobs(app, 2, dead="card declined")
    add_jobs(app, 4)  # waiting
    add_jobs(app, 1, task="other", queue="mail", dead="timeout")
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        page = c.get("/jobs", params={"state": "dead", "queue": "billing",
                                      "task": "charge_CUSTOMER", "error": "TIMEOUT"})
        assert page.status_code == 200
        assert rows(page) == timeouts[::-1]
        assert "3 matching jobs" in page.text
        # the filter's own values stay in the form
        assert 'name="error" value="TIMEOUT"' in page.text
        assert rows(c.get("/dead", params={"error": "declined"})) != []
        assert len(rows(c.get("/dead", params={"queue": "billing"}))) == 5


def test_keyset_pages_with_a_bounded_total(app: App) -> None:
    ids = add_jobs(app, 120)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        seen: list[int] = []
        url: str | None = "/jobs?task=charge"
        while url:
            page = c.get(url)
            assert "120 matching jobs" in page.text
            seen += rows(page)
            found = re.search(r'<a href="([^"]+)" rel="next">', page.text)
            url = html.unescape(found.group(1)) if found else None
        assert seen == ids[::-1]  # each once, newest first, 50 a page


def test_more_than_the_count_cap_is_said_so(app: App, monkeypatch: Any) -> None:
    from shiftwork.web import jobs_console

    monkeypatch.setattr(jobs_console, "COUNT_CAP", 5)
    add_jobs(app, 7)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        assert "more than 5 matching jobs" in c.get("/jobs").text


def test_an_unknown_task_gets_did_you_mean_and_a_bad_filter_a_clear_400(
        app: App) -> None:
    add_jobs(app, 1)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        assert rows(c.get("/jobs", params={"task": "charge_customer"})) != []  # a part
        typo = c.get("/jobs", params={"task": "charge_costumer"})
        assert "did you mean dashapp.charge_customer?" in typo.text
        for params, says in (({"state": "bogus"}, "unknown state &#39;bogus&#39;"),
                             ({"created_from": "yesterday"}, "ISO 8601"),
                             ({"finished_to": "0001-01-01T00:00+01:00"}, "ISO 8601"),
                             ({"id": "12x"}, "job number"),
                             ({"sort": "random"}, "unknown sort")):
            bad = c.get("/jobs", params=params)
            assert bad.status_code == 400 and says in bad.text, (params, bad.text[-600:])


def test_bulk_retry_by_filter_counts_asks_then_runs_in_batches_and_is_audited(
        app: App, caplog: pytest.LogCaptureFixture) -> None:
    timeouts = add_jobs(app, 3, dead="timeout")
    declined = add_jobs(app, 2, dead="card declined")
    query = {"state": "dead", "queue": "billing", "error": "timeout"}
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        listing = c.get("/jobs", params=query).text
        assert "/jobs/bulk?" in listing and "retry…" in listing
        ask = c.get("/jobs/bulk", params={**query, "action": "retry"})
        assert ask.status_code == 200 and "<strong>3</strong> jobs match" in ask.text
        assert "Retry 3 jobs" in ask.text
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                                 ask.text))
        assert fields["action"] == "retry" and fields["error"] == "timeout"
        with caplog.at_level(logging.INFO, logger="shiftwork.events"):
            done = c.post("/jobs/bulk", data=fields)
        assert done.status_code == 303
        assert "retried 3 of 3 jobs" in c.get(done.headers["location"]).text
        assert [app.get_job(i).state for i in timeouts] == [JobState.AVAILABLE] * 3
        assert [app.get_job(i).state for i in declined] == [JobState.DEAD] * 2
        [event] = [r for r in caplog.records if getattr(r, "event", "") == "jobs.bulk"]
        assert (event.action, event.matched, event.done) == ("retry", 3, 3)  # type: ignore[attr-defined]
        assert "dashboard login (127.0.0.1)" in event.who  # type: ignore[attr-defined]
        audit = c.get("/jobs").text
        assert "Recent bulk actions" in audit and "state=dead queue=billing error~timeout" \
            in audit


def test_bulk_delete_takes_finished_jobs_only_and_bulk_needs_a_filter(
        app: App) -> None:
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        live = c.get("/jobs/bulk", params={"action": "delete", "state": "available"})
        assert live.status_code == 400 and "finished jobs only" in live.text
        empty = c.get("/jobs/bulk", params={"action": "retry"})
        assert empty.status_code == 400 and "needs a filter" in empty.text
        unknown = c.get("/jobs/bulk", params={"action": "drop", "queue": "billing"})
        assert unknown.status_code == 400 and "unknown bulk action" in unknown.text


def test_bulk_actions_sit_behind_the_login_and_csrf(app: App) -> None:
    """The security tests' gate, for the new page and action: no login, no page and no
    action; a login without the CSRF token, no action; filter values are escaped."""
    dead = add_jobs(app, 2, dead="timeout")
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        form = {"action": "delete", "state": "dead"}
        assert c.get("/jobs/bulk", params=form).status_code == 401
        assert c.post("/jobs/bulk", data=form).status_code == 401
        login(c)
        assert c.post("/jobs/bulk", data=form).status_code == 403  # no CSRF token
        assert [app.get_job(i).state for i in dead] == [JobState.DEAD] * 2
        hostile = '"><script>window.pwned=1</script>'
        page = c.get("/jobs", params={"task": hostile, "error": hostile})
        assert "<script>window.pwned" not in page.text
        assert str(escape(hostile)) in page.text
        ask = c.get("/jobs/bulk", params={"action": "retry", "task": hostile})
        assert "<script>window.pwned" not in ask.text
        csrf = csrf_of(c)
        assert c.post("/jobs/bulk", data={**form, "csrf": csrf}).status_code == 303
        assert app.store.console.page(parse_filter({"state": "dead"})) == []


def test_bulk_apply_works_in_batches(app: App) -> None:
    """A million matches never make one transaction: each batch is its own."""
    add_jobs(app, 25, dead="timeout")
    batches: list[tuple[int, int]] = []
    result = bulk_apply(app, "retry", parse_filter({"state": "dead"}), "test", batch=10,
                        progress=lambda matched, done: batches.append((matched, done)))
    assert (result.matched, result.done) == (25, 25)
    assert batches == [(10, 10), (20, 20), (25, 25)]


def test_bulk_cancel_goes_through_the_one_cancel_path(app: App) -> None:
    waiting = add_jobs(app, 3, task="imports.load")
    result = bulk_apply(app, "cancel", parse_filter({"task": "imports"}), "test")
    assert result.done == 3
    assert [app.get_job(i).state for i in waiting] == [JobState.CANCELLED] * 3


# -- the command line -------------------------------------------------------------------


def _db(tmp_path: Path) -> dict[str, str]:
    db = {"dsn": f"sqlite:///{tmp_path / 'cli.db'}", "schema": "shiftwork"}
    assert cli(db, "migrate").returncode == 0
    return db


def test_cli_lists_by_filter_with_a_total_and_did_you_mean(tmp_path: Path) -> None:
    db = _db(tmp_path)
    cli_app = App(db["dsn"])
    try:
        dead = add_jobs(cli_app, 3, dead="timeout")
        add_jobs(cli_app, 2)
    finally:
        cli_app.close()
    listed = cli(db, "jobs", "list", "--task", "charge", "--state", "dead", "--error",
                 "timeout", "--json")
    assert [j["id"] for j in json.loads(listed.stdout)] == dead[::-1], listed.stderr
    table = cli(db, "jobs", "list", "--task", "CHARGE", "--limit", "2")
    assert "5 matching, 2 shown; the next page: --after" in table.stdout, table.stderr
    after = int(table.stdout.rsplit("--after", 1)[1].split()[0])
    rest = json.loads(cli(db, "jobs", "list", "--task", "charge", "--after", str(after),
                          "--json").stdout)
    assert len(rest) == 3 and all(j["id"] < after for j in rest)
    typo = cli(db, "jobs", "list", "--task", "charge_costumer")
    assert "did you mean dashapp.charge_customer?" in typo.stderr
    bad = cli(db, "jobs", "list", "--created-from", "last tuesday")
    assert bad.returncode == 2 and "ISO 8601" in bad.stderr


def test_cli_bulk_retry_dry_run_asks_and_yes(tmp_path: Path) -> None:
    db = _db(tmp_path)
    cli_app = App(db["dsn"])
    try:
        dead = add_jobs(cli_app, 4, dead="timeout")
        add_jobs(cli_app, 1, dead="declined")
        verb = ("jobs", "retry", "--state", "dead", "--queue", "billing", "--error", "timeout")
        dry = cli(db, *verb, "--dry-run")
        assert dry.returncode == 0 and "4 jobs match" in dry.stdout and "dry run" in dry.stdout
        asked = cli(db, *verb)  # no terminal to ask on: refused, nothing moved
        assert asked.returncode == 1 and "--yes" in asked.stderr
        assert [cli_app.get_job(i).state for i in dead] == [JobState.DEAD] * 4
        done = cli(db, *verb, "--yes")
        assert done.returncode == 0 and "retried 4 of 4 jobs" in done.stdout, done.stderr
        assert [cli_app.get_job(i).state for i in dead] == [JobState.AVAILABLE] * 4
        [audit] = cli_app.store.console.bulk_actions_list()
        assert (audit.action, audit.matched, audit.done) == ("retry", 4, 4)
        assert audit.who.endswith("(cli)")
        cancel = cli(db, "jobs", "cancel", "--state", "waiting", "--task", "charge", "--yes")
        assert "cancelled 4 of 4" in cancel.stdout, cancel.stderr
        delete = cli(db, "jobs", "delete", "--task", "charge", "--yes")
        assert "deleted 5 of 5" in delete.stdout, delete.stderr
        refused = cli(db, "jobs", "delete", "--state", "running", "--yes")
        assert refused.returncode == 2 and "finished jobs only" in refused.stderr
    finally:
        cli_app.close()


def test_property_any_filter_value_gets_a_page_or_a_clear_4xx(app: App) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from shiftwork.web.jobs_console import FIELDS

    add_jobs(app, 2, dead="timeout")
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)

        @settings(max_examples=150, deadline=None)
        @given(params=st.dictionaries(st.sampled_from([*FIELDS, "q", "sort", "after",
                                                       "action"]),
                                      st.text(max_size=30), max_size=5),
               path=st.sampled_from(["/jobs", "/dead", "/jobs/bulk"]))
        def probe(params: dict[str, str], path: str) -> None:
            response = c.get(path, params=params)
            assert response.status_code in (200, 400), (path, params, response.text[-300:])

        probe()


# -- tags ---------------------------------------------------------------------------------


def test_tags_from_the_task_and_using_are_stored_shown_and_filterable(
        make_app: Any) -> None:
    """On both engines: the task's tags and using(tags=) together, found by tag through
    the API, and only by a whole tag."""
    app = make_app()

    @app.task(name="billing.charge", tags=["billing"])
    def charge(customer: int) -> None: ...

    a = charge.using(tags=["customer:42", "import:2026-11"]).enqueue(42).id
    b = charge.using(tags=["customer:7"]).enqueue(7).id
    [c] = [r.id for r in charge.enqueue_many([(1,), (2,)])][:1]
    assert app.get_job(a).tags == ["billing", "customer:42", "import:2026-11"]
    assert app.get_job(c).tags == ["billing"]  # enqueue_many keeps the task's tags
    assert [j.id for j in app.find_jobs(tag="customer:42")] == [a]
    assert [j.id for j in app.find_jobs(tag="customer:7", task="charge")] == [b]
    assert app.find_jobs(tag="customer:4") == []  # whole tags only
    assert len(app.find_jobs(tag="billing")) == 4
    with pytest.raises(FilterError, match="unknown filter colour"):
        app.find_jobs(colour="red")
    result = app.bulk("cancel", tag="import:2026-11", who="test")
    assert (result.matched, result.done) == (1, 1)
    assert app.get_job(a).state is JobState.CANCELLED


@pytest.mark.parametrize("tags, says", [
    ("customer:42", "a list of strings"),
    ([42], "must be a string"),
    (["a,b"], "no comma"),
    ([""], "1-100 characters"),
    (["x" * 101], "1-100 characters"),
    (["bell\x07"], "control character"),
    ([f"t{i}" for i in range(21)], "at most 20 tags"),
])
def test_bad_tags_are_refused_naming_the_problem(app: App, tags: Any, says: str) -> None:
    @app.task(name="t")
    def t() -> None: ...

    with pytest.raises(ConfigurationError, match=says):
        t.using(tags=tags).enqueue()
    with pytest.raises(ConfigurationError, match=says):
        app.task(name="u", tags=tags)(lambda: None)
    assert app.find_jobs() == []  # nothing was enqueued


def test_tags_in_the_dashboard_and_the_cli(app: App, tmp_path: Path) -> None:
    @app.task(name="imports.load")
    def load() -> None: ...

    tagged = load.using(tags=["import:2026-11", "<b>x</b>"]).enqueue().id
    load.enqueue()
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        assert rows(c.get("/jobs", params={"tag": "import:2026-11"})) == [tagged]
        page = c.get(f"/jobs/{tagged}").text
        assert 'href="/jobs?tag=import%3A2026-11"' in page
        assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    db = {"dsn": f"sqlite:///{tmp_path / 'jobs.db'}", "schema": "shiftwork"}
    listed = cli(db, "jobs", "list", "--tag", "import:2026-11", "--json")
    assert [j["id"] for j in json.loads(listed.stdout)] == [tagged], listed.stderr
    assert "tags: import:2026-11, <b>x</b>" in cli(db, "jobs", "show", str(tagged)).stdout
    bad = cli(db, "jobs", "list", "--tag", "a,b")
    assert bad.returncode == 2 and "no comma" in bad.stderr
