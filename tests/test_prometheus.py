"""The alert rules and the Grafana dashboard, proved by Prometheus itself: promtool checks
the shipped rules and runs their unit tests, and a real Prometheus scrapes a real worker
and a real dashboard and finds every documented metric with its documented labels.

Debian's ``prometheus`` package brings both binaries (``./dev test`` installs it when it
runs as root); without them these tests skip, and in CI they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from shiftwork import ShiftworkError
from shiftwork.observe import metric_defs as m
from shiftwork.observe.metric_defs import ALL_METRICS, MetricDef

from .conftest import IN_CI, PG_DSN, ROOT, imported_app, spawn_worker, wait_for

pytestmark = pytest.mark.prometheus

RULES = ROOT / "deploy" / "prometheus" / "shiftwork-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "shiftwork-rules.test.yml"
GRAFANA = ROOT / "deploy" / "grafana" / "shiftwork-dashboard.json"
OBSERVABILITY = ROOT / "docs" / "observability.md"
ALERTING = ROOT / "docs" / "alerting.md"
TOKEN = "prometheus-test-token-0123456789"
#: The rules file's groups and their alerts, named here so that a rule lost, renamed or
#: moved to another group fails the tests.
GROUPS = {
    "shiftwork": {"ShiftworkJobsWaitingTooLong", "ShiftworkQueueStalled",
                  "ShiftworkScheduleLate", "ShiftworkDeadJobsRising",
                  "ShiftworkDeadJobsPiling", "ShiftworkNoWorkerAlive"},
    "shiftwork-table": {"ShiftworkJobsTableDeadTuples", "ShiftworkXminHorizonHeld",
                        "ShiftworkXminHorizonFarBehind", "ShiftworkJobsTableNotVacuumed",
                        "ShiftworkIndexBloated", "ShiftworkSqliteWalGrowing"},
    "shiftwork-quiet-failures": {"ShiftworkScheduleEmpty", "ShiftworkTaskEmpty",
                                 "ShiftworkItemsStopped"},
}
ALERTS = set().union(*GROUPS.values())


def _binary(name: str) -> str:
    path = os.environ.get(f"SHIFTWORK_TEST_{name.upper()}") or shutil.which(name) \
        or f"/usr/bin/{name}"
    if not os.access(path, os.X_OK):
        message = f"{name} is not installed (Debian's prometheus package; ./dev test as root " \
                  f"installs it, or set SHIFTWORK_TEST_{name.upper()})"
        if IN_CI:
            pytest.fail(f"{message}, and CI must not skip it")
        pytest.skip(message)
    return path


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_binary("promtool"), *args], capture_output=True, text=True,
                          timeout=60, cwd=RULES.parent)


# -- the files, without a server -----------------------------------------------------------

def test_promtool_checks_the_shipped_rules() -> None:
    result = _promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout


def test_promtool_unit_tests_of_every_alert_pass() -> None:
    result = _promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    tested = {t["alertname"] for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]
              for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert tested == ALERTS == {r["alert"] for r in _rules()}


def test_the_rules_file_has_each_group_and_every_rule_its_shape() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    assert {g["name"]: {r["alert"] for r in g["rules"]} for g in groups} == GROUPS
    # Each alert says how bad it is and what happened. (The dead-job ones have no `for:`:
    # their expressions already look back 15 minutes or an hour.)
    for rule in _rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
    for rule in (r for g in groups if g["name"] != "shiftwork" for r in g["rules"]):
        assert rule["for"] and rule["annotations"]["description"], rule["alert"]


def _rules() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def _exposed() -> set[str]:
    return {d.exposed for d in ALL_METRICS} | {
        d.name + s for d in ALL_METRICS if d.kind == "histogram"
        for s in ("_bucket", "_sum", "_count")}


def _grafana_exprs() -> list[str]:
    board = json.loads(GRAFANA.read_text())
    return [t["expr"] for p in board["panels"] for t in p["targets"]]


def test_rules_and_dashboard_name_only_exported_metrics() -> None:
    exprs = [r["expr"] for r in _rules()] + _grafana_exprs()
    named = {n for e in exprs for n in re.findall(r"\bshiftwork_[a-z_]+", e)}
    assert named and named <= _exposed(), named - _exposed()


def _documented() -> dict[str, tuple[str, set[str]]]:
    """The metrics table of docs/observability.md: name -> (type, labels)."""
    rows = re.findall(r"^\| `(shiftwork_[a-z_]+)` \| (\w+) \| *([a-z, ]*?) *\|",
                      OBSERVABILITY.read_text(), re.M)
    return {name: (kind, {x.strip() for x in labels.split(",") if x.strip()})
            for name, kind, labels in rows}


def test_the_docs_table_is_the_metric_list() -> None:
    documented = _documented()
    defined = {d.exposed: (d.kind, set(d.labels)) for d in ALL_METRICS}
    assert documented == defined


def _group_texts(rules: str) -> list[str]:
    """Each group of a rules file as its text, with the comment lines above it."""
    body = rules.split("\ngroups:\n", 1)[1]
    return [g.strip("\n") for g in re.split(r"\n\n(?=  [#-])", body)]


def test_the_docs_rules_are_the_shipped_file() -> None:
    # Each group is shown where the docs explain its metrics, as a block of its own: the
    # queue's and the table's in observability.md, the quiet failures' in alerting.md.
    text = OBSERVABILITY.read_text()
    shown = [b.removeprefix("groups:\n").strip("\n")
             for page in (text, ALERTING.read_text())
             for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if b.startswith("groups:\n")]
    assert shown == _group_texts(RULES.read_text()), "docs' rules differ from " \
        "deploy/prometheus/shiftwork-rules.yml: show each group verbatim"
    assert [g for b in shown for g in yaml.safe_load("groups:\n" + b)["groups"]] \
        == yaml.safe_load(RULES.read_text())["groups"]
    assert "deploy/prometheus/shiftwork-rules.yml" in text
    assert "deploy/grafana/shiftwork-dashboard.json" in text


# -- a real Prometheus, a real worker, a real dashboard -------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


class Prometheus:
    def __init__(self, tmp: Path, targets: dict[str, tuple[int, str | None]]) -> None:
        self.port = _free_port()
        jobs = []
        for job, (port, token) in targets.items():
            cfg: dict[str, Any] = {"job_name": job,
                                   "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
            if token:
                cfg["authorization"] = {"credentials": token}
            jobs.append(cfg)
        config = tmp / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)], "scrape_configs": jobs}))
        self.log = tmp / "prometheus.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [_binary("prometheus"), f"--config.file={config}",
                 f"--storage.tsdb.path={tmp / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=out, stderr=out)
        wait_for(self._ready, timeout=30, interval=0.2, what="Prometheus ready")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2):
                return True
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def series(self, name: str) -> list[dict[str, str]]:
        return list(self.api("series", **{"match[]": name}))

    def close(self) -> None:
        _stop(self.proc)


def _labels_seen(prom: Prometheus, d: MetricDef) -> set[str] | None:
    name = d.name + "_bucket" if d.kind == "histogram" else d.exposed
    found = prom.series(name)
    if not found:
        return None
    return set().union(*(set(s) for s in found)) - {"__name__", "job", "instance", "le"}


@pytest.fixture
def pg_where(pg_schema: str) -> dict[str, str]:
    return {"dsn": PG_DSN, "schema": pg_schema}


#: Documented, and rightly absent from this run (on Postgres, a fresh schema): SQLite's own
#: gauges, and the table-health ones that are absent until autovacuum has run or when the
#: catalog cannot tell (each still checked for its labels when present).
ABSENT_HERE = {d.exposed for d in (m.SQLITE_PAGES, m.SQLITE_WAL, m.TABLE_AUTOVACUUM,
                                   m.TABLE_AUTOANALYZE, m.INDEX_BLOAT)}


def test_prometheus_scrapes_every_documented_metric_from_a_worker_and_the_dashboard(
        pg_where: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _binary("prometheus")
    with imported_app(monkeypatch, "metered", pg_where["dsn"], pg_where["schema"]) as m:
        app = m.app
        ids = [m.ok.enqueue(i + 1).id for i in range(3)] + [
            m.flaky.enqueue().id, m.hog.enqueue().id, m.throttled.enqueue().id]
        slow = m.slow.enqueue().id
        m.grouped.using(group="acme").enqueue()
        # A claim by a worker that never renews it: the real worker's rescuer takes it back.
        ghost = m.ok.using(queue="ghost").enqueue(1).id
        [claimed] = app.store.jobs.claim("ghost", 1, "ghost-worker", 0.5)
        assert claimed.id == ghost

        token = tmp_path / "token"
        token.write_text(TOKEN)
        token.chmod(0o600)
        worker_port, dash_port = _free_port(), _free_port()
        log = tmp_path / "worker.log"
        worker = spawn_worker(pg_where, "metered", ["work=4"],
                              ["--metrics-port", str(worker_port), "--grace", "2"], log_path=log)
        env = {**os.environ, "SHIFTWORK_TEST_DSN": pg_where["dsn"],
               "SHIFTWORK_TEST_SCHEMA": pg_where["schema"],
               "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
        with open(tmp_path / "dashboard.log", "wb") as out:
            dashboard = subprocess.Popen(
                [sys.executable, "-m", "shiftwork.cli", "dashboard", "tests.apps.metered:app",
                 "--port", str(dash_port), "--token-file", str(token)],
                cwd=ROOT, env=env, stdout=out, stderr=out)
        prom = None
        try:
            prom = Prometheus(tmp_path, {"shiftwork-worker": (worker_port, None),
                                         "shiftwork-dashboard": (dash_port, TOKEN)})
            wait_for(lambda: app.get_job(slow).state.value == "running", timeout=60,
                     what="the slow job running")
            app.cancel_job(slow)

            def triggered() -> int | None:  # once the scheduler has synced the schedule
                try:
                    return app.schedules.trigger("nightly")
                except ShiftworkError:
                    return None
            ids.append(wait_for(triggered, timeout=30, interval=0.2, what="schedule synced"))
            wait_for(lambda: all(app.get_job(i).state.value in ("succeeded", "dead",
                                                                "scheduled") for i in ids),
                     timeout=60, what="the jobs run")

            # Both targets up, the dashboard's with its token.
            def both_up() -> bool:
                up = {s["metric"]["job"]: s["value"][1]
                      for s in prom.api("query", query="up")["result"]}
                return up == {"shiftwork-worker": "1", "shiftwork-dashboard": "1"}
            wait_for(both_up, timeout=30, interval=0.5, what="both targets scraped")

            documented = _documented()
            assert documented, "no metrics table in docs/observability.md"
            by_name = {d.exposed: d for d in ALL_METRICS}

            def missing() -> dict[str, Any]:
                out = {}
                for name, (_, labels) in documented.items():
                    seen = _labels_seen(prom, by_name[name])
                    if seen != labels and not (name in ABSENT_HERE and not seen):
                        out[name] = seen
                return out
            last: dict[str, Any] = {}

            def all_seen() -> bool:
                last.clear()
                last.update(missing())
                return not last
            try:
                wait_for(all_seen, timeout=60, interval=1.0, what="every documented metric")
            except AssertionError as exc:
                raise AssertionError(f"not scraped as documented (name: labels seen): {last}\n"
                                     f"{log.read_text()[-3000:]}") from exc

            # The database gauges come from the dashboard too (it runs apart from workers).
            from_dashboard = prom.series('shiftwork_workers_alive{job="shiftwork-dashboard"}')
            assert from_dashboard
            # The server loaded the shipped rules and evaluates them without error.
            groups = prom.api("rules")["groups"]
            assert {g["name"]: {r["name"] for r in g["rules"]} for g in groups} == GROUPS
            wait_for(lambda: all(r["health"] == "ok" for g in prom.api("rules")["groups"]
                                 for r in g["rules"]), timeout=15, what="rules evaluated")
            # Every Grafana panel's query is one Prometheus accepts, and has data.
            # (a rate needs two scrapes of a counter: wait for the second)
            empty: list[str] = []

            def panels_answer() -> bool:
                empty[:] = []
                for expr in _grafana_exprs():
                    query = expr.replace("$__rate_interval", "1m").replace('"$queue"', '".*"')
                    if not prom.api("query", query=query)["result"]:
                        empty.append(query)
                return not empty
            try:
                wait_for(panels_answer, timeout=20, interval=1.0, what="every panel answered")
            except AssertionError as exc:
                raise AssertionError(f"panels without data: {empty}") from exc
        finally:
            if prom is not None:
                prom.close()
            _stop(dashboard)
            _stop(worker)
