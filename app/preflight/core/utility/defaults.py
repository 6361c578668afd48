"""Defaults derived from the utility data, readable without loading the regressor.

Training (``fit_bundle``) derives the default minimum utility from the data — a stated
fraction (:data:`~preflight.core.utility.fitting.KEEP_FRACTION`) of the median utility
of sending the unsanitized documents — and :func:`~preflight.core.utility.predictor.save_bundle`
writes it next to the bundle as ``defaults.json``. The settings
(:class:`preflight.core.config.PolicySettings`) take their default ``min_utility`` from
the shipped file; see docs/UTILITY.md.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from preflight.core import paths
from preflight.core.utility.slm_roles import shipped_folder

log = logging.getLogger(__name__)

DEFAULTS_NAME = "defaults.json"
# Only if the shipped file is missing or unreadable (a damaged install): the minimum the
# app used before the default was derived from data.
FALLBACK_MIN_UTILITY = 0.5


@functools.lru_cache(maxsize=1)
def shipped_defaults() -> dict[str, Any]:
    path = paths.resource_path(*shipped_folder(), DEFAULTS_NAME)   # the default SLM's
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("no utility defaults (%s): using the built-in minimum", type(exc).__name__)
        return {}
    return data if isinstance(data, dict) else {}


def default_min_utility() -> float:
    """The default minimum utility of the settings (derived from the training data)."""
    value = shipped_defaults().get("min_utility")
    if isinstance(value, (int, float)) and -1.0 <= value <= 1.0:
        return float(value)
    return FALLBACK_MIN_UTILITY
