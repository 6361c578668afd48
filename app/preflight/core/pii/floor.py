"""What the user's detection settings may not loosen: the company's floor under detection.

The user's allow-list and score threshold (``DetectionSettings``) tune detection for
false positives. Under a company policy they apply in full only to the entity types the
company leaves to the user. A *guarded* type — one with a company minimum above "keep",
or, when the company forbids per-item overrides, any direct identifier or secret (what the
pre-send re-scan blocks on) — is never dropped because its value is on the allow-list
(an allow-list entry is a standing override), and is dropped for a low score only below
the company's highest threshold (``detection.max_score_threshold``; default: Preflight's
own default). :meth:`OrgPolicy.detection_floor` builds the floor; the detector applies it.
"""

from __future__ import annotations

from dataclasses import dataclass

from preflight.core.types import Category

#: The detection threshold Preflight ships with (the settings' default, and the highest
#: threshold for guarded types when the company names none).
DEFAULT_SCORE_THRESHOLD = 0.35

#: Categories the pre-send re-scan blocks on: sending one of them needs an override.
BLOCKING_CATEGORIES = (Category.DIRECT_IDENTIFIER, Category.SECRET)


@dataclass(frozen=True)
class DetectionFloor:
    """The types the user's allow-list and threshold cannot loosen (empty: none)."""

    types: frozenset[str] = frozenset()
    categories: frozenset[Category] = frozenset()
    max_threshold: float = DEFAULT_SCORE_THRESHOLD

    def guards(self, entity_type: str, category: Category) -> bool:
        """Whether a value of this type is protected from the user's allow-list and
        from a threshold above :attr:`max_threshold`."""
        return entity_type in self.types or category in self.categories

    def threshold(self, user: float, entity_type: str, category: Category) -> float:
        """The score a value of this type needs to be kept as a detection."""
        return min(user, self.max_threshold) if self.guards(entity_type, category) else user

    @property
    def empty(self) -> bool:
        return not (self.types or self.categories)


#: No company rules: the user's settings apply to every type.
NO_FLOOR = DetectionFloor()
