"""The example project's own tests: real Django, its test database, shiftwork on it.

Run with ``python manage.py test shop`` (SHOP_DB=postgres for PostgreSQL).
"""

import asyncio
import io
from contextlib import redirect_stdout

import httpx
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction
from django.test import Client, TransactionTestCase
from shop_project.asgi import application

from shiftwork.contrib.django import get_app
from shiftwork.testing import drain, enqueued
from shop.models import Order
from shop.tasks import SENT, invoice_total, send_receipt


def receipts_for(order_id: int) -> list[object]:
    return [j for j in enqueued(get_app(), send_receipt) if j.args == [order_id]]


class EnqueueInAtomic(TransactionTestCase):
    # Real commits (not the TestCase's one wrapping transaction): the job's fate is the
    # block's. shiftwork's tables are not Django models, so clear them between tests.
    def setUp(self) -> None:
        drain(get_app())

    def test_a_rollback_leaves_no_job(self) -> None:
        class Refused(Exception):
            pass

        try:
            with transaction.atomic():
                order = Order.objects.create(email="ada@example.com")
                send_receipt.enqueue(order.id)
                raise Refused
        except Refused:
            pass
        self.assertFalse(Order.objects.filter(id=order.id).exists())
        self.assertEqual(receipts_for(order.id), [])

    def test_a_commit_leaves_one_job_that_a_worker_runs(self) -> None:
        with transaction.atomic():
            order = Order.objects.create(email="bo@example.com")
            job = send_receipt.enqueue(order.id)
            # On Django's connection, inside its transaction: others see nothing yet.
        [stored] = receipts_for(order.id)
        self.assertEqual(stored.id, job.id)  # type: ignore[attr-defined]
        self.assertEqual(drain(get_app()).succeeded, 1)
        self.assertIn(order.id, SENT)

    def test_the_view_commits_the_order_with_its_job(self) -> None:
        answer = Client().post("/orders/", {"email": "cy@example.com"})
        self.assertEqual(answer.status_code, 200)
        self.assertEqual(len(receipts_for(answer.json()["order"])), 1)

    def test_a_django_task_runs_and_reports_its_result(self) -> None:
        answer = Client().post("/orders/", {"email": "fay@example.com"})
        invoice = invoice_total.get_result(answer.json()["invoice"])
        self.assertEqual(invoice.status.name, "READY")
        drain(get_app())
        invoice.refresh()
        self.assertEqual(invoice.status.name, "SUCCESSFUL")
        self.assertEqual(invoice.return_value, "invoice for fay@example.com")

    def test_outside_a_block_the_job_commits_at_once(self) -> None:
        order = Order.objects.create(email="di@example.com")
        send_receipt.enqueue(order.id)
        self.assertEqual(len(receipts_for(order.id)), 1)


class ManageCommand(TransactionTestCase):
    def test_manage_py_shiftwork_runs_the_command_line_on_the_projects_app(self) -> None:
        order = Order.objects.create(email="ed@example.com")
        job = send_receipt.enqueue(order.id)
        out = io.StringIO()
        with redirect_stdout(out):
            call_command("shiftwork", "migrate")
            call_command("shiftwork", "jobs", "show", str(job.id))
        self.assertIn("send_receipt", out.getvalue())


class DashboardBehindDjangosLogin(TransactionTestCase):
    def get(self, path: str, cookies: dict[str, str] | None = None,
            headers: dict[str, str] | None = None) -> httpx.Response:
        async def fetch() -> httpx.Response:
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                         cookies=cookies) as client:
                return await client.get(path, headers=headers)
        return asyncio.run(fetch())

    def session_of(self, user: User) -> dict[str, str]:
        client = Client()
        client.force_login(user)
        return {"sessionid": client.cookies["sessionid"].value}

    def test_only_djangos_staff_get_in(self) -> None:
        self.assertEqual(self.get("/admin/jobs/").status_code, 401)
        clerk = User.objects.create_user("clerk", password="pw-of-the-clerk")
        self.assertEqual(self.get("/admin/jobs/", self.session_of(clerk)).status_code, 401)
        boss = User.objects.create_user("boss", password="pw-of-the-boss", is_staff=True)
        page = self.get("/admin/jobs/", self.session_of(boss))
        self.assertEqual(page.status_code, 200)
        self.assertIn('href="/admin/jobs/jobs"', page.text)  # links keep the prefix
        self.assertEqual(self.get("/admin/jobs").status_code, 308)
        # Django still answers everything else.
        self.assertEqual(self.get("/admin/login/").status_code, 200)

    def test_a_logged_out_browser_is_sent_to_djangos_login(self) -> None:
        # Issue 26, finding 12: Django's login page (settings.LOGIN_URL), not a token
        # form that cannot work here; no cookie or CSRF token before Django says who it is.
        browser = self.get("/admin/jobs/dead", headers={"Accept": "text/html"})
        self.assertEqual(browser.status_code, 303)
        self.assertEqual(browser.headers["location"], "/admin/login/?next=%2Fadmin%2Fjobs%2Fdead")
        self.assertNotIn("set-cookie", browser.headers)
        boss = User.objects.create_user("boss", password="pw-of-the-boss", is_staff=True)
        page = self.get("/admin/jobs/", self.session_of(boss))
        self.assertEqual(page.status_code, 200)
        self.assertNotIn("Log out", page.text)  # Django logs out; no button that does nothing
