"""The page's third-party runtime and its icon, served from the package (no CDN).

``GET /static/vendor/{name}``: the Vega-Lite runtime the page draws interactive charts with
(``vega.min.js``, ``vega-lite.min.js``, ``vega-embed.min.js``) and its ``LICENSES.txt``,
vendored by ``scripts/vendor_vega.py``. ``GET /favicon.ico``: browsers ask for it whatever
the page says; it is the page's own SVG icon. Both are public, like the page itself, and
cached by the browser for a day (the files change only with a new Baton version).
``PAGE_HEADERS`` are the page's own: a Content-Security-Policy that lets nothing run but
this server's scripts, so text that slips into the page as markup still cannot run.
Names are matched against the files the package ships, never joined into a path.
"""

from __future__ import annotations

import functools
from importlib import resources

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response

VENDOR_FILES = {"vega.min.js": "text/javascript", "vega-lite.min.js": "text/javascript",
                "vega-embed.min.js": "text/javascript", "LICENSES.txt": "text/plain; charset=utf-8"}
CACHE = {"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"}
# The page's own policy: scripts only from this server (no inline script, no eval: charts
# evaluate Vega expressions with its interpreter), data only from this server, no framing.
# Styles may be inline: Vega sets style attributes on what it draws.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' blob: data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache",
}


@functools.lru_cache(maxsize=8)
def _read(*parts: str) -> bytes:
    return resources.files("baton.server").joinpath("static", *parts).read_bytes()


def register_asset_routes(app: FastAPI) -> None:
    @app.get("/static/vendor/{name}", include_in_schema=False)
    async def vendor(name: str) -> Response:
        media = VENDOR_FILES.get(name)
        if media is None:
            raise HTTPException(status_code=404)
        try:
            return Response(_read("vendor", name), media_type=media, headers=CACHE)
        except FileNotFoundError:
            raise HTTPException(status_code=404) from None

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(_read("favicon.svg"), media_type="image/svg+xml", headers=CACHE)
