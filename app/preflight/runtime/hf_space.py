"""A d_X space over the input embeddings of a local Hugging Face model folder."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from preflight.core.errors import ModelUnavailableError
from preflight.core.ports import Tokenization
from preflight.runtime.hashing import VerifiedHashCache
from preflight.runtime.space_base import ArrayCache, BaseSpace

_MARKUP_RE = re.compile(r"^(\[[^\]\s]+\]|<[^>\s]+>)$")


class HFTokenSpace(BaseSpace):
    """Input embeddings of a local Hugging Face / sentence-transformers model folder."""

    def __init__(self, model_dir: Path | str, *,
                 hash_cache: VerifiedHashCache | None = None) -> None:
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
        hashes = hash_cache or VerifiedHashCache()
        digest = hashlib.sha256()
        for p in weights:
            digest.update(p.name.encode())
            digest.update(hashes.sha256(p).encode())
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
        cache = ArrayCache(self.key)
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
