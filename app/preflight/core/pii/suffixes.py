"""Which domain names are real: the public suffix list bundled with tldextract, offline.

tldextract's default extractor downloads the public suffix list and writes a cache in the
user's home. :func:`offline_extractor` uses only the snapshot shipped inside the package
(no network, no cache files) and adds the suffixes of company-internal mail domains
(:data:`INTERNAL_SUFFIXES`). Kept free of Presidio so the canonical view can ask it too.
"""

from __future__ import annotations

import functools

import tldextract

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


def is_mail_domain(address: str) -> bool:
    """True when the domain of ``address`` (``jane@acme.co.uk``, or the bare domain) is a
    registrable name under a known suffix."""
    return offline_extractor()(address).fqdn != ""
