"""Bundle self-check: does every native library and bundled model load in this layout?

Run as ``preflight --bundle-check [--json]`` from a frozen bundle (or
``python installer/bundle_check.py`` from a source checkout to compare). It exercises the
third-party libraries the way the app does — spaCy and Presidio on the NER model,
sentence-transformers on the similarity model, llama.cpp and gguf on the SLM,
scikit-learn, keyring — so a missing hidden import, data file or shared library shows up
here, with its name, instead of deep inside a user's first document.

Only packagers need it; it is not a sub-command of the app. It reads no user file and
prints no document text (its inputs are fixed sample strings).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

_SAMPLE = "Contact Jane Miller at jane.miller@example.com or +1 212 555 0100 in Paris."


def _model_path(role: str) -> Path:
    """The installed model for ``role``, through the app's model manager."""
    from preflight.runtime.models import ModelManager

    return Path(ModelManager().path(role))


def _check_paths() -> str:
    from preflight.core import paths

    root = paths.install_root()
    resources = sorted(p.name for p in paths.resource_path().iterdir())
    if not paths.manifest_path().is_file():
        raise FileNotFoundError(paths.manifest_path())
    return f"root={root} resources={resources} models={paths.models_dir()}"


def _check_version() -> str:
    import preflight

    if preflight.__version__.startswith("0+"):
        raise RuntimeError("package metadata missing: version is " + preflight.__version__)
    return preflight.__version__


def _check_qt() -> str:
    from PySide6 import QtCore, QtGui, QtWidgets  # noqa: F401

    plugins = Path(QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.PluginsPath))
    platforms = sorted(p.name for p in (plugins / "platforms").glob("*"))
    return f"Qt {QtCore.qVersion()} platforms={platforms}"


def _check_spacy() -> str:
    import spacy

    nlp = spacy.load(_model_path("ner"))
    ents = [(e.text, e.label_) for e in nlp(_SAMPLE).ents]
    if not ents:
        raise RuntimeError("the NER pipeline found no entity in the sample")
    return f"{len(ents)} entities, pipes={nlp.pipe_names}"


def _check_presidio() -> str:
    """The app's detector as the app builds it: Presidio + spaCy + its own recognizers,
    with the offline e-mail validation (Presidio's stock engine would try to download
    the public-suffix list, which the smoke test's network guard reports)."""
    from preflight.app.services import build_services
    from preflight.core.config import Settings

    detector = build_services(Settings()).detector()
    spans = detector.detect(_SAMPLE)
    types = sorted({s.type for s in spans})
    if not detector.ner_available:
        raise RuntimeError(f"NER unavailable in the detector: {detector.warnings}")
    if "EMAIL_ADDRESS" not in types or "PERSON" not in types:
        raise RuntimeError(f"expected EMAIL_ADDRESS and PERSON among {types}")
    return f"PiiDetector types={types}"


def _check_ner_helper() -> str:
    """The detector's NER helper process (spawned: the frozen executable runs itself
    again) loads the model and reads a long text beside the detector."""
    from preflight.app.services import build_services
    from preflight.core.config import Settings

    detector = build_services(Settings()).make_detector()
    detector.load()
    helper = detector.ner_helper
    if helper is None or not helper.wait_ready(120):
        raise RuntimeError("the NER helper process did not load its model")
    text = "\n\n".join(f"Note {n}: {_SAMPLE}" for n in range(60))   # distinct paragraphs
    spans = detector.detect(text)
    if helper.answered == 0:
        raise RuntimeError("the NER helper process answered nothing")
    if "PERSON" not in {s.type for s in spans}:
        raise RuntimeError("no person found with the helper's entities")
    return f"{helper.answered} batches read by the helper, {len(spans)} spans"


def _check_sentence_transformers() -> str:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(_model_path("similarity")), device="cpu")
    vec = model.encode(["The board approved the budget.", "The budget was approved."])
    sim = float(vec[0] @ vec[1] / ((vec[0] @ vec[0]) ** 0.5 * (vec[1] @ vec[1]) ** 0.5))
    if not 0.5 < sim <= 1.0001:
        raise RuntimeError(f"implausible similarity {sim:.3f}")
    return f"dim={vec.shape[1]} sim={sim:.3f}"


def _check_llama() -> str:
    import llama_cpp

    llm = llama_cpp.Llama(str(_model_path("slm")), n_ctx=256, n_threads=1, verbose=False)
    out = llm.create_completion("The capital of France is", max_tokens=3, temperature=0.0)
    text = out["choices"][0]["text"]
    if not text:
        raise RuntimeError("the SLM produced no token")
    return f"n_vocab={llm.n_vocab()} generated {len(text)} chars"


def _check_gguf() -> str:
    import gguf

    reader = gguf.GGUFReader(_model_path("slm"))
    return f"{len(reader.tensors)} tensors"


def _check_sklearn() -> str:
    import joblib  # noqa: F401 - the shipped regressor is stored with joblib/skops
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingRegressor

    x = np.linspace(0, 1, 64).reshape(-1, 1)
    model = HistGradientBoostingRegressor(max_iter=10).fit(x, x.ravel())
    return f"pred={float(model.predict([[0.5]])[0]):.2f}"


def _check_utility_regressor() -> str:
    from preflight.core import paths

    if not paths.resource_path("utility").is_dir():
        return "not shipped in this build (resources/utility/ absent)"
    from preflight.core.utility.predictor import UtilityPredictor

    predictor = UtilityPredictor.load(prefer_user=False)  # unpickles the sklearn estimators
    fast = predictor.bundle["models"]["fast"]
    value = predictor.predict_with("fast", {name: 0.5 for name in fast["features"]})
    if not -1.0 <= value <= 1.0:
        raise RuntimeError(f"prediction out of range: {value}")
    return f"models={sorted(predictor.bundle['models'])} fast(0.5...)={value:.3f}"


def _check_keyring() -> str:
    import keyring

    # Only which backend resolves; nothing is read or written.
    return type(keyring.get_keyring()).__module__


CHECKS: dict[str, Callable[[], str]] = {
    "version": _check_version,
    "paths": _check_paths,
    "qt": _check_qt,
    "spacy": _check_spacy,
    "presidio": _check_presidio,
    "ner_helper": _check_ner_helper,
    "sentence_transformers": _check_sentence_transformers,
    "llama_cpp": _check_llama,
    "gguf": _check_gguf,
    "sklearn": _check_sklearn,
    "utility_regressor": _check_utility_regressor,
    "keyring": _check_keyring,
}


def main(argv: list[str] | None = None) -> int:
    """Run every check; print one line each (or JSON with ``--json``); 0 if all passed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    results: list[dict[str, Any]] = []
    for name, check in CHECKS.items():
        start = time.perf_counter()
        try:
            detail, ok = check(), True
        except Exception as exc:  # noqa: BLE001 - the report is the point
            detail, ok = f"{type(exc).__name__}: {exc}", False
            if "--traceback" in argv:
                traceback.print_exc()
        results.append(
            {"check": name, "ok": ok, "seconds": round(time.perf_counter() - start, 3),
             "detail": detail}
        )
    report = {"frozen": bool(getattr(sys, "frozen", False)), "executable": sys.executable,
              "pid": os.getpid(), "checks": results,
              "ok": all(r["ok"] for r in results)}
    if "--json" in argv:
        print(json.dumps(report, indent=2))
    else:
        for r in results:
            mark = "ok  " if r["ok"] else "FAIL"
            print(f"{mark} {r['check']:<22} {r['seconds']:7.2f}s  {r['detail']}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
