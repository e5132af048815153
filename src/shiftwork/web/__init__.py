"""The web dashboard: ``create_dashboard(app, token=...)`` is an ASGI application.

Serve it with ``shiftwork dashboard myapp:app`` or mount it in your own ASGI server.
"""

from shiftwork.web.dashboard import create_dashboard

__all__ = ["create_dashboard"]
