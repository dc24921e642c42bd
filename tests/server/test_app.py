"""The app's shared parts: errors as JSON with the right status, the body limit (413 before the
body is read whole), security headers, the offline API docs, and the server's own start-up."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

from fastapi import Request
from fastapi.testclient import TestClient

from tabverify.server import ServerSettings
from tabverify.server.settings import is_loopback
from tests.server.conftest import LiveServer, app_client


def test_health_and_unknown_routes_answer_json(client: TestClient) -> None:
    assert client.get("/api/health").json()["status"] == "ok"
    missing = client.get("/api/nothing-here")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"status": 404, "message": "Not Found"}}
    wrong_method = client.delete("/api/health")
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["status"] == 405


def test_pages_answer_errors_as_pages(client: TestClient) -> None:
    missing = client.get("/no-such-page")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert 'id="error"' in missing.text and "Not Found" in missing.text


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for path in ("/", "/api/health", "/api/openapi.json", "/nope"):
        headers = client.get(path).headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"


def test_api_docs_are_served_without_the_network(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    assert spec["info"]["title"] == "tabverify" and "/api/health" in spec["paths"]
    docs = client.get("/api/docs")
    assert docs.status_code == 200 and "/api/health" in docs.text
    assert "cdn" not in docs.text.lower() and "https://" not in docs.text


def test_a_declared_oversized_body_is_refused_with_413() -> None:
    with app_client(ServerSettings(max_upload_bytes=1000, workers=1)) as small:
        refused = small.post("/api/health", content=b"x" * 5000)
        assert refused.status_code == 413
        assert (
            refused.json()["error"]["message"]
            == "the request body is larger than the server's limit of 1000 bytes"
        )
        assert small.get("/api/health").status_code == 200  # and it keeps serving


def test_a_body_without_a_length_is_counted_as_it_arrives() -> None:
    from tabverify.server import create_app

    app = create_app(ServerSettings(max_upload_bytes=1000, workers=1))

    @app.post("/api/echo-length")
    async def echo_length(request: Request) -> dict[str, int]:
        return {"length": len(await request.body())}

    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b"y" * 300

    with TestClient(app, raise_server_exceptions=False) as streaming:
        assert streaming.post("/api/echo-length", content=b"z" * 900).json() == {"length": 900}
        refused = streaming.post("/api/echo-length", content=chunks())
        assert refused.status_code == 413 and "limit" in refused.json()["error"]["message"]


def _raw_request(port: int, head: bytes, chunks: list[bytes]) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(head)
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except OSError:  # the server may close the connection once it has answered
            pass
        reply = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            reply += data
        return reply


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(start_server: Any) -> None:
    server: LiveServer = start_server("--max-upload-mb", "0.01", "--workers", "1")
    port = int(server.url.rsplit(":", 1)[1])
    head = (
        b"POST /api/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    chunk = b"x" * 4096
    # 1 MB announced in 4 KB chunks: the answer must come after about 10 KB, not at the end
    body = [b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(256)] + [b"0\r\n\r\n"]
    reply = _raw_request(port, head, body)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"larger than the server's limit" in reply


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")


def _sleep_then_pid(seconds: float) -> int:
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def _app_with_a_slow_route(settings: ServerSettings) -> Any:
    from tabverify.server import create_app
    from tabverify.server.state import workers_of

    app = create_app(settings)

    @app.get("/api/test-sleep")
    async def sleep(request: Request, seconds: float) -> dict[str, int]:
        return {"pid": await workers_of(request).run(_sleep_then_pid, seconds)}

    return app


def test_a_request_past_the_time_limit_gets_504_and_the_server_goes_on() -> None:
    # the limit leaves room for a new worker to start (spawned: it imports the package) after the kill
    app = _app_with_a_slow_route(ServerSettings(time_limit_s=4.0, workers=1))
    with TestClient(app, raise_server_exceptions=False) as slow:
        refused = slow.get("/api/test-sleep", params={"seconds": 20})
        assert refused.status_code == 504
        assert refused.json()["error"]["message"].startswith(
            "the request took longer than the server's limit"
        )
        assert slow.get("/api/test-sleep", params={"seconds": 0}).status_code == 200


def test_a_quick_request_is_served_while_a_long_one_runs() -> None:
    import threading
    import time

    app = _app_with_a_slow_route(ServerSettings(time_limit_s=30.0, workers=2))
    with TestClient(app, raise_server_exceptions=False) as shared:
        shared.get("/api/test-sleep", params={"seconds": 0})  # start the workers
        long_one = threading.Thread(
            target=shared.get, args=("/api/test-sleep",), kwargs={"params": {"seconds": 4}}
        )
        long_one.start()
        time.sleep(0.3)
        started = time.monotonic()
        assert shared.get("/api/health").status_code == 200
        assert shared.get("/api/test-sleep", params={"seconds": 0}).status_code == 200
        assert time.monotonic() - started < 3.0
        assert long_one.is_alive()  # the long request was still running all along
        long_one.join()


def test_the_readme_curl_example_answers_as_shown(client: TestClient) -> None:
    import json
    import re

    from tests.server.conftest import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"curl -s localhost:8000(/api/\S+) .*?-d '(.*?)'", readme, flags=re.S)
    assert found is not None, "the README's curl example is gone"
    body = json.loads(found.group(2).replace("\\\\", "\\"))
    answer = client.post(found.group(1), json=body)
    assert answer.status_code == 200, answer.text
    assert [v["label"] for v in answer.json()["verdicts"]] == ["ENTAILED"]


def test_serve_refuses_a_port_in_use_and_a_foreign_host_with_one_line() -> None:
    import subprocess
    import sys

    from tests.server.conftest import ROOT

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for args, message in (
            (["--port", str(port)], f"--host 127.0.0.1 --port {port}: cannot listen there"),
            (
                ["--host", "no-such-host.invalid", "--port", "0"],
                "--host no-such-host.invalid: not an address",
            ),
            (["--port", "70000"], "--port 70000: choose 0 to 65535"),
        ):
            done = subprocess.run(
                [sys.executable, "-m", "tabverify.cli", "serve", *args],
                capture_output=True, text=True, timeout=60, cwd=ROOT,
            )  # fmt: skip
            assert done.returncode == 2, done.stderr
            errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
            assert len(errors) == 1 and message in errors[0], done.stderr
            assert "Traceback" not in done.stderr
