"""``tabverify serve``: the web app and HTTP JSON API (``tabverify.server``) on uvicorn."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer

from tabverify.cli.output import fail, out, text, warn


def _named(values: list[str], option: str) -> dict[str, str]:
    """``NAME=TARGET`` or a bare TARGET (named after its file or folder) -> {name: target}."""
    named: dict[str, str] = {}
    for value in values:
        name, sep, target = value.partition("=")
        if not sep or "://" in name:
            target = value
            name = (
                Path(value.rstrip("/")).stem if "://" not in value else value.rsplit("/", 1)[-1] or "postgres"
            )
        name = name.strip()
        if not name or not target:
            fail(f"{option} {value!r}: write TARGET or NAME=TARGET")
        if name in named:
            fail(f"{option}: two targets are named {name!r}; give one of them a name (NAME=TARGET)")
        named[name] = target
    return named


def serve(
    host: Annotated[
        str,
        typer.Option(
            metavar="HOST", help="Address to listen on; anything but loopback opens the app to the network"
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="Port to listen on (0: any free port)")] = 8000,
    db: Annotated[
        list[str] | None,
        typer.Option(
            "--db",
            metavar="TARGET",
            help="A database users may query and check claims against: a DuckDB/SQLite file, a Parquet/CSV "
            "folder or a postgresql:// URL; NAME=TARGET names it (repeat for several)",
        ),
    ] = None,
    lake: Annotated[
        list[str] | None,
        typer.Option(
            "--lake",
            metavar="LAKE",
            help="A table lake (`tabverify lake index`); NAME=LAKE names it (repeatable)",
        ),
    ] = None,
    max_upload_mb: Annotated[
        float, typer.Option(metavar="N", help="Largest request body in MB; larger ones get 413")
    ] = 10.0,
    time_limit: Annotated[
        float, typer.Option(metavar="SECONDS", help="Wall-clock limit of one request's work; past it, 504")
    ] = 30.0,
    workers: Annotated[
        int,
        typer.Option(metavar="N", help="Worker processes doing the requests' work (verify, crosscheck, ...)"),
    ] = 2,
) -> None:
    """Serve the web app (verify, crosscheck, coref, database pages) and the HTTP JSON API
    (/api/docs). Bound to 127.0.0.1 unless --host says otherwise. Stop with Ctrl-C."""
    try:
        import uvicorn

        from tabverify.server import ServerSettings, create_app
        from tabverify.server.limits import HEADER_TIMEOUT_S, protocol_with_header_deadline
        from tabverify.server.settings import is_loopback
    except ImportError as exc:
        fail(f"the web app needs the web extra ({exc.name} is missing): pip install 'tabverify[web]'")
    if not 0 <= port <= 65535:
        fail(f"--port {port}: choose 0 to 65535")
    if not max_upload_mb > 0 or max_upload_mb > 10_000:
        fail(f"--max-upload-mb {max_upload_mb:g}: choose a size above 0 and at most 10000")
    if not 0 < time_limit <= 3600:
        fail(f"--time-limit {time_limit:g}: choose 0 < SECONDS <= 3600")
    if not 1 <= workers <= 64:
        fail(f"--workers {workers}: choose 1 to 64")
    databases = _named(db or [], "--db")
    lakes = _named(lake or [], "--lake")
    for target in databases.values():
        if "://" not in target and not Path(target).exists():
            fail(f"--db {target}: no such file or folder")
    for target in lakes.values():
        _check_lake(target)
    listener = _listening_socket(host, port)  # a port in use or a foreign address: exit 2 now
    if not is_loopback(host):
        warn(f"--host {host}: the app is open to other machines; anyone who can reach this port can use "
             "it and read the configured databases")  # fmt: skip
    settings = ServerSettings(
        databases=databases, lakes=lakes, max_upload_bytes=int(max_upload_mb * 1024 * 1024),
        time_limit_s=time_limit, workers=workers,
    )  # fmt: skip
    app = create_app(settings)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False,
        # connections beyond this get 503 at once (stalled clients cannot pile up without bound), and
        # Ctrl-C / SIGTERM stop the server within seconds even with requests in flight
        limit_concurrency=256, timeout_graceful_shutdown=5,
        http=protocol_with_header_deadline(min(HEADER_TIMEOUT_S, time_limit)),
    )  # fmt: skip
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host

    original_startup = server.startup

    async def startup(sockets: object = None) -> None:
        await original_startup(sockets=sockets)  # type: ignore[arg-type]
        for listener in server.servers:
            for sock in listener.sockets:
                bound = sock.getsockname()[1]
                out.print(
                    text(f"tabverify serving on http://{shown}:{bound}/ (Ctrl-C to stop)"), soft_wrap=True
                )
                return

    server.startup = startup  # type: ignore[method-assign]
    server.run(sockets=[listener])


def _check_lake(target: str) -> None:
    """Exit 2 with one line, now rather than on the first request, when ``target`` is not a lake the
    app can serve (no lake there, a corrupt one, or an encoder that cannot be loaded by name)."""
    from tabverify.errors import TabverifyError
    from tabverify.lake.store import Lake

    if not Path(target).is_dir():
        fail(f"--lake {target}: not a folder (build one with `tabverify lake index`)")
    try:
        lake = Lake.open(target)
        try:
            lake.check_encoder_name()
        finally:
            lake.close()
    except TabverifyError as exc:
        message = str(exc) if str(exc).startswith(str(Path(target))) else f"{target}: {exc}"
        fail(f"--lake {message}")


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, or exit 2 with one line saying why (a name
    that does not resolve, an address of another machine, a port in use) - before any worker starts."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        fail(f"--host {host}: not an address of this machine ({getattr(exc, 'strerror', None) or exc})")
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(2048)
    except OSError as exc:
        listener.close()
        fail(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); choose another "
             "port, or --port 0 for any free one")  # fmt: skip
    return listener


SERVE_EXAMPLES = """Examples:

\b
  tabverify serve
  tabverify serve --port 8080 --db results/league.duckdb --lake results/demo.lake
  tabverify serve --db f1=formula_1.sqlite --db sales=postgresql://reader@localhost/sales
  tabverify serve --max-upload-mb 5 --time-limit 20 --workers 2
  curl -s localhost:8000/api/check -H 'content-type: application/json' \\
       -d '{"csv": "team,wins\\nhawks,3", "statements": ["the hawks won 3 games"]}'
"""


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the app."""
    app.command("serve", epilog=SERVE_EXAMPLES)(serve)
