"""``shiftwork jobs reencrypt``: after a key rotation, reseal stored payloads with the
current key (jobs/reencrypt.py), a bounded batch per transaction, with progress."""

from __future__ import annotations

import click

from shiftwork.cli.format import echo_json
from shiftwork.cli.options import open_app, target_options
from shiftwork.jobs.reencrypt import Rotation


@click.command("reencrypt")
@target_options
@click.option("--batch", type=click.IntRange(1, 10_000), default=500, show_default=True,
              help="Jobs read and rewritten per transaction.")
@click.option("--seal-clear/--no-seal-clear", default=True, show_default=True,
              help="Also seal the clear payloads of tasks now declared encrypted.")
def jobs_reencrypt(batch: int, seal_clear: bool) -> None:
    """Reseal every job's encrypted payloads with the App's current key, so an old key
    can be retired. Needs the App (--app) and its keys; safe beside running workers.
    Progress on stderr, the totals as JSON on stdout."""
    app = open_app(need_app="the keys are the App's (App(encryption=Keys(...)))")

    def progress(r: Rotation) -> None:
        click.echo(f"reencrypt: {r.scanned} jobs read (to id {r.last_id}), {r.rewritten} "
                   f"rewritten, {r.values} values resealed, {r.unreadable} unreadable",
                   err=True)

    rotation = app.reencrypt(batch=batch, seal_clear=seal_clear, on_batch=progress)
    echo_json({"current_key": app.runtime.keys.current if app.runtime.keys else None,
               **rotation.as_dict()})
    if rotation.unreadable:
        click.echo(f"reencrypt: {rotation.unreadable} values are sealed with a key this App "
                   "does not hold (or that does not open them): left as they are", err=True)
