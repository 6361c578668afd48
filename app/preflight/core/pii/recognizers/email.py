"""Email addresses validated against the public suffix list bundled with tldextract.

Presidio's ``EmailRecognizer`` calls ``tldextract.extract``, whose default extractor
downloads the public suffix list and writes a cache in the user's home. We validate with
:func:`preflight.core.pii.suffixes.offline_extractor`: the snapshot shipped inside the
tldextract package, no network, no cache files — and the suffixes of company-internal
domains (:data:`INTERNAL_SUFFIXES`).
"""

from __future__ import annotations

from presidio_analyzer.predefined_recognizers import EmailRecognizer

from preflight.core.pii.suffixes import INTERNAL_SUFFIXES, is_mail_domain, offline_extractor
from preflight.core.types import Evidence

__all__ = ["INTERNAL_SUFFIXES", "OfflineEmailRecognizer", "make_tldextract_offline",
           "offline_extractor"]


def make_tldextract_offline() -> None:
    """Point tldextract's module-level extractor at the offline one.

    Protects any other code in the process (and vanilla Presidio in the benchmarks) that
    calls ``tldextract.extract`` directly.
    """
    import tldextract.tldextract as impl

    impl.TLD_EXTRACTOR = offline_extractor()


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's email pattern with an offline top-level-domain check."""

    evidence = Evidence.RULE

    def __init__(self) -> None:
        super().__init__(name="OfflineEmailRecognizer")

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):  # noqa: D102
        if "@" not in text:     # in every address: a text without one is not scanned
            return []
        return super().analyze(text, entities, nlp_artifacts, regex_flags)

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102 (Presidio API)
        return is_mail_domain(pattern_text)
