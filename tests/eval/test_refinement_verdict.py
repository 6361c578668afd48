"""The refinement's verdict per setting kind (preflight_eval.refinement_verdict): "refined"
only where the refinement measurably helps out of fold — the by-document 95 % interval of
(instant Failed − refined Failed) lies above zero."""

from __future__ import annotations

import numpy as np

from preflight_eval.refinement_verdict import by_setting_kind, verdicts

FAST, FULL = "fast", "full"


def _rows(kind: str, docs: int, per_doc: int = 2) -> list[dict]:
    return [{"kind": kind, "group": f"{kind}:{d}", "target": 0.5}
            for d in range(docs) for _ in range(per_doc)]


def _preds(n: int, fast_misses: int, full_misses: int) -> dict[str, np.ndarray]:
    """Predictions off by 0.3 (a miss) on the first k rows, exact elsewhere."""
    fast, full = np.full(n, 0.5), np.full(n, 0.5)
    fast[:fast_misses] += 0.3
    full[:full_misses] += 0.3
    return {FAST: fast, FULL: full}


def test_a_clear_gain_shows_the_refined_value():
    rows = _rows("dx", 100)
    out = by_setting_kind(rows, np.full(len(rows), 0.5), _preds(len(rows), 120, 20), FAST, FULL)
    lo, hi = out["dx"]["gain_ci"]
    assert out["dx"]["show"] == "refined" and 0 < lo < 50 < hi
    assert verdicts(out, FAST, FULL)["dx"]["gain_ci"] == [lo, hi]


def test_a_gain_within_the_noise_shows_the_instant_value():
    # refined misses one row fewer in 200: a better point estimate, not a measurable one
    rows = _rows("placeholder", 100)
    out = by_setting_kind(rows, np.full(len(rows), 0.5), _preds(len(rows), 61, 60), FAST, FULL)
    assert out["placeholder"]["models"][FULL]["failed_pct"] \
        < out["placeholder"]["models"][FAST]["failed_pct"]
    assert out["placeholder"]["gain_ci"][0] <= 0 and out["placeholder"]["show"] == "instant"
