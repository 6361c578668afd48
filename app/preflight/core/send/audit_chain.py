"""The audit chain: what makes the audit log tamper-evident, and how it is checked.

What is chained — immutable *events*, not records. A record changes after it is written
(it is begun before the request leaves, then the answer, the status, the realized utility
and the flow flag arrive later, some of them long after the send), so a hash over the
record would either break at every legitimate update or only cover finished records and
leave a send in flight unprotected. Instead every write to a record appends one event in
the same SQLite transaction: ``begin`` (the whole new record), ``update`` (the columns
that changed) or ``adopt`` (a record written before the chain existed, chained as found
when the log was upgraded). An event carries, per column it writes, the SHA-256 of the
column's canonical value (:func:`field_digest`), the hash of the previous event and its
own hash over its canonical content (:meth:`ChainEvent.body`). Events hold digests, not
values: a streaming answer is saved every second or so, and its text once per save would
grow the log quadratically; the record row keeps the values.

:func:`verify_chain` replays the events: each must follow the previous one (its ``seq``
one higher, its ``prev`` the previous hash) and hash to its own hash; folding a record's
events gives the digest each of its columns must have, which the stored row is checked
against. So a changed value, a deleted or added row, an edited, deleted or reordered event
are all found, and a record still in flight verifies like any other (its row matches its
events so far). The log's head (last seq and hash) is also kept in its ``meta`` table,
in the log's record outside the file (:mod:`.audit_anchor`) and in the central store:
the last two catch a log cut off at its end, even when its ``meta`` was cut too.

What the chain cannot do alone: it has no secret, so someone who rewrites a record *and*
every later event hash, consistently, is not detected by it — the seal of the local log
(:mod:`.audit_seal`: a keyed MAC per event, its key in the log's outside record) and the
central store (append-only for the laptops) are what catch that.

The same functions check the local SQLite log, the PostgreSQL copy and an export file:
they take plain events and plain rows.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Iterable, Mapping, Sequence

CHAIN_VERSION = 1
GENESIS = "0" * 64
EVENT_KINDS = ("begin", "update", "adopt")

# Column types (SQLite affinity) — how a CSV cell is read back before it is digested.
REAL_COLUMNS = frozenset({"epsilon", "cost_estimate", "cost", "predicted_utility",
                          "realized_utility", "privacy_epsilon"})
INTEGER_COLUMNS = frozenset({"id", "input_tokens", "output_tokens", "attempts", "delivered",
                             "flow_pending", "pid", "turn"})
JSON_COLUMNS = frozenset({"overrides", "requests", "doc_minhash"})


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: one text for one value."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_value(column: str, value: Any) -> Any:
    """The value a column's digest is taken over: bytes as UTF-8 text (base64 when not
    UTF-8), JSON text columns parsed, and an empty text the same as none (a CSV export
    cannot tell them apart)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(raw).decode("ascii")}
    if value == "":
        return None
    if column in JSON_COLUMNS and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def field_digest(column: str, value: Any) -> str:
    return hashlib.sha256(canonical_json(canonical_value(column, value)).encode()).hexdigest()


def row_digests(row: Mapping[str, Any], columns: Iterable[str]) -> dict[str, str]:
    return {c: field_digest(c, row.get(c)) for c in columns}


@dataclass(frozen=True)
class ChainEvent:
    """One write to one record (see the module doc)."""

    seq: int
    record_id: int
    at: str
    kind: str
    fields: Mapping[str, str]      # column → digest of its canonical value
    prev: str
    hash: str

    @staticmethod
    def body(seq: int, record_id: int, at: str, kind: str, fields: Mapping[str, str],
             prev: str) -> str:
        return canonical_json({"v": CHAIN_VERSION, "seq": seq, "record": record_id,
                               "at": at, "kind": kind, "fields": dict(fields),
                               "prev": prev})

    @classmethod
    def make(cls, seq: int, record_id: int, at: str, kind: str, fields: Mapping[str, str],
             prev: str) -> "ChainEvent":
        digest = hashlib.sha256(cls.body(seq, record_id, at, kind, fields, prev).encode())
        return cls(seq, record_id, at, kind, dict(fields), prev, digest.hexdigest())

    def computed_hash(self) -> str:
        body = self.body(self.seq, self.record_id, self.at, self.kind, self.fields, self.prev)
        return hashlib.sha256(body.encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "record_id": self.record_id, "at": self.at,
                "kind": self.kind, "fields": dict(self.fields), "prev": self.prev,
                "hash": self.hash}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ChainEvent":
        fields = data["fields"]
        if isinstance(fields, str):
            fields = json.loads(fields)
        return cls(int(data["seq"]), int(data["record_id"]), str(data["at"]),
                   str(data["kind"]), dict(fields), str(data["prev"]), str(data["hash"]))


@dataclass(frozen=True)
class Problem:
    """One finding of :func:`verify_chain` (never a value: only ids and column names)."""

    what: str
    record_id: int | None = None
    seq: int | None = None

    def __str__(self) -> str:
        return self.what


@dataclass(frozen=True)
class VerifyReport:
    events: int
    records: int
    adopted: int                   # records chained as found at the upgrade
    head: tuple[int, str]          # last event's (seq, hash)
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()    # facts that are not problems (sealed as found, …)
    seal: str = ""                 # "sealed" | "unsealed" | "not checked" | "export" | …
    cannot_detect: tuple[str, ...] = ()   # what this check could not see, in words

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first(self) -> Problem | None:
        """The first problem that names a record (else the first one)."""
        named = [p for p in self.problems if p.record_id is not None]
        return named[0] if named else (self.problems[0] if self.problems else None)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "events": self.events, "records": self.records,
                "adopted": self.adopted, "head": {"seq": self.head[0], "hash": self.head[1]},
                "first_problem": str(self.first) if self.first else None,
                "problems": [{"what": p.what, "record_id": p.record_id, "seq": p.seq}
                             for p in self.problems],
                "seal": self.seal or None, "notes": list(self.notes),
                "cannot_detect": list(self.cannot_detect)}


def verify_chain(events: Iterable[ChainEvent], records: Iterable[Mapping[str, Any]], *,
                 columns: Sequence[str] | None = None,
                 expected_head: tuple[int, str] | None = None,
                 versions: Iterable[tuple[int, Mapping[str, Any]]] = ()) -> VerifyReport:
    """Check ``events`` (in storage order) and the ``records`` they describe.

    ``columns``: the record columns present in ``records`` (an export leaves some out;
    None: every chained column). ``expected_head``: the (seq, hash) the log says it
    ended at. ``versions``: earlier values of records as (the seq of the event they
    reflect, values) — the central store keeps every version; each must match its
    record's events up to that one. Problems come in order: the chain's (by seq), then
    the records' (by id).
    """
    chain: list[Problem] = []
    states: dict[int, dict[str, str]] = {}
    at_seq: dict[int, list[Mapping[str, Any]]] = {}
    for seq, row in versions:
        at_seq.setdefault(seq, []).append(row)
    last_seq, last_hash, count, adopted = 0, GENESIS, 0, 0
    for ev in events:
        count += 1
        where = f"record {ev.record_id} (event {ev.seq})"
        if ev.seq <= last_seq:
            chain.append(Problem(f"{where} is out of order: events were reordered",
                                 ev.record_id, ev.seq))
        elif ev.seq > last_seq + 1:
            gap = (f"event {last_seq + 1}" if ev.seq == last_seq + 2
                   else f"events {last_seq + 1}-{ev.seq - 1}")
            chain.append(Problem(f"{gap} before {where} are missing: records or their "
                                 "changes were deleted", None, ev.seq))
        elif ev.prev != last_hash:
            chain.append(Problem(f"{where} does not follow the event before it: an "
                                 "earlier event was changed, deleted or reordered",
                                 ev.record_id, ev.seq))
        if ev.computed_hash() != ev.hash:
            chain.append(Problem(f"{where} was altered (its hash does not match its "
                                 "content)", ev.record_id, ev.seq))
        if ev.kind not in EVENT_KINDS:
            chain.append(Problem(f"{where} has an unknown kind", ev.record_id, ev.seq))
        elif ev.kind == "update":
            if ev.record_id not in states:
                chain.append(Problem(f"{where} changes a record that was never begun",
                                     ev.record_id, ev.seq))
            states.setdefault(ev.record_id, {}).update(ev.fields)
        else:
            if ev.record_id in states:
                chain.append(Problem(f"{where} begins a record a second time",
                                     ev.record_id, ev.seq))
            adopted += ev.kind == "adopt"
            states[ev.record_id] = dict(ev.fields)
        for row in at_seq.pop(ev.seq, ()):
            rid = int(row["id"])
            if rid != ev.record_id:
                chain.append(Problem(f"the version stored at {where} names record {rid}: "
                                     "records were renumbered or added outside Preflight",
                                     ev.record_id, ev.seq))
                continue
            changed = _changed_column(states[rid], row, columns)
            if changed is not None:
                chain.append(Problem(f"record {rid}'s version stored at event {ev.seq} was "
                                     f"changed (its {changed} differs from the chained "
                                     "value)", rid, ev.seq))
        last_seq, last_hash = max(last_seq, ev.seq), ev.hash
    for seq, rows in sorted(at_seq.items()):
        for row in rows:
            chain.append(Problem(f"record {row['id']}'s version stored at event {seq} has "
                                 "no such event: it was written outside Preflight",
                                 int(row["id"]), seq))
    if expected_head is not None and expected_head[0] > 0:
        head_seq, head_hash = expected_head
        if last_seq < head_seq:
            chain.append(Problem(f"events {last_seq + 1}-{head_seq} are missing: the log "
                                 "was cut off after its last remaining record",
                                 None, last_seq + 1))
        elif last_seq == head_seq and last_hash != head_hash:
            chain.append(Problem(f"the last event ({head_seq}) is not the one the log "
                                 "recorded as its head: it was rewritten", None, head_seq))
    found = _check_records(states, records, columns)
    return VerifyReport(count, found[1], adopted, (last_seq, last_hash),
                        tuple(chain) + found[0])


def _changed_column(state: Mapping[str, str], row: Mapping[str, Any],
                    columns: Sequence[str] | None) -> str | None:
    """The first column of ``row`` whose value does not have its chained digest. A column
    the record's events never had (added to the schema after it was written) must be
    none."""
    for col in (columns if columns is not None else state):
        if col == "id":
            continue
        if col not in state and canonical_value(col, row.get(col)) is None:
            continue
        if state.get(col) != field_digest(col, row.get(col)):
            return col
    return None


def _check_records(states: Mapping[int, Mapping[str, str]],
                   records: Iterable[Mapping[str, Any]],
                   columns: Sequence[str] | None) -> tuple[tuple[Problem, ...], int]:
    problems: list[Problem] = []
    seen: set[int] = set()
    for row in records:
        rid = int(row["id"])
        seen.add(rid)
        state = states.get(rid)
        if state is None:
            problems.append(Problem(f"record {rid} has no chain events: it was added "
                                    "outside Preflight, or its events were removed", rid))
            continue
        changed = _changed_column(state, row, columns)
        if changed is not None:
            problems.append(Problem(f"record {rid} was changed (its {changed} differs "
                                    "from the chained value)", rid))
    for rid in sorted(set(states) - seen):
        problems.append(Problem(f"record {rid} is missing: it was deleted", rid))
    ids = sorted(set(states) | seen)
    for a, b in pairwise(ids):
        if b > a + 1:
            gone = f"record {a + 1}" if b == a + 2 else f"records {a + 1}-{b - 1}"
            problems.append(Problem(f"{gone} missing: deleted with their events", a + 1))
    problems.sort(key=lambda p: p.record_id if p.record_id is not None else -1)
    return tuple(problems), len(seen)
