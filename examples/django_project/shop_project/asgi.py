"""The project's ASGI application, with shiftwork's dashboard at /admin/jobs/ behind
Django's login (active staff users)."""

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop_project.settings")
# Serves STATIC_URL (the admin's CSS) from the installed apps, as runserver does, so the
# admin is styled under uvicorn; a production site serves collectstatic's output instead.
django_application = ASGIStaticFilesHandler(get_asgi_application())

from shiftwork.contrib.django.asgi import with_dashboard  # noqa: E402  (after Django's set-up)

application = with_dashboard(django_application, prefix="/admin/jobs")
