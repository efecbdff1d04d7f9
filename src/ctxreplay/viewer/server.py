"""The case browser as a local web app: Starlette routes over ``Pages``, served by uvicorn on
127.0.0.1. The pages are static files of the package (no build step); they ask the JSON routes
for what they draw."""

from __future__ import annotations

import socket
from collections.abc import Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from ..errors import CtxreplayError
from .pages import Pages

#: the pages run only their own scripts and styles: trace text can never become code
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static_file(name: str) -> str:
    return str(resources.files("ctxreplay.viewer") / "static" / name)


def _params(request: Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        out.setdefault(key, []).append(value)
    return out


def _json(answer: Callable[..., Any]) -> Callable[[Request], Any]:
    """A route answering JSON; a request the viewer cannot answer is a 400 with the reason."""

    async def route(request: Request) -> Response:
        try:
            if request.method == "POST":
                data = await run_in_threadpool(answer, request, await request.json())
            else:
                data = await run_in_threadpool(answer, request)
        except CtxreplayError as e:
            return JSONResponse({"error": str(e)}, status_code=400, headers=SECURITY_HEADERS)
        except ValueError as e:  # a body that is not JSON
            return JSONResponse({"error": f"bad request: {e}"}, status_code=400)
        return JSONResponse(data, headers=SECURITY_HEADERS)

    return route


def make_app(pages: Pages) -> Starlette:
    """The app: the page, its two static files, and one JSON route per question."""

    def page(name: str, media: str) -> Callable[[Request], Any]:
        async def route(request: Request) -> Response:
            return FileResponse(static_file(name), media_type=media, headers=SECURITY_HEADERS)

        return route

    async def bundle_js(request: Request) -> Response:  # the server is no bundle
        return Response("", media_type="text/javascript", headers=SECURITY_HEADERS)

    q = lambda r, k: r.query_params.get(k, "")  # noqa: E731
    routes = [
        Route("/", page("index.html", "text/html; charset=utf-8")),
        Route("/static/app.js", page("app.js", "text/javascript")),
        Route("/static/app.css", page("app.css", "text/css")),
        Route("/data/bundle.js", bundle_js),
        Route("/api/meta", _json(lambda r: pages.meta())),
        Route("/api/grid", _json(lambda r: pages.grid_page(_params(r)))),
        Route("/api/case", _json(lambda r: pages.case(q(r, "case"), q(r, "policy")))),
        Route("/api/ab", _json(lambda r: pages.ab(q(r, "a"), q(r, "b")))),
        Route("/api/frontier", _json(lambda r: pages.frontier())),
        Route("/api/label", _json(lambda r: pages.need_labelling().overview())),
        Route("/api/label/case", _json(lambda r: pages.label_case(q(r, "case")))),
        Route(
            "/api/label/case",
            _json(lambda r, body: pages.need_labelling().apply(q(r, "case"), body)),
            methods=["POST"],
        ),
        Route("/api/label/progress", _json(lambda r: pages.need_labelling().progress())),
    ]
    return Starlette(routes=routes)


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: one the system picks), never on other hosts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        raise CtxreplayError(f"cannot listen on 127.0.0.1:{port}: {e.strerror}") from None
    sock.listen(128)
    return sock


def serve(pages: Pages, sock: socket.socket) -> None:
    """Serve until interrupted."""
    import uvicorn

    config = uvicorn.Config(make_app(pages), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
