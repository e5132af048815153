"""Reading a POSTed form in bounded memory: the one place the dashboard reads a body.

The body is counted as it streams in, whatever ``Content-Length`` or
``Transfer-Encoding`` say: past ``MAX_FORM_BYTES`` the answer is 413 and nothing more
is read. The login form is read before anyone is authenticated, so no request can make
the process hold more than this cap (a chunked body once held ~1 GB per request).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

MAX_FORM_BYTES = 64 * 1024  # every dashboard form is a few fields
#: The largest form is the dead jobs' bulk form: up to 1000 ids, its action and csrf.
MAX_FORM_FIELDS = 1024


#: Where the gate keeps the form it read (and checked) for the endpoint.
FORM_SCOPE_KEY = "shiftwork.form"

def bad_text(value: str) -> bool:
    """Control characters no dashboard field or path holds (NUL breaks PostgreSQL text)."""
    return any(ord(c) < 32 and c not in "\t\r\n" for c in value)


def too_large() -> Response:
    return PlainTextResponse(f"form too large (at most {MAX_FORM_BYTES} bytes)",
                             status_code=413)


def declared_too_large(request: Request) -> bool:
    """A ``Content-Length`` over the cap (or not a number): refused before reading."""
    length = request.headers.get("content-length", "")
    if not length:
        return False
    return not (length.isascii() and length.isdigit()) or int(length) > MAX_FORM_BYTES


async def read_form(request: Request) -> Any:
    """The POSTed form, or a 400/413 response saying what is wrong with it."""
    if declared_too_large(request):
        return too_large()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return too_large()
    # Starlette's own cache of the body: form() parses it from here.
    request._body = bytes(body)
    try:
        form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS,
                                  max_part_size=MAX_FORM_BYTES)
    except Exception as exc:  # malformed multipart or urlencoded body
        return PlainTextResponse(f"malformed form: {getattr(exc, 'detail', exc)}",
                                 status_code=400)
    for key, value in form.multi_items():
        if not isinstance(value, str):
            return PlainTextResponse("file uploads are not accepted", status_code=400)
        if bad_text(key) or bad_text(value):
            return PlainTextResponse(f"control characters in form field {key!r}",
                                     status_code=400)
    return form
