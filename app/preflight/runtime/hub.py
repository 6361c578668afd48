"""Downloads from the Hugging Face Hub (resumable, verified against a sha256)."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

from preflight.core.errors import ConfigError, ModelUnavailableError, PreflightError
from preflight.core.fsutil import open_regular
from preflight.core.ports import Progress
from preflight.core.send.destination import origin
from preflight.runtime.hashing import check_cancel, file_sha256
from preflight.runtime.model_install import write_error

log = logging.getLogger(__name__)

DEFAULT_HF_ENDPOINT = "https://huggingface.co"



def hf_endpoint() -> str:
    """The Hub's base URL: ``PREFLIGHT_HF_ENDPOINT`` or https://huggingface.co."""
    return (os.environ.get("PREFLIGHT_HF_ENDPOINT") or DEFAULT_HF_ENDPOINT).rstrip("/")


def _token_may_go(url: str) -> bool:
    """HF_TOKEN goes to the Hub's own origin over https only (read as the HTTP client
    reads both addresses: ``https://huggingface.co.evil.example`` is another host)."""
    target, hub = origin(url), origin(hf_endpoint())
    return target == hub and target[0] == "https"


def check_repo_id(repo_id: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+", repo_id or "") or ".." in repo_id:
        raise ConfigError(
            f"'{repo_id}' is not a Hugging Face repository id.",
            "Use the form owner/name, e.g. bartowski/Llama-3.2-1B-Instruct-GGUF.",
        )


def hub_url(repo_id: str, filename: str, revision: str = "main") -> str:
    """Direct download URL of a file in a Hub model repository."""
    check_repo_id(repo_id)
    return (f"{hf_endpoint()}/{repo_id}/resolve/{quote(revision, safe='')}/"
            f"{quote(filename, safe='/')}")


def _total_from(response, offset: int) -> int | None:
    content_range = response.headers.get("Content-Range", "")
    if m := re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", content_range):
        return int(m.group(3)) if m.group(3) != "*" else None
    length = response.headers.get("Content-Length")
    return int(length) + offset if length and length.isdigit() else None


def download_file(
    url: str,
    dest: Path,
    sha256: str | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    *,
    timeout: tuple[float, float] = (10.0, 60.0),
    max_failures: int = 5,
    retry_wait: float = 1.0,
    session=None,
) -> Path:
    """Stream ``url`` to ``dest``, resuming a ``dest.part`` left by an earlier attempt.

    Connection drops are retried with an HTTP Range request from where the data stopped
    (``max_failures`` attempts in a row that bring no new bytes end the download). With
    ``sha256`` a mismatching file is deleted, never kept. On cancel the ``.part`` file
    stays so the next call resumes.
    """
    import requests  # heavy-ish; only the download path needs it

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    want = sha256.lower() if sha256 else None
    if want is not None and dest.is_file() and file_sha256(dest, cancel) == want:
        return dest
    host = urlsplit(url).netloc or url
    headers = {"User-Agent": "preflight-model-manager"}
    token = os.environ.get("HF_TOKEN")
    if token and _token_may_go(url):
        headers["Authorization"] = f"Bearer {token}"
    session = session or requests.Session()
    # Public model files, no document: the environment's proxy is honoured (many company
    # networks reach the Hub only through one); the token goes over https only, so a
    # proxy sees it only inside the TLS tunnel.
    failures = 0
    last_error = ""
    while True:
        check_cancel(cancel)
        offset = part.stat().st_size if part.exists() else 0
        req_headers = dict(headers)
        if offset:
            req_headers["Range"] = f"bytes={offset}-"
        before = offset
        try:
            with session.get(url, headers=req_headers, stream=True, timeout=timeout) as resp:
                if resp.status_code == 416 and offset:
                    total = _total_from(resp, 0)
                    if total == offset:
                        break  # the .part is already complete
                    part.unlink()  # a stale .part longer than the file: start over
                    continue
                if resp.status_code in (401, 403):
                    raise PreflightError(
                        f"{host} refused access to {url} (HTTP {resp.status_code}).",
                        "The repository may be gated: accept its licence on the website and "
                        "set HF_TOKEN, or download the file by hand and use "
                        "`preflight models use ROLE PATH`.",
                    )
                if resp.status_code == 404:
                    raise PreflightError(
                        f"{url} does not exist (HTTP 404).",
                        "Check the repository id, the file name and the revision.",
                    )
                if resp.status_code >= 400:
                    raise requests.HTTPError(f"HTTP {resp.status_code}")
                if resp.status_code == 206 and offset:
                    m = re.match(r"bytes (\d+)-", resp.headers.get("Content-Range", ""))
                    if not m or int(m.group(1)) != offset:
                        part.unlink()  # the server resumed elsewhere: trust nothing
                        continue
                    mode = "ab"
                else:
                    offset, mode = 0, "wb"  # no Range support: start from the beginning
                total = _total_from(resp, offset)
                done = offset
                with open_regular(part, mode) as fh:   # never through a link
                    for chunk in resp.iter_content(chunk_size=256 * 1024):
                        check_cancel(cancel)
                        if not chunk:
                            continue
                        fh.write(chunk)
                        done += len(chunk)
                        if progress:
                            frac = done / total if total else 0.0
                            progress(min(frac, 1.0), f"Downloading {dest.name}: "
                                     f"{done / 1e6:.1f} MB" + (f" of {total / 1e6:.1f} MB"
                                                              if total else ""))
                if total is not None and done < total:
                    raise requests.ConnectionError(f"connection closed at {done} of {total}")
                break
        except (requests.ConnectionError, requests.Timeout, requests.HTTPError,
                requests.exceptions.ChunkedEncodingError) as exc:
            last_error = f"{type(exc).__name__}: {exc}"
            now = part.stat().st_size if part.exists() else 0
            failures = 0 if now > before else failures + 1
            log.info("download from %s interrupted at %d bytes (%s); retrying", host, now,
                     type(exc).__name__)
            if failures >= max_failures:
                raise PreflightError(
                    f"Could not download {dest.name} from {host} ({last_error[:200]}).",
                    "Check the internet connection or proxy and run the same command again: "
                    "it resumes where it stopped.",
                ) from None
            if retry_wait:
                time.sleep(retry_wait * failures)
        except OSError as exc:  # after the requests errors: those are OSErrors too
            raise write_error(dest.name, dest.parent, exc) from None
    if want is not None:
        got = file_sha256(part, cancel)
        if got != want:
            part.unlink(missing_ok=True)
            raise ModelUnavailableError(
                f"The file downloaded from {host} has sha256 {got[:12]}…, not the expected "
                f"{want[:12]}…; it was deleted.",
                "Check the checksum you gave (or the revision), then download again.",
            )
    os.replace(part, dest)
    return dest
