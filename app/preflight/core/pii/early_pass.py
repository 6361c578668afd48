"""The recognizers that never read the NER model's entities, run before the entities are
known.

While the helper process (:mod:`~preflight.core.pii.ner_process`) reads a window's
entities, this process runs every registered recognizer except those that read them
(Presidio's ``SpacyRecognizer``) on the window's tokens alone: patterns, checksums, names
by their cues, context labels. The analyzer's next ``analyze`` of the same text object,
in the same thread, takes those results instead of running the recognizers again, and
does everything else as always — the entity recognizer, the context pass, scores,
de-duplication — so the results are the same, in the same order, as one ``analyze`` call.

A recognizer's results may depend on the tokens (the same tokenizer either way) but not
on the entities: the only reader of ``NlpArtifacts.entities`` here is
``SpacyRecognizer`` (checked by ``tests/core/pii/test_early_pass.py`` on real text).

Import only after :func:`~preflight.core.pii.presidio_loader.import_presidio`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Self

from presidio_analyzer.predefined_recognizers import SpacyRecognizer

_pending = threading.local()
_MISSING = object()


def reads_entities(recognizer: Any) -> bool:
    """Whether ``recognizer``'s results depend on the NER model's entities."""
    return isinstance(recognizer, SpacyRecognizer)


class EarlyResults:
    """Results of the entity-free recognizers for one text; ``with`` them around the
    analyzer's ``analyze`` of that text (the same ``str`` object) to have it use them."""

    def __init__(self, text: str, found: dict[int, list]) -> None:
        self.text = text
        self.found = found

    def __enter__(self) -> Self:
        _pending.early = self
        return self

    def __exit__(self, *exc: object) -> None:
        _pending.early = None

    def take(self, recognizer: Any, text: str) -> Any:
        """The results computed early for ``recognizer`` on ``text`` (once), or
        ``_MISSING``."""
        if text is not self.text:
            return _MISSING
        return self.found.pop(id(recognizer), _MISSING)


def _replaying(recognizer: Any) -> Callable[..., Any]:
    """Give ``recognizer`` (once) an ``analyze`` that returns the results computed early
    for the text, when there are some, and otherwise analyzes as before; return its own
    ``analyze`` (what the early pass runs)."""
    current = vars(recognizer).get("analyze")
    if getattr(current, "replays", False):
        return current.__wrapped__
    original = recognizer.analyze         # its class's, or one set on it (a pre-check)

    def analyze(text, entities, nlp_artifacts=None):
        early = getattr(_pending, "early", None)
        found = _MISSING if early is None else early.take(recognizer, text)
        if found is _MISSING:
            return original(text=text, entities=entities, nlp_artifacts=nlp_artifacts)
        return found

    analyze.__wrapped__ = original
    analyze.replays = True
    recognizer.analyze = analyze
    return original


_PLAN = "_preflight_early_plan"


def _plan(analyzer: Any, language: str) -> list[tuple[int, Callable]]:
    """For each registered recognizer that does not read entities, its id and own
    ``analyze``: worked out once for the registry's recognizers (a window is short, and
    asking the registry and wrapping the recognizers for each one cost more than some
    recognizers' work), again when they change."""
    # which recognizers may run early decides the plan too, so that rule is in the key
    key = (language, reads_entities, tuple(analyzer.registry.recognizers))
    plan = analyzer.__dict__.get(_PLAN)
    if plan is None or plan[0] != key:
        steps = []
        for recognizer in analyzer.registry.get_recognizers(language=language, entities=None,
                                                            all_fields=True):
            if reads_entities(recognizer):
                continue
            own = _replaying(recognizer)
            if not recognizer.is_loaded:
                recognizer.load()
                recognizer.is_loaded = True
            steps.append((id(recognizer), own))
        plan = (key, steps)
        analyzer.__dict__[_PLAN] = plan
    return plan[1]


def run_early(analyzer: Any, text: str, artifacts: Any, language: str = "en") -> EarlyResults:
    """Run ``analyzer``'s registered recognizers that do not read entities on ``text``,
    given ``artifacts`` without entities (the same tokens), as its ``analyze`` would."""
    entities = analyzer.get_supported_entities(language=language)
    return EarlyResults(text, {rid: own(text=text, entities=entities, nlp_artifacts=artifacts)
                               for rid, own in _plan(analyzer, language)})
