"""Enqueue inside a SQLAlchemy session's transaction: ``task.using(session=s).enqueue(...)``.

The jobs are inserted on the session's own database connection, so they exist if and only
if the session commits. The session must be on the App's database: PostgreSQL through
psycopg 3 (``postgresql+psycopg://``), or the App's SQLite file (``sqlite://``, and
``sqlite+aiosqlite://`` for an AsyncSession).

>>> with Session(engine) as session, session.begin():
...     session.add(Order(id=7))
...     send_receipt.using(session=session).enqueue(7)   # committed with the order

>>> async with AsyncSession(engine) as session, session.begin():
...     await send_receipt.using(session=session).enqueue_async(7)
"""

from shiftwork.jobs.sessions import enqueue_in_async_session, session_connection

__all__ = ["enqueue_in_async_session", "session_connection"]
