"""The workflow page's fork action and streams table (issue 32): behind the login and the
CSRF check like every other action, on both engines."""

from __future__ import annotations

import re

from shiftwork import App, JobState, Workflow
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .test_security import TOKEN, Served, csrf_of, login

HOSTILE = "<script>alert(1)</script>"


def test_fork_from_the_workflow_page(wapp: App) -> None:
    broken = {"ship": True}

    def ship() -> str:
        if broken["ship"]:
            raise RuntimeError("carrier down")
        return "shipped"

    @wapp.workflow(max_attempts=1)
    def order(wf: Workflow) -> str:
        wf.step("charge", lambda: "charged")
        wf.write_stream(HOSTILE, "v")
        return str(wf.step("ship", ship))

    job = order.enqueue()
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.DEAD
    with Served(create_dashboard(wapp, token=TOKEN)) as served, served.client() as c:
        assert c.post(f"/workflows/{job.id}/fork", data={"from_step": "2"}
                      ).status_code in (401, 403)  # no login
        login(c)
        page = c.get(f"/workflows/{job.id}").text
        places = re.findall(r'<option value="(\d+)"( selected)?>([^<]*)</option>', page)
        assert [(p, label) for p, _, label in places] == [
            ("0", "0 · charge"), ("1", f"1 · stream:{HOSTILE}:0".replace("<", "&lt;")
                                  .replace(">", "&gt;")),
            ("2", "2 · the first step without a record")]
        assert places[-1][1] == " selected"
        streams = page.split('id="streams"')[1].split("</table>")[0]
        assert HOSTILE not in page and "&lt;script&gt;" in streams
        assert c.post(f"/workflows/{job.id}/fork", data={"from_step": "2"}
                      ).status_code == 403  # no CSRF token
        csrf = csrf_of(c, f"/workflows/{job.id}")
        bad = c.post(f"/workflows/{job.id}/fork", data={"csrf": csrf, "from_step": "7"})
        assert bad.status_code == 303 and "no+recorded+step+7" in bad.headers["location"]
        junk = c.post(f"/workflows/{job.id}/fork", data={"csrf": csrf, "from_step": "x"})
        assert "choose+the+step" in junk.headers["location"]
        assert len(wapp.store.jobs.list(limit=10)) == 1  # nothing forked yet

        broken["ship"] = False
        done = c.post(f"/workflows/{job.id}/fork", data={"csrf": csrf, "from_step": "2"})
        assert done.status_code == 303
        new_id = int(done.headers["location"].split("/workflows/")[1].split("?")[0])
        assert new_id != job.id
        drain(wapp)
        assert wapp.get_job(new_id).result == "shipped"
        assert wapp.get_job(job.id).state is JobState.DEAD  # the original, untouched
