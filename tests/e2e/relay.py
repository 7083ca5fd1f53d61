"""A TCP relay between an operator and the API server, for tests that cut the operator off
without disturbing the API server: ``silence()`` cuts the connections and leaves new ones
unanswered (a black hole, as a lost network looks), ``resume()`` forwards again."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

import yaml


class Relay:
    """Forwards loopback connections to ``target``; ``silence()`` cuts them and leaves new ones
    unanswered (a black hole, as a lost network looks), ``resume()`` forwards again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.silent = threading.Event()
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                self.open.append(conn)
            if not self.silent.is_set():
                upstream = socket.create_connection(self.target)
                with self.lock:
                    self.open.append(upstream)
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                s.close()

    def _close_all(self) -> None:
        with self.lock:
            for s in self.open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.open.clear()

    def silence(self) -> None:
        self.silent.set()
        self._close_all()

    def resume(self) -> None:
        self._close_all()  # the held connections end; clients reconnect
        self.silent.clear()

    def close(self) -> None:
        self.listener.close()
        self._close_all()


def relayed_kubeconfig(kubeconfig: Path, path: Path) -> Relay:
    """Write to ``path`` a copy of ``kubeconfig`` whose server is a new relay to its server."""
    config = yaml.safe_load(kubeconfig.read_text())
    [entry] = config["clusters"]
    server = urlsplit(entry["cluster"]["server"])
    relay = Relay((server.hostname or "127.0.0.1", server.port or 443))
    entry["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"  # in the server's certificate
    path.write_text(yaml.safe_dump(config))
    return relay
