"""The local cluster's certificates pass a strict TLS client's checks (Python 3.13's default,
VERIFY_X509_STRICT): a handshake with the serving certificate, on loopback."""

from __future__ import annotations

import socket
import ssl
import threading

from ansible_operator.devcluster import certs


def test_the_serving_certificate_passes_strict_verification(tmp_path):
    made = certs.generate(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(made.serving_cert, made.serving_key)
    client_ctx = ssl.create_default_context(cafile=str(made.ca_cert))
    client_ctx.verify_flags |= ssl.VERIFY_X509_STRICT  # the default from Python 3.13 on
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass  # the client's verdict is what the test reads

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            client_ctx.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            assert tls.version() is not None
            tls.sendall(b"x")
        thread.join(timeout=10)
