"""Token embedding spaces for d_X-privacy.

A :class:`TokenSpace` gives the d_X mechanism three things: a tokenizer that maps text to
token ids with exact character offsets, the embedding matrix φ (one row per token id),
and the *candidate vocabulary* — the token ids the mechanism may output (printable
pieces only). Three spaces ship:

- :class:`GGUFTokenSpace` (default): the SLM's own token embedding matrix read from its
  GGUF file (``token_embd.weight``, dequantized with ``gguf``), tokenized by llama.cpp.
- :class:`HFTokenSpace`: input embeddings of a local Hugging Face / sentence-transformers
  model folder, tokenized by its fast tokenizer.
- :class:`WordVectorSpace`: a word-vector text file in GloVe format, word-level tokens.

Derived arrays (float32 matrix, candidate ids, pieces) are cached under
``cache_dir()/dx/<sha256 of the source file>`` so later loads skip dequantization.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from preflight.core import paths
from preflight.core.errors import InputError, ModelUnavailableError

log = logging.getLogger(__name__)

#: Characters allowed in an output piece besides ``str.isprintable()`` ones.
_ALLOWED_WHITESPACE = frozenset("\t\n\r")
#: Bump when the cached arrays' layout or the vocabulary filter changes.
_CACHE_VERSION = 3  # 3: pieces longer than 32 bytes are read whole (were empty)

VOCABULARY_FILTER_RULE = (
    "keep a token only if it is not a control/special/unknown/unused token, its bytes "
    "decode as complete UTF-8 (no partial byte tokens), it is not empty, and every "
    "character is printable or one of tab, newline, carriage return (no U+FFFD)"
)


@dataclass(frozen=True)
class Tokenization:
    """Token ids of a text and where they sit in it.

    Tokens are grouped into *units*: the smallest runs of consecutive tokens whose
    boundaries fall on character boundaries (a byte-level tokenizer may split one emoji
    over several tokens). ``unit_of[t]`` is token ``t``'s unit; unit ``u`` covers
    ``text[unit_start[u]:unit_end[u]]``. Text outside every unit (e.g. spaces between
    the words of a word-level space) is never changed.
    """

    ids: np.ndarray          # (T,) int64 token ids
    unit_of: np.ndarray      # (T,) int64
    unit_start: np.ndarray   # (U,) int64 character offsets
    unit_end: np.ndarray     # (U,) int64


@runtime_checkable
class TokenSpace(Protocol):
    """What the d_X mechanism needs from an embedding space."""

    name: str            # human-readable embedding name ("SmolLM2-135M-Instruct token_embd")
    key: str             # sha256 of the source file(s): names caches and calibrations

    @property
    def matrix(self) -> np.ndarray: ...          # (V, n) float32, row = token id

    @property
    def candidate_ids(self) -> np.ndarray: ...   # sorted int64 ids allowed as output

    def tokenize(self, text: str) -> Tokenization: ...

    def piece(self, token_id: int) -> bytes: ...  # the token's bytes in text

    def filter_info(self) -> dict: ...           # {"rule", "kept", "total", ...}


# --------------------------------------------------------------------------- helpers


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hash_cache_path() -> Path:
    return paths.cache_dir() / "dx" / "file_hashes.json"


_hash_lock = threading.Lock()


def cached_file_sha256(path: Path) -> str:
    """sha256 of ``path``, remembered by (size, mtime) so big files are hashed once."""
    path = Path(path).resolve()
    st = path.stat()
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    store = _hash_cache_path()
    with _hash_lock:
        data: dict = {}
        if store.exists():
            try:
                data = json.loads(store.read_text("utf-8"))
            except (OSError, ValueError):
                data = {}
        hit = data.get(str(path))
        if hit and hit.get("stamp") == stamp:
            return hit["sha256"]
        digest = file_sha256(path)
        data[str(path)] = {"stamp": stamp, "sha256": digest}
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), "utf-8")
        tmp.replace(store)
        return digest


def is_printable_piece(piece: bytes) -> tuple[bool, str]:
    """(keep, reason) for one token's bytes under :data:`VOCABULARY_FILTER_RULE`."""
    try:
        s = piece.decode("utf-8")
    except UnicodeDecodeError:
        return False, "partial_utf8"
    if not s:
        return False, "empty"
    if "\ufffd" in s or not all(c.isprintable() or c in _ALLOWED_WHITESPACE for c in s):
        return False, "non_printable"
    return True, "kept"


def units_from_byte_pieces(text: str, pieces: Sequence[bytes]) -> tuple[np.ndarray, ...]:
    """Group byte-level tokens into character-aligned units.

    Returns (unit_of, unit_start, unit_end). Raises InputError if the pieces do not
    spell the text exactly (a tokenizer that normalizes would break the offsets).
    """
    raw = text.encode("utf-8")
    if b"".join(pieces) != raw:
        raise InputError(
            "The d_X tokenizer did not reproduce the text exactly, so offsets cannot be kept.",
            "Use a different embedding space for d_X or remove unusual control characters.",
        )
    # byte offset -> char offset, defined only on character boundaries
    char_at = np.full(len(raw) + 1, -1, dtype=np.int64)
    pos = 0
    for ci, ch in enumerate(text):
        char_at[pos] = ci
        pos += len(ch.encode("utf-8"))
    char_at[pos] = len(text)
    T = len(pieces)
    unit_of = np.empty(T, dtype=np.int64)
    starts: list[int] = []
    ends: list[int] = []
    b = 0
    open_unit = False
    for t, p in enumerate(pieces):
        if not open_unit:
            starts.append(int(char_at[b]))
            open_unit = True
        unit_of[t] = len(starts) - 1
        b += len(p)
        if char_at[b] >= 0:      # token ends on a character boundary: close the unit
            ends.append(int(char_at[b]))
            open_unit = False
    if open_unit:  # cannot happen for valid UTF-8 input; keep offsets sane anyway
        ends.append(len(text))
    return unit_of, np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)


class _ArrayCache:
    """npz/json files under cache_dir()/dx/<key>/ (rebuildable, written atomically)."""

    def __init__(self, key: str) -> None:
        self.dir = paths.cache_dir() / "dx" / key

    def load(self, name: str) -> dict[str, np.ndarray] | None:
        f = self.dir / f"{name}.v{_CACHE_VERSION}.npz"
        if not f.exists():
            return None
        try:
            with np.load(f, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:  # corrupt cache: rebuild
            log.warning("ignoring unreadable cache %s: %s", f.name, exc)
            return None

    def save(self, name: str, **arrays: np.ndarray) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        f = self.dir / f"{name}.v{_CACHE_VERSION}.npz"
        tmp = self.dir / f"{name}.v{_CACHE_VERSION}.tmp.npz"
        np.savez(tmp, **arrays)
        tmp.replace(f)


class _BaseSpace:
    """Shared machinery: candidate filter, pieces, cache."""

    name: str = ""
    key: str = ""
    _matrix: np.ndarray
    _candidates: np.ndarray
    _pieces: list[bytes]
    _filter_counts: dict[str, int]

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix

    @property
    def candidate_ids(self) -> np.ndarray:
        return self._candidates

    @property
    def vocab_size(self) -> int:
        return int(self._matrix.shape[0])

    @property
    def dim(self) -> int:
        return int(self._matrix.shape[1])

    def piece(self, token_id: int) -> bytes:
        return self._pieces[int(token_id)]

    def filter_info(self) -> dict:
        return {
            "rule": VOCABULARY_FILTER_RULE,
            "kept": int(len(self._candidates)),
            "total": self.vocab_size,
            "dropped": {k: v for k, v in self._filter_counts.items() if k != "kept"},
        }

    def _build_filter(self, special: Sequence[bool]) -> None:
        counts = {"kept": 0, "special": 0, "partial_utf8": 0, "empty": 0, "non_printable": 0}
        keep = []
        for tid, p in enumerate(self._pieces):
            if special[tid]:
                counts["special"] += 1
                continue
            ok, why = is_printable_piece(p)
            counts[why] += 1
            if ok:
                keep.append(tid)
        self._candidates = np.asarray(keep, dtype=np.int64)
        self._filter_counts = counts


# --------------------------------------------------------------------------- GGUF


_CONTROL_LIKE_ATTRS = (1 << 0) | (1 << 1) | (1 << 3)   # UNKNOWN | UNUSED | CONTROL


class GGUFTokenSpace(_BaseSpace):
    """The token embedding matrix of a GGUF language model, tokenized by llama.cpp."""

    def __init__(self, gguf_path: Path | str | None = None) -> None:
        if gguf_path is None:
            from preflight.runtime.models import ModelManager

            gguf_path = ModelManager().path("slm")
        self.path = Path(gguf_path)
        if not self.path.is_file():
            raise ModelUnavailableError(
                f"The embedding model file for d_X does not exist: {self.path}.",
                "Install the models with `preflight models install`.",
            )
        self.key = cached_file_sha256(self.path)
        self._lock = threading.Lock()
        self._vocab = self._load_vocab()
        n_vocab = self._vocab.n_vocab()
        cache = _ArrayCache(self.key)
        hit = cache.load("gguf_space")
        if hit is not None and hit["matrix"].shape[0] == n_vocab:
            self._matrix = hit["matrix"]
            self._pieces = [bytes(b) for b in _unpack_bytes(hit["pieces"], hit["piece_ends"])]
            self._candidates = hit["candidates"].astype(np.int64)
            self._filter_counts = json.loads(str(hit["filter_counts"]))
            self.name = str(hit["label"])
            return
        self._matrix, self.name = self._read_embedding()
        if self._matrix.shape[0] != n_vocab:
            raise ModelUnavailableError(
                f"{self.path.name}: the embedding has {self._matrix.shape[0]} rows but the "
                f"tokenizer {n_vocab} tokens.",
                "Choose a GGUF whose token_embd.weight matches its vocabulary.",
            )
        self._pieces = [_token_piece(self._vocab, i) for i in range(n_vocab)]
        attrs = [self._vocab._model.token_get_attr(i) for i in range(n_vocab)]
        self._build_filter([bool(a & _CONTROL_LIKE_ATTRS) for a in attrs])
        packed, ends = _pack_bytes(self._pieces)
        cache.save(
            "gguf_space",
            matrix=self._matrix,
            pieces=packed,
            piece_ends=ends,
            candidates=self._candidates,
            filter_counts=np.asarray(json.dumps(self._filter_counts)),
            label=np.asarray(self.name),
        )

    def _load_vocab(self):
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ModelUnavailableError(
                "llama-cpp-python is not installed.", "Reinstall Preflight (./setup.sh)."
            ) from exc
        try:
            from llama_cpp._utils import suppress_stdout_stderr
        except ImportError:  # pragma: no cover - private helper moved
            from contextlib import nullcontext

            def suppress_stdout_stderr(disable: bool = True):  # type: ignore[misc]
                return nullcontext()
        try:
            # a vocab-only load still creates a context, and llama.cpp prints a
            # meaningless "n_ctx_train (0)" warning for it on stderr: keep the CLI clean
            with suppress_stdout_stderr(disable=False):
                vocab = llama_cpp.Llama(model_path=str(self.path), vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelUnavailableError(
                f"Cannot read the tokenizer of {self.path.name}: {exc}.",
                "Reinstall the model with `preflight models install`.",
            ) from exc
        # free it before interpreter shutdown: llama-cpp's __del__ fails noisily once
        # its module globals are gone
        atexit.register(_close_quietly, vocab)
        return vocab

    def _read_embedding(self) -> tuple[np.ndarray, str]:
        import gguf

        try:
            reader = gguf.GGUFReader(str(self.path))
        except (ValueError, OSError) as exc:
            raise ModelUnavailableError(
                f"{self.path.name} is not a readable GGUF file ({exc}).",
                "Reinstall the model with `preflight models install`.",
            ) from exc
        tensor = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
        if tensor is None:
            raise ModelUnavailableError(
                f"{self.path.name} has no token_embd.weight tensor.",
                "Choose a GGUF language model for the d_X embedding.",
            )
        mat = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        mat = np.ascontiguousarray(mat, dtype=np.float32)
        qtype = getattr(tensor.tensor_type, "name", str(tensor.tensor_type))
        return mat, f"{self.path.name} token_embd.weight ({qtype}, {mat.shape[0]}x{mat.shape[1]})"

    def tokenize(self, text: str) -> Tokenization:
        if not text:
            z = np.zeros(0, dtype=np.int64)
            return Tokenization(z, z, z, z)
        with self._lock:  # llama.cpp vocab objects are not documented as thread-safe
            ids = self._vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        pieces = [self._pieces[i] for i in ids]
        unit_of, us, ue = units_from_byte_pieces(text, pieces)
        return Tokenization(np.asarray(ids, dtype=np.int64), unit_of, us, ue)


def _token_piece(vocab, token: int) -> bytes:
    """The exact bytes of one token. ``Llama.detokenize`` reads pieces through a 32-byte
    buffer and returns nothing for longer ones (runs of dashes or spaces), which broke
    the text round trip; llama.cpp reports the size it needs, so grow the buffer."""
    import ctypes

    import llama_cpp

    size = 64
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_token_to_piece(vocab._model.vocab, token, buf, size, 0, False)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def _close_quietly(obj) -> None:
    try:
        obj.close()
    except Exception:  # noqa: BLE001 - best effort at exit
        pass


def _pack_bytes(items: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    blob = b"".join(items)
    ends = np.cumsum([len(b) for b in items], dtype=np.int64)
    return np.frombuffer(blob, dtype=np.uint8).copy(), ends


def _unpack_bytes(blob: np.ndarray, ends: np.ndarray) -> list[bytes]:
    raw = blob.tobytes()
    out = []
    prev = 0
    for e in ends.tolist():
        out.append(raw[prev:e])
        prev = e
    return out


# --------------------------------------------------------------------------- HF


_MARKUP_RE = re.compile(r"^(\[[^\]\s]+\]|<[^>\s]+>)$")


class HFTokenSpace(_BaseSpace):
    """Input embeddings of a local Hugging Face / sentence-transformers model folder."""

    def __init__(self, model_dir: Path | str) -> None:
        self.path = Path(model_dir)
        if not self.path.is_dir():
            raise ModelUnavailableError(
                f"The model folder for d_X does not exist: {self.path}.",
                "Point to a local Hugging Face model folder.",
            )
        try:
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover
            raise ModelUnavailableError(
                "transformers is not installed.", "Reinstall Preflight (./setup.sh)."
            ) from exc
        weights = sorted(
            p for p in self.path.rglob("*") if p.suffix in {".safetensors", ".bin"}
        )
        digest = hashlib.sha256()
        for p in weights:
            digest.update(p.name.encode())
            digest.update(cached_file_sha256(p).encode())
        self.key = digest.hexdigest()
        self.name = f"{self.path.name} input embeddings (Hugging Face)"
        try:
            self._tok = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelUnavailableError(
                f"Cannot load the tokenizer in {self.path}: {exc}.",
                "Point to a complete local model folder.",
            ) from exc
        if not getattr(self._tok, "is_fast", False):
            raise ModelUnavailableError(
                f"The tokenizer in {self.path} gives no character offsets.",
                "Use a model folder with a fast tokenizer (tokenizer.json).",
            )
        cache = _ArrayCache(self.key)
        hit = cache.load("hf_space")
        if hit is not None:
            self._matrix = hit["matrix"]
        else:
            model = AutoModel.from_pretrained(str(self.path), local_files_only=True)
            self._matrix = np.ascontiguousarray(
                model.get_input_embeddings().weight.detach().cpu().numpy(), dtype=np.float32
            )
            del model
            cache.save("hf_space", matrix=self._matrix)
        V = self._matrix.shape[0]
        specials = set(self._tok.all_special_ids)
        special_text = set(self._tok.all_special_tokens)
        self._pieces = []
        special_flags = []
        for i in range(V):
            s = (self._tok.decode([i], clean_up_tokenization_spaces=False)
                 if i < len(self._tok) else "")
            if s.startswith("##") and len(s) > 2:   # WordPiece continuation marker
                s = s[2:]
            self._pieces.append(s.encode("utf-8"))
            # markup-like vocabulary entries ([unused12], <unk>, [CLS]) are not text
            special_flags.append(i in specials or i >= len(self._tok) or s in special_text
                                 or bool(_MARKUP_RE.match(s)))
        self._build_filter(special_flags)

    def tokenize(self, text: str) -> Tokenization:
        enc = self._tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        offs = enc["offset_mapping"]
        # Word-piece tokenizers do not cover whitespace and may share offsets (one char
        # split over tokens): merge tokens with overlapping ranges into one unit.
        unit_of = np.empty(len(ids), dtype=np.int64)
        starts: list[int] = []
        ends: list[int] = []
        for t, (s, e) in enumerate(offs):
            if starts and s < ends[-1]:
                ends[-1] = max(ends[-1], e)
            else:
                starts.append(s)
                ends.append(e)
            unit_of[t] = len(starts) - 1
        return Tokenization(ids, unit_of, np.asarray(starts, np.int64), np.asarray(ends, np.int64))


# --------------------------------------------------------------------------- GloVe


_WORD_RE = re.compile(r"\w+(?:[-']\w+)*|[^\w\s]", re.UNICODE)


class WordVectorSpace(_BaseSpace):
    """Word vectors in GloVe text format (``word v1 v2 ... vn`` per line).

    Tokens are words and punctuation marks, matched case-insensitively (GloVe is
    lower-cased). Words missing from the file cannot be embedded and stay unchanged;
    :meth:`tokenize` leaves them out and the mechanism reports them.
    """

    def __init__(self, path: Path | str, *, lowercase: bool = True) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelUnavailableError(
                f"The word-vector file for d_X does not exist: {self.path}.",
                "Point to a GloVe-format text file.",
            )
        self.lowercase = lowercase
        self.key = cached_file_sha256(self.path)
        self.name = f"{self.path.name} (word vectors)"
        words: list[str] = []
        rows: list[np.ndarray] = []
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split(" ")
                if len(parts) < 3:
                    continue
                try:
                    rows.append(np.asarray(parts[1:], dtype=np.float32))
                except ValueError:
                    raise InputError(
                        f"{self.path.name}: line {lineno} is not 'word v1 v2 ...'.",
                        "Use a GloVe-format text file.",
                    ) from None
                words.append(parts[0])
        if not rows or len({r.shape[0] for r in rows}) != 1:
            raise InputError(
                f"{self.path.name} holds no vectors or vectors of different sizes.",
                "Use a GloVe-format text file with one vector per line.",
            )
        self._matrix = np.ascontiguousarray(np.stack(rows), dtype=np.float32)
        self._words = words
        self._index = {}
        for i, w in enumerate(words):
            self._index.setdefault(w, i)
        self._pieces = [w.encode("utf-8") for w in words]
        self._build_filter([False] * len(words))
        self.out_of_vocabulary = 0

    def tokenize(self, text: str) -> Tokenization:
        ids: list[int] = []
        starts: list[int] = []
        ends: list[int] = []
        oov = 0
        for m in _WORD_RE.finditer(text):
            w = unicodedata.normalize("NFC", m.group(0))
            tid = self._index.get(w.lower() if self.lowercase else w)
            if tid is None:
                oov += 1
                continue
            ids.append(tid)
            starts.append(m.start())
            ends.append(m.end())
        self.out_of_vocabulary = oov
        n = len(ids)
        return Tokenization(
            np.asarray(ids, np.int64), np.arange(n, dtype=np.int64),
            np.asarray(starts, np.int64), np.asarray(ends, np.int64),
        )


# --------------------------------------------------------------------------- arrays


class ArraySpace(_BaseSpace):
    """An in-memory space over given vectors (tests, experiments): token ``i`` is the
    word ``words[i]``; text is split on whitespace."""

    def __init__(self, matrix: np.ndarray, words: Sequence[str], name: str = "array space"):
        self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if len(words) != self._matrix.shape[0]:
            raise ValueError("one word per row")
        self._words = list(words)
        self._index = {w: i for i, w in enumerate(self._words)}
        self._pieces = [w.encode("utf-8") for w in self._words]
        self.name = name
        self.key = hashlib.sha256(self._matrix.tobytes() + "\0".join(words).encode()).hexdigest()
        self._build_filter([False] * len(self._words))

    def tokenize(self, text: str) -> Tokenization:
        ids, starts, ends = [], [], []
        for m in re.finditer(r"\S+", text):
            tid = self._index.get(m.group(0))
            if tid is None:
                continue
            ids.append(tid)
            starts.append(m.start())
            ends.append(m.end())
        n = len(ids)
        return Tokenization(
            np.asarray(ids, np.int64), np.arange(n, dtype=np.int64),
            np.asarray(starts, np.int64), np.asarray(ends, np.int64),
        )


_default_lock = threading.Lock()
_default_space: GGUFTokenSpace | None = None


def default_token_space() -> GGUFTokenSpace:
    """The default d_X space (the SLM's token embeddings), loaded once per process."""
    global _default_space
    with _default_lock:
        if _default_space is None:
            _default_space = GGUFTokenSpace()
        return _default_space
