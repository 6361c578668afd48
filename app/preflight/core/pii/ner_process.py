"""The entity recognizer's model in a second process, beside the pattern recognizers.

A detection pass spends about three fifths of its time in the NER model and the rest in
the pattern recognizers, the context step and the merging, one after the other on one
core. With a :class:`NerProcess` the model reads a text's windows in a helper process
(spawned once per model folder, the model loaded there) while this process runs the
recognizers that do not need entities on each window (:mod:`.early_pass`), then
everything else as the window's entities arrive: the same model, the same tokenizer, the
same entities (spaCy's entity recognizer gives each text the same entities whatever
batch it is read in), in a little more than the pattern work's time on a machine with
two free cores.

Nothing here is needed for a correct detection: a text shorter than
:data:`PARALLEL_MIN_CHARS`, a helper still loading or busy with another caller's text, or
one that failed, leaves the work to this process's own copy of the model (a failure is
logged and the helper is not used again in this process). A detection stopped half-way
tells the helper to stop at its next batch; what it still sends is read and dropped
before its next text, so no answer is ever taken for another text's. The helper keeps no
text after answering, writes nothing and opens no connection; it ends when this process
closes its end of the pipe or exits.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Texts (the NER model's input of one pass) at least this long go to the helper: below
#: it the round trip costs about what reading side by side saves.
PARALLEL_MIN_CHARS = 500
#: Characters per batch the helper reads and answers. Chosen on the speed benchmark's
#: corpora (:mod:`preflight_eval.bench_detect`: judgments, e-mails, one long paragraph),
#: paired against 500 (``bench_detect_versions``): since the recognizers read units of
#: several paragraphs, this process has an early pass of up to eight units to run while
#: the helper reads a batch, and the model reads a large batch faster (per 1,000 words,
#: about two thirds of its time in 500-character batches); 1,500, 4,000, 8,000 and 16,000
#: were tried, 8,000 gave the least wall time on judgments and e-mails.
STREAM_BATCH_CHARS = 8_000
#: Seconds without an answer after which the helper counts as failed.
ANSWER_TIMEOUT = 60.0

Entities = list[tuple[int, int, str]]      # (start_char, end_char, label) of one text


class NerProcess:
    """A helper process answering ``texts -> entities`` with the model at ``path``.

    :meth:`stream` is the only way in: ``None`` when the helper cannot take the text now
    (loading, busy, failed), else the :class:`Answers` of each batch in order."""

    def __init__(self, path: Path, exclude: Sequence[str]) -> None:
        self.path = Path(path)
        self.exclude = list(exclude)
        self.cpu_seconds = 0.0          # the helper's CPU time so far (benchmarks)
        self.answered = 0               # batches it answered (benchmarks, tests)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._proc: Any = None
        self._ready = False
        self._failed = False
        self._unfinished = False       # the last text's "end" has not been read yet

    def start(self) -> None:
        """Spawn the helper (it loads the model while the caller goes on)."""
        with self._lock:
            self._spawn()

    def _spawn(self) -> None:
        if self._proc is not None or self._failed:
            return
        ctx = multiprocessing.get_context("spawn")  # safe beside threads and Qt
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(str(self.path), self.exclude, child),
                           name="preflight-ner", daemon=True)
        try:
            proc.start()
        except (OSError, RuntimeError) as exc:
            # RuntimeError: asked from a process that may not have children
            self._fail(f"the helper process could not start ({type(exc).__name__})")
            return
        child.close()
        self._conn, self._proc, self._ready = parent, proc, False

    def stream(self, batches: list[list[str]]) -> Answers | None:
        """Start the helper on ``batches`` (read in order, answered batch by batch);
        ``None`` if it cannot take them now. Close the answers when done."""
        if not self._lock.acquire(blocking=False):
            return None                         # another detection is using it
        try:
            if not self._is_ready():
                self._lock.release()
                return None
            while self._unfinished:             # what it sent for the last text
                if not self._conn.poll(ANSWER_TIMEOUT):
                    raise TimeoutError("no answer")
                self._unfinished = self._conn.recv()[0] != "end"
            self._conn.send(batches)
        except (OSError, EOFError, ValueError, TimeoutError) as exc:
            self._fail(f"the helper process went away ({type(exc).__name__})")
            self._lock.release()
            return None
        return Answers(self, len(batches))

    def wait_ready(self, timeout: float) -> bool:
        """Whether the helper has loaded its model, waiting up to ``timeout`` seconds
        (benchmarks and tests; detection never waits for it)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if self._is_ready():
                    return True
                if self._failed:
                    return False
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _is_ready(self) -> bool:
        if self._failed or self._proc is None:
            return False
        if not self._ready:
            if not self._conn.poll(0):
                if not self._proc.is_alive():
                    self._fail("the helper process ended while loading")
                return False
            try:
                kind, payload, cpu = self._conn.recv()
            except (EOFError, OSError) as exc:
                self._fail(f"the helper process ended while loading ({type(exc).__name__})")
                return False
            self.cpu_seconds = cpu
            if kind != "ready":
                self._fail(f"the helper could not load the model ({payload})")
                return False
            self._ready = True
        return True

    def _fail(self, why: str) -> None:
        log.warning("NER helper not used: %s; the model runs in this process", why)
        self._failed = True
        self._end()

    def _end(self) -> None:
        conn, proc = self._conn, self._proc
        self._conn = self._proc = None
        self._ready = self._unfinished = False
        if conn is not None:
            conn.close()                        # the helper reads EOF and exits
        if proc is not None:
            proc.join(0.2)                      # a helper waiting for work ends at once
            if proc.is_alive():                 # one still loading or reading: no waiting
                proc.terminate()
                proc.join(1.0)

    def close(self) -> None:
        with self._lock:
            self._end()


class Answers:
    """The helper's answers to one :meth:`NerProcess.stream`, batch ``0, 1, …`` in turn.

    :meth:`stop_before` leaves the batches from ``n`` on to the caller (who reads them
    itself rather than wait); :meth:`close` (always) stops the helper at its next batch
    and hands it back (what it still sends is read before its next text)."""

    def __init__(self, helper: NerProcess, count: int) -> None:
        self.helper = helper
        self.read = 0                   # answers received
        self.limit = count              # the helper reads the batches below this
        self._ended = False             # the helper's "end" was received
        self._open = True

    def ready(self) -> bool:
        """Whether the next answer has arrived (without waiting)."""
        return bool(self._guard(lambda: self.helper._conn.poll(0)))

    def stop_before(self, n: int) -> None:
        """The helper reads no batch from ``n`` on (it may have read some already)."""
        if n < self.limit:
            self.limit = n
            self._guard(lambda: self.helper._conn.send(n))

    def next(self) -> list[Entities]:
        """The entities of batch number :attr:`read` (waiting for them)."""
        if self.read >= self.limit:
            raise HelperFailed("asked past the batches left to the helper")
        kind, payload = self._receive()
        if kind != "ok":
            self.helper._fail(f"the helper stopped early ({kind}: {payload})")
            self._close(failed=True)
            raise HelperFailed(str(payload))
        self.read += 1
        self.helper.answered += 1
        return payload

    def close(self) -> None:
        self._close(failed=False)

    def _close(self, failed: bool) -> None:
        if not self._open:
            return
        self._open = False
        try:
            if not failed and not self.helper._failed:
                self.stop_before(0)
                # what it still sends is read at the next stream(), not waited for now
                self.helper._unfinished = not self._ended
        except HelperFailed:
            pass
        finally:
            self.helper._lock.release()

    def _receive(self) -> tuple[str, Any]:
        def get() -> tuple[str, Any]:
            if not self.helper._conn.poll(ANSWER_TIMEOUT):
                raise TimeoutError("no answer")
            kind, payload, cpu = self.helper._conn.recv()
            self.helper.cpu_seconds = cpu
            return kind, payload

        kind, payload = self._guard(get)
        if kind == "end":
            self._ended = True
        return kind, payload

    def _guard(self, call: Any) -> Any:
        try:
            return call()
        except (OSError, EOFError, TimeoutError, AttributeError) as exc:
            # AttributeError: a failure already dropped the connection
            self.helper._fail(f"the helper process failed ({type(exc).__name__})")
            self._close(failed=True)
            raise HelperFailed(str(exc)) from None

    def __del__(self) -> None:
        self.close()


class HelperFailed(Exception):
    """The helper stopped answering in the middle of a text (the caller reads the rest
    itself)."""


@dataclasses.dataclass(frozen=True)
class Found:
    """The helper's entities of one text (the caller puts them on its own tokens)."""

    entities: Entities


def side_by_side(engine: Any, batches: list[list[str]], answers: Answers,
                 spare: Callable[[], bool] = lambda: False) -> Iterator[Any]:
    """For each text of ``batches`` in order, the helper's entities (:class:`Found`) or
    this process's artifacts: whenever the next answer has not arrived, this process
    does ``spare`` work (one piece per call; False when there is none) or else reads a
    batch from the end itself (the helper stops before it), so neither side waits for the
    other while there is work left. If the helper fails, this process reads every batch
    not read yet."""

    def read_here(batch: list[str]) -> list[Any]:
        return [a for _, a in engine.process_batch(batch, "en", batch_size=len(batch))]

    here: dict[int, list[Any]] = {}
    try:
        for n, batch in enumerate(batches):
            try:
                while n < answers.limit - 1 and not answers.ready():
                    if not spare():
                        answers.stop_before(answers.limit - 1)
                        here[answers.limit] = read_here(batches[answers.limit])
                if n < answers.limit:
                    while not answers.ready() and spare():
                        pass
                    found = answers.next()
                    if len(found) != len(batch):
                        raise HelperFailed("an answer for another batch")
                    yield from map(Found, found)
                    continue
            except HelperFailed:
                answers.close()
                for m in range(n, len(batches)):
                    yield from here.pop(m, None) or read_here(batches[m])
                return
            yield from here.pop(n)
    finally:
        answers.close()


_helpers: dict[tuple[Path, tuple[str, ...]], NerProcess] = {}
_helpers_lock = threading.Lock()


def shared_helper(path: Path, exclude: Sequence[str]) -> NerProcess:
    """The process's one helper for the model at ``path`` (started on first request):
    detectors over the same model share it, as they share the machine's cores."""
    key = (Path(path).resolve(), tuple(exclude))
    with _helpers_lock:
        helper = _helpers.get(key)
        if helper is None:
            helper = _helpers[key] = NerProcess(path, exclude)
            helper.start()
        return helper


@atexit.register
def _close_all() -> None:
    with _helpers_lock:
        helpers = list(_helpers.values())
        _helpers.clear()
    for helper in helpers:
        helper.close()


# --- the helper's side ------------------------------------------------------------------

def _serve(path: str, exclude: list[str], conn: Any) -> None:
    """Load the model, say so, then answer each list of batches batch by batch until the
    parent closes the pipe."""
    import signal

    # Ctrl-C in a terminal reaches the whole process group: the parent decides
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from preflight.core.pii.presidio_loader import import_presidio

        import_presidio()           # before spaCy, as the detector does (detector.py)
        from preflight.core.pii.lean_nlp import load_pipeline, one_blas_thread

        nlp = load_pipeline(Path(path), exclude)
    except Exception as exc:  # noqa: BLE001 - any load failure is reported, not raised
        _say(conn, ("error", type(exc).__name__, time.process_time()))
        return
    if not _say(conn, ("ready", None, time.process_time())):
        return                                  # the parent is gone already
    with one_blas_thread():
        while True:
            try:
                batches = conn.recv()
                if isinstance(batches, int):
                    continue                    # a stop for a text already finished
                limit = len(batches)
                for n, batch in enumerate(batches):
                    while conn.poll(0):         # the parent took the rest over
                        limit = min(limit, conn.recv())
                    if n >= limit:
                        break
                    try:
                        docs = nlp.pipe(batch, batch_size=len(batch))
                        answer = [[(e.start_char, e.end_char, e.label_) for e in doc.ents]
                                  for doc in docs]
                    except Exception as exc:  # noqa: BLE001 - reported to the parent
                        conn.send(("error", type(exc).__name__, time.process_time()))
                        break
                    conn.send(("ok", answer, time.process_time()))
                conn.send(("end", None, time.process_time()))
            except (EOFError, OSError):
                return


def _say(conn: Any, message: tuple[str, Any, float]) -> bool:
    """Send ``message``; False when the parent has closed the pipe (it exited or gave
    up on this helper), which ends the helper quietly."""
    try:
        conn.send(message)
        return True
    except (EOFError, OSError):
        return False
