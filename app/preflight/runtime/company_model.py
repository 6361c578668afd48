"""The company's utility model: fetched from the path or URL the company policy names
(``[utility_model]``, :mod:`preflight.core.org_policy_learning`) and loaded only when its
sha256 is the one the policy states.

A URL's file is downloaded once into the cache folder under its sha256 and checked before
it is written; a path is checked where it lies. Any failure — unreachable, too big, wrong
sha256, unreadable bundle — raises :class:`ModelUnavailableError` whose message says what
happened; the composition root then keeps the shipped model and says so.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from preflight.core import paths
from preflight.core.errors import ModelUnavailableError
from preflight.core.fsutil import atomic_write_bytes, file_sha256
from preflight.core.org_policy_learning import CompanyModelSettings
from preflight.core.send import logfilter
from preflight.core.utility.predictor import UtilityPredictor, load_bundle

log = logging.getLogger(__name__)

MAX_BYTES = 64 * 1024 * 1024      # a bundle is a few MB; refuse anything far larger
TIMEOUT_S = 30
_HINT = ("Preflight uses the shipped utility model meanwhile; ask your IT administrator to "
         "check [utility_model] in the company policy (docs/DEPLOYMENT.md).")


def company_model_path(spec: CompanyModelSettings, *, cache: Path | None = None,
                       session: Any = None) -> Path:
    """A local file holding the model the policy names, its sha256 checked."""
    if not spec.is_url:
        where = urlsplit(spec.path_or_url)
        path = Path(unquote(where.path) if where.scheme == "file" else spec.path_or_url)
        if not path.is_file():
            raise ModelUnavailableError(f"The company utility model {path} does not exist.",
                                        _HINT)
        _check(file_sha256(path), spec)
        return path
    folder = cache or paths.data_dir() / "utility" / "company"
    target = folder / f"{spec.sha256}.joblib"
    if target.is_file() and file_sha256(target) == spec.sha256:
        return target                       # fetched before: the cache is the same bytes
    data = _download(spec, session)
    _check(hashlib.sha256(data).hexdigest(), spec)
    atomic_write_bytes(target, data)
    return target


def load_company_predictor(spec: CompanyModelSettings, **kwargs: Any) -> UtilityPredictor:
    """The company's :class:`UtilityPredictor` (see :func:`company_model_path`)."""
    path = company_model_path(spec, **kwargs)
    predictor = UtilityPredictor(load_bundle(path), path)
    log.info("company utility model loaded (sha256 %s…)", spec.sha256[:12])
    return predictor


def company_predictor(spec: CompanyModelSettings, **kwargs: Any
                      ) -> tuple[UtilityPredictor | None, str | None]:
    """(the company's predictor, None), or (None, why it was refused) — said once in the
    log: the caller keeps the shipped model."""
    try:
        return load_company_predictor(spec, **kwargs), None
    except ModelUnavailableError as err:
        log.warning("company utility model not used: %s", err.message)
        return None, str(err)


def _check(found: str, spec: CompanyModelSettings) -> None:
    if found != spec.sha256:
        raise ModelUnavailableError(
            f"The company utility model at {_short(spec.path_or_url)} has sha256 "
            f"{found[:16]}…, not the {spec.sha256[:16]}… the company policy names: it was "
            "refused.", _HINT)


def _download(spec: CompanyModelSettings, session: Any) -> bytes:
    import requests

    session = session or requests.Session()
    where = _short(spec.path_or_url)
    try:
        with session.get(spec.path_or_url, stream=True, timeout=TIMEOUT_S) as resp:
            if resp.status_code != 200:
                raise ModelUnavailableError(f"The company utility model at {where} could not "
                                            f"be fetched (HTTP {resp.status_code}).", _HINT)
            chunks, size = [], 0
            for chunk in resp.iter_content(1 << 16):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise ModelUnavailableError(
                        f"The company utility model at {where} is larger than "
                        f"{MAX_BYTES // (1024 * 1024)} MB: it was refused.", _HINT)
                chunks.append(chunk)
    except requests.RequestException as exc:
        raise ModelUnavailableError(f"The company utility model at {where} could not be "
                                    f"fetched ({type(exc).__name__}).", _HINT) from None
    return b"".join(chunks)


def _short(url: str) -> str:
    """The URL for a message: no query string (it may carry a signed token)."""
    parts = urlsplit(url)
    return logfilter.redact(parts._replace(query="", fragment="").geturl())[:200]
