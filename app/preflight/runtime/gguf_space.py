"""The default d_X space: the token embedding matrix of the SLM's GGUF file
(``token_embd.weight``, dequantized with ``gguf``), tokenized by llama.cpp."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from preflight.core.errors import ModelUnavailableError
from preflight.core.ports import Tokenization
from preflight.runtime.hashing import VerifiedHashCache
from preflight.runtime.manifest import DX_SPACE_ROLE
from preflight.runtime.llama_open import open_llama
from preflight.runtime.space_base import ArrayCache, BaseSpace, units_from_byte_pieces

_CONTROL_LIKE_ATTRS = (1 << 0) | (1 << 1) | (1 << 3)   # UNKNOWN | UNUSED | CONTROL


class GGUFTokenSpace(BaseSpace):
    """The token embedding matrix of a GGUF language model, tokenized by llama.cpp."""

    def __init__(self, gguf_path: Path | str, *,
                 hash_cache: VerifiedHashCache | None = None) -> None:
        """``gguf_path``: a GGUF language model (see :func:`gguf_token_space` for the
        installed SLM); ``hash_cache`` names the derived-array cache by content."""
        self.path = Path(gguf_path)
        if not self.path.is_file():
            raise ModelUnavailableError(
                f"The embedding model file for d_X does not exist: {self.path}.",
                "Install the models with `preflight models install`.",
                fix="install-models",
            )
        self.key = (hash_cache or VerifiedHashCache()).sha256(self.path)
        self._lock = threading.Lock()
        self._vocab = self._load_vocab()
        n_vocab = self._vocab.n_vocab()
        cache = ArrayCache(self.key)
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
            import llama_cpp  # noqa: F401 - a clear message when the backend is missing
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ModelUnavailableError(
                "llama-cpp-python is not installed.", "Reinstall Preflight (./setup.sh)."
            ) from exc
        try:
            # a vocab-only load still creates a context, and llama.cpp prints a
            # meaningless "n_ctx_train (0)" warning for it on stderr: keep the CLI clean
            vocab = open_llama(self.path, quiet_stderr=True, vocab_only=True)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelUnavailableError(
                f"Cannot read the tokenizer of {self.path.name} (the file is damaged or is "
                "not a model).",
                "Reinstall the model with `preflight models install`.",
                fix="install-models",
            ) from exc
        return vocab

    def _read_embedding(self) -> tuple[np.ndarray, str]:
        import gguf

        try:
            reader = gguf.GGUFReader(str(self.path))
        except (ValueError, OSError) as exc:
            raise ModelUnavailableError(
                f"{self.path.name} is not a readable model file (damaged or of another kind).",
                "Reinstall the model with `preflight models install`.",
                fix="install-models",
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


def gguf_token_space(path: Path | str | None = None, *,
                     hash_cache: VerifiedHashCache | None = None) -> GGUFTokenSpace:
    """The default d_X space: the GGUF at ``path``, or the installed ``dx_space`` role
    (asked of the :class:`~preflight.runtime.models.ModelManager`, which verifies it) when
    None — never the assessor's SLM, which the user may change."""
    if path is None:
        from preflight.runtime.models import ModelManager

        path = ModelManager(hash_cache=hash_cache).path(DX_SPACE_ROLE)
    return GGUFTokenSpace(path, hash_cache=hash_cache)
