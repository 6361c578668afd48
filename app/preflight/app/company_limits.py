"""What the company policy changes in the user's own settings, in words (both faces).

The user's settings stay as they are written; the company's rules apply on top of them
(:class:`~preflight.core.org_policy_user.UserControls`). Each line here says one place
where that happens, for `preflight info` and the window's company notice.
"""

from __future__ import annotations

from typing import Any

from preflight.app.company_assessor import settings_endpoint_problem


def limits_on_settings(org: Any, settings: Any) -> list[str]:
    """One line per user setting the company policy ``org`` narrows (empty: none)."""
    det = settings.detection
    lines = org.detection_limits(det.allow_list, det.score_threshold)
    problem = settings_endpoint_problem(org, settings)
    return lines + ([problem] if problem else [])
