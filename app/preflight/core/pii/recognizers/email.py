"""Email addresses validated against the public suffix list bundled with tldextract.

Presidio's ``EmailRecognizer`` calls ``tldextract.extract``, whose default extractor
downloads the public suffix list and writes a cache in the user's home. We validate with
an extractor that uses only the snapshot shipped inside the tldextract package: no
network, no cache files — and with the suffixes of company-internal domains
(:data:`INTERNAL_SUFFIXES`).
"""

from __future__ import annotations

import functools

import tldextract
from presidio_analyzer.predefined_recognizers import EmailRecognizer


#: Suffixes of company-internal mail domains that the public suffix list does not hold:
#: an address at ``corp.local`` or ``acme.internal`` is an employee's address all the same
#: (``.local``: RFC 6762; ``.internal``: reserved by ICANN for private use in 2024;
#: ``home.arpa``: RFC 8375; the rest: de-facto Active Directory and LAN names).
INTERNAL_SUFFIXES = ("local", "internal", "corp", "lan", "intranet", "localdomain",
                     "home.arpa", "private")


@functools.lru_cache(maxsize=1)
def offline_extractor() -> tldextract.TLDExtract:
    """A TLD extractor that never touches the network or the disk cache."""
    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True,
                                 extra_suffixes=INTERNAL_SUFFIXES)


def make_tldextract_offline() -> None:
    """Point tldextract's module-level extractor at the offline one.

    Protects any other code in the process (and vanilla Presidio in the benchmarks) that
    calls ``tldextract.extract`` directly.
    """
    import tldextract.tldextract as impl

    impl.TLD_EXTRACTOR = offline_extractor()


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's email pattern with an offline top-level-domain check."""

    def __init__(self) -> None:
        super().__init__(name="OfflineEmailRecognizer")

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102 (Presidio API)
        return offline_extractor()(pattern_text).fqdn != ""
