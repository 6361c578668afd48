"""The per-provider update chosen out of fold on the stream (preflight_eval.flow_weight):
the recalibrations it compares a refit with learn from the other documents only."""

from __future__ import annotations

import numpy as np
import pytest

from preflight_eval.flow_weight import recalibrated


def _stream(shown, realized):
    return [{"doc_id": f"d{i // 2}", "realized": y} for i, y in enumerate(realized)], shown


def test_an_offset_is_the_other_documents_mean_residual():
    shown = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.1, 0.2, 0.3, 0.4]
    stream, shown = _stream(shown, [s + 0.2 for s in shown])
    assert recalibrated(stream, shown, 5, "offset") == pytest.approx(np.add(shown, 0.2))
    # one document's own residual never moves its own prediction
    realized = [s + 0.2 for s in shown]
    realized[0] += 1.0
    stream, _ = _stream(shown, realized)
    out = recalibrated(stream, shown, 5, "offset")
    assert out[0] == pytest.approx(shown[0] + 0.2) and out[2] > shown[2] + 0.2


def test_a_line_without_shrinkage_recovers_the_map_and_shrinkage_pulls_to_identity():
    shown = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.35]
    stream, shown = _stream(shown, [0.1 + 0.5 * s for s in shown])
    exact = recalibrated(stream, shown, 5, "line", shrink=0.0)
    assert exact == pytest.approx([0.1 + 0.5 * s for s in shown])
    shrunk = recalibrated(stream, shown, 5, "line", shrink=1e6)
    assert shrunk == pytest.approx(shown, abs=1e-4)
