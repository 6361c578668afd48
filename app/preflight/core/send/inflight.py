"""Stopping a request before the provider has answered.

``requests`` blocks in one call until the status line and headers arrive: a provider that
queues the request, a slow first token or a non-streaming reply keeps it there up to the
read timeout, and nothing in that call looks at the user's Stop. :func:`call` runs the
blocking call on a helper thread and waits on the cancel event instead:

- **before the request is written** (connecting, or the connection not yet handed out):
  the connection classes mounted by :class:`CancellableAdapter` check the flight just
  before the first byte is written and refuse once it is stopped, so a request stopped
  while connecting never leaves — even when the connection completes later;
- **after it was written** (waiting for the status line): the connection's socket is shut
  down, which wakes the blocked read at once.

Either way :class:`Cancelled` is raised within :data:`CANCEL_POLL_S` +
:data:`JOIN_S`, carrying ``delivered`` (False: nothing was sent; True: the request left
and the provider may have it). A helper thread still blocked in ``connect`` when the
caller gives up ends on its own at the connect timeout, without writing anything.
SOCKS proxies keep their own connection classes: there the stop lands as fast but the
pre-write guard does not apply.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from preflight.core.errors import Cancelled

T = TypeVar("T")

CANCEL_POLL_S = 0.05   # how often the waiting caller looks at the cancel event
JOIN_S = 0.4           # how long a stopped helper may take to end before it is left behind

_local = threading.local()


class Flight:
    """One request in flight: whether its bytes started to leave, and its sockets."""

    def __init__(self, cancel: threading.Event) -> None:
        self._cancel = cancel
        self._stopped = threading.Event()     # set by the caller (cancel, Ctrl+C)
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.written = False

    def stopped(self) -> bool:
        return self._stopped.is_set() or self._cancel.is_set()

    def writing(self, sock: socket.socket | None) -> None:
        """Called on the helper thread just before the request is written: refuse when
        stopped, otherwise remember that bytes leave and which socket carries them."""
        with self._lock:
            if self.stopped():
                raise _cancelled(False, "")
            self.written = True
            if sock is not None:
                self._socks.append(sock)

    def stop(self) -> bool:
        """Shut the in-flight sockets (wakes a blocked read); True when bytes had left."""
        with self._lock:
            self._stopped.set()
            socks, written = list(self._socks), self.written
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass                   # already closed: the blocked call has ended
        return written


def current() -> Flight | None:
    """The flight the calling thread works for (None outside :func:`call`)."""
    return getattr(_local, "flight", None)


def call(fn: Callable[[], T], cancel: threading.Event, name: str,
         discard: Callable[[T], None] = lambda _: None) -> T:
    """``fn()`` on a helper thread, stopped within a second when ``cancel`` is set.

    ``discard`` releases a result that arrives after the caller gave up (closes the
    response). Exceptions of ``fn`` are re-raised here unchanged."""
    if cancel.is_set():
        raise _cancelled(False, name)
    flight = Flight(cancel)
    done = threading.Event()
    box: dict[str, Any] = {}
    lock = threading.Lock()

    def work() -> None:
        _local.flight = flight
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc
        else:
            with lock:
                if "abandoned" in box:
                    discard(value)
                else:
                    box["value"] = value
        finally:
            _local.flight = None
            done.set()

    helper = threading.Thread(target=work, name="preflight-send-request", daemon=True)
    helper.start()
    try:
        while not done.wait(CANCEL_POLL_S):
            if cancel.is_set():
                break
    except BaseException:              # Ctrl+C in the CLI: stop the request as well
        flight.stop()
        raise
    if done.is_set():                  # it ended before Stop: its own outcome
        if "error" in box:
            raise box["error"]
        return box["value"]
    written = flight.stop()
    helper.join(JOIN_S)
    with lock:
        box["abandoned"] = True
        late = box.pop("value", None)
    if late is not None:
        discard(late)
        written = True                 # the provider answered: the request reached it
    raise _cancelled(written, name)


def _cancelled(written: bool, name: str) -> Cancelled:
    if written:
        exc = Cancelled(f"Stopped after the request was sent, before {name} answered.",
                        "The provider may have received the text; it was not re-sent.")
    else:
        exc = Cancelled("Stopped before sending; nothing was sent.")
    exc.delivered = written  # type: ignore[attr-defined]
    return exc


# --- the connection classes that report to the flight --------------------------------------


class _WatchedHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        flight = current()
        if flight is not None:
            if self.sock is None:
                self.connect()         # connect first: stopped meanwhile ⇒ nothing written
            flight.writing(self.sock)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    request = _WatchedHTTPConnection.request  # type: ignore[assignment]


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class CancellableAdapter(HTTPAdapter):
    """A ``requests`` adapter whose connections check the current :class:`Flight`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


def mount(http: Any) -> None:
    """Mount :class:`CancellableAdapter` on a ``requests.Session`` for http and https."""
    adapter = CancellableAdapter()
    http.mount("https://", adapter)
    http.mount("http://", adapter)
