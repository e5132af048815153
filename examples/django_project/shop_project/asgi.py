"""The project's ASGI application, with shiftwork's dashboard at /admin/jobs/ behind
Django's login (active staff users)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop_project.settings")
django_application = get_asgi_application()

from shiftwork.contrib.django.asgi import with_dashboard  # noqa: E402  (after Django's set-up)

application = with_dashboard(django_application, prefix="/admin/jobs")
