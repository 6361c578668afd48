"""The local small language model (SLM) on llama.cpp.

A ``llama_cpp.Llama`` is not thread-safe, so :class:`LocalSLM` gives it exactly one
owner: a single-worker executor. Every call (load, generate, score) is submitted to that
worker and the caller waits on the future, so the window, the CLI and the utility
assessor can all share one instance from any thread. The model loads lazily on first use.

Generation streams (``on_token`` is called on the owner thread for every piece of text)
and is cancellable within a fraction of a second: ``cancel`` (a ``threading.Event``) is
checked before every token, by llama.cpp's abort callback inside every batch of the prompt
evaluation (a long document's prompt takes seconds per batch on a small CPU), and while a
call still waits behind another on the owner thread.
Decoding is greedy with a mild repetition penalty: the same text gives the same answer,
which keeps the utility features reproducible and lets callers cache per document.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from concurrent.futures import CancelledError, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np

from preflight.core.errors import Cancelled, InputError, ModelUnavailableError
from preflight.core.ports import ModelAnswer
from preflight.core.tasks import Task
from preflight.runtime.llama_open import open_llama

log = logging.getLogger(__name__)
# llama-cpp-python prints llama.cpp's messages of this logger's level and above to stderr
# (ERROR once a model is opened with verbose=False).
_LLAMA_LOG = logging.getLogger("llama-cpp-python")

TokenCallback = Callable[[str], None]

# Room kept for the chat template and instruction around the document.
_PROMPT_OVERHEAD_TOKENS = 160
# How often a caller waiting for the owner thread looks at its cancel event (seconds).
_CANCEL_POLL_S = 0.05
#: Tokens :meth:`LocalSLM.perplexity` scores, and the decoding's repetition penalty (the
#: company-hosted assessor, runtime.remote_slm, uses the same).
PERPLEXITY_WINDOW = 256
REPEAT_PENALTY = 1.15
# Tokens decoded per llama.cpp batch when scoring: llama.cpp keeps an output buffer of
# batch x vocabulary floats for the context's lifetime (Qwen2.5's 151,936-token vocabulary:
# 39 MB at 64 rows, 78 MB at 128, 155 MB at 256). The logits do not depend on the split
# (checked bit for bit by tests/runtime/test_slm_real.py), the time does: scoring the
# 256-token window in batches of 64 cost Qwen2.5-0.5B about twice the CPU of batches of
# 128 (one thread, /tmp profiling in session h47cold: 8.8-17.8 s vs 4.9-7.4 s at load
# 11-12), and 256 saved little more for twice the buffer. The original's perplexity is
# on the cold path of "Find best ε", so 128.
_SCORE_BATCH = 128


def default_slm_path() -> Path:
    """The installed default SLM file, through the model manager."""
    from preflight.runtime.models import ModelManager

    return Path(ModelManager().path("slm"))


class LocalSLM:
    """SmolLM2 (or any chat GGUF) behind one owner thread.

    Args:
        model_path: GGUF file; ``None`` asks the model manager for the "slm" role.
        n_ctx: context window for generation (document + instruction + answer).
        n_threads: CPU threads for llama.cpp (default: all cores).
        perplexity_window: tokens scored by :meth:`perplexity` (in the generation's own
            context, a few rows of logits at a time: a second context would map the
            model file again and hold a window x vocabulary logits buffer, ~1 GB more
            for Qwen2.5-Coder-0.5B).
        system_prompt: replaces the task's system message (the manifest's
            ``system_prompt`` of the role: an instruct model such as Qwen2.5-Coder must be
            told to reply with the answer only, or it echoes the document); None keeps it.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        perplexity_window: int = PERPLEXITY_WINDOW,
        repeat_penalty: float = REPEAT_PENALTY,
        system_prompt: str | None = None,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads or max(1, os.cpu_count() or 1)
        self._ppl_window = perplexity_window
        self._repeat_penalty = repeat_penalty
        self._system_prompt = system_prompt or None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="preflight-slm")
        self._llm: Any = None        # touched only on the owner thread
        self._closed = False
        self._abort_on: threading.Event | None = None   # the running generation's cancel
        self._abort_cb: Any = None   # the ctypes callback (kept alive while the model is)

    # -- public API ------------------------------------------------------------------
    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = default_slm_path()
        return self._model_path

    def load(self) -> None:
        """Load the model now (otherwise the first call does it)."""
        self._submit(self._ensure_llm)

    def run(
        self,
        task: Task,
        text: str,
        on_token: TokenCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> str:
        """Run ``task`` on the document ``text`` and return the answer.

        Raises :class:`Cancelled` when ``cancel`` is set during generation.
        """
        return self.answer(task, text, on_token, cancel).text

    def answer(
        self,
        task: Task,
        text: str,
        on_token: TokenCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelAnswer:
        """:meth:`run`, also telling why generation ended (``"length"``: it reached
        ``task.max_tokens``, or half the context, whichever is smaller)."""
        if not text.strip():
            raise InputError("The document is empty.", "Give the model some text to work on.")
        return self._submit(self._generate, task, text, on_token, cancel, cancel=cancel)

    def messages(self, task: Task, document: str) -> list[dict[str, str]]:
        """The chat messages sent for ``task``: the task's own, with the system message
        replaced by this model's ``system_prompt`` when it has one."""
        return task_messages(task, document, self._system_prompt)

    def perplexity(self, text: str) -> float:
        """Perplexity of the SLM on the first ``perplexity_window`` tokens of ``text``.

        High values mean the model finds the text unlike language (a cheap signal of how
        badly sanitization damaged it).
        """
        return self._submit(self._perplexity, text)

    def count_tokens(self, text: str) -> int:
        return self._submit(lambda: len(self._ensure_llm().tokenize(text.encode(), add_bos=False)))

    def close(self) -> None:
        """Free the model and stop the owner thread.

        Calls still queued are cancelled (their callers get :class:`ModelUnavailableError`);
        a call already running finishes first — a generation whose ``cancel`` is set stops
        at its next token, a model load in llama.cpp cannot be interrupted. The models are
        freed once the owner thread has ended, so they still have a single user."""
        if self._closed:
            return
        self._closed = True
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self._llm is not None:
            self._llm.close()
        self._llm = None

    def __enter__(self) -> "LocalSLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- owner-thread internals --------------------------------------------------------
    def _submit(self, fn: Callable[..., Any], *args: Any,
                cancel: threading.Event | None = None) -> Any:
        """Run ``fn`` on the owner thread and wait; a call still queued behind another
        one is withdrawn when ``cancel`` is set (raises :class:`Cancelled`)."""
        if self._closed:
            raise ModelUnavailableError("The local model was closed.", "Restart Preflight.")
        try:
            future = self._executor.submit(fn, *args)
            while cancel is not None:
                try:
                    return future.result(timeout=_CANCEL_POLL_S)
                except TimeoutError:
                    if cancel.is_set() and future.cancel():
                        raise Cancelled("Stopped the local model.") from None
            return future.result()
        except (CancelledError, RuntimeError) as exc:
            if not self._closed:
                raise
            raise ModelUnavailableError("The local model was closed.",
                                        "Restart Preflight.") from exc

    def _open(self, **kwargs: Any) -> Any:
        path = self.model_path
        if not path.is_file():
            raise ModelUnavailableError(
                f"The local language model file is missing: {path}.",
                "Run `preflight models install`.", fix="install-models",
            )
        try:
            return open_llama(path, n_threads=self._n_threads, **kwargs)
        except (ValueError, RuntimeError, OSError):
            raise ModelUnavailableError(
                "The local language model could not be loaded (the file is damaged or is not "
                "a model).",
                "Run `preflight models verify`; reinstall it with `preflight models install`.",
                fix="install-models",
            ) from None

    def _ensure_llm(self) -> Any:
        if self._llm is None:
            log.info("loading SLM %s", self.model_path.name)
            self._llm = self._open(n_ctx=self._n_ctx, seed=0)
            self._install_abort(self._llm)
        return self._llm

    def _install_abort(self, llm: Any) -> None:
        """Let llama.cpp stop inside a batch when the running generation is cancelled:
        ``llama_decode`` then fails, and :meth:`_generate` turns that into Cancelled."""
        try:
            import llama_cpp

            @llama_cpp.ggml_abort_callback
            def abort(_data: Any) -> bool:
                event = self._abort_on
                stop = bool(event is not None and event.is_set())
                if stop:
                    # llama.cpp reports the decode it was told to abandon as an error on
                    # stderr ("decode: removing memory module entries ..."): the stop is
                    # ours, so it stays quiet until this generation has ended.
                    _LLAMA_LOG.setLevel(logging.CRITICAL)
                return stop

            llama_cpp.llama_set_abort_callback(llm.ctx, abort, None)
        except (AttributeError, TypeError) as exc:   # an older binding: per token only
            log.warning("llama.cpp abort callback unavailable (%s)", type(exc).__name__)
            return
        self._abort_cb = abort

    def _fit_document(self, llm: Any, text: str, max_tokens: int) -> str:
        """Cut the document so prompt + answer fit in the context (keeps the start)."""
        budget = self._n_ctx - max_tokens - _PROMPT_OVERHEAD_TOKENS
        tokens = llm.tokenize(text.encode(), add_bos=False)
        if len(tokens) <= budget:
            return text
        log.warning("document has %d tokens; the SLM reads the first %d", len(tokens), budget)
        return llm.detokenize(tokens[:budget]).decode("utf-8", errors="ignore")

    def _generate(
        self,
        task: Task,
        text: str,
        on_token: TokenCallback | None,
        cancel: threading.Event | None,
    ) -> ModelAnswer:
        if cancel is not None and cancel.is_set():
            raise Cancelled("Stopped the local model.")
        llm = self._ensure_llm()
        # The answer may take at most half the context: the document needs the rest.
        max_tokens = min(task.max_tokens, self._n_ctx // 2)
        document = self._fit_document(llm, text, max_tokens)
        # Evaluate the whole prompt afresh: llama.cpp would otherwise reuse the KV cache of
        # a shared prefix and evaluate the rest in other batches, whose float rounding can
        # change a greedy answer — the same text must always give the same features.
        llm.reset()
        stream = llm.create_chat_completion(
            messages=self.messages(task, document),
            max_tokens=max_tokens,
            temperature=0.0,
            repeat_penalty=self._repeat_penalty,
            stream=True,
        )
        pieces: list[str] = []
        finish: str | None = None
        self._abort_on = cancel
        try:
            for chunk in stream:
                if cancel is not None and cancel.is_set():
                    raise Cancelled("Stopped the local model.")
                choice = chunk["choices"][0]
                finish = choice.get("finish_reason") or finish
                piece = choice["delta"].get("content") or ""
                if piece:
                    pieces.append(piece)
                    if on_token is not None:
                        on_token(piece)
        except RuntimeError:
            if cancel is not None and cancel.is_set():   # llama_decode aborted (see above)
                raise Cancelled("Stopped the local model.") from None
            raise
        finally:
            self._abort_on = None
            stream.close()  # stops llama.cpp mid-generation when we leave early
            if _LLAMA_LOG.level == logging.CRITICAL:
                _LLAMA_LOG.setLevel(logging.ERROR)   # llama-cpp-python's level (verbose off)
        return ModelAnswer("".join(pieces).strip(), finish)

    def _perplexity(self, text: str) -> float:
        llm = self._ensure_llm()
        tokens = llm.tokenize(text.encode(), add_bos=True)[: self._ppl_window]
        if len(tokens) < 2:
            return float("nan")
        # The scored tokens replace whatever the context held; llama-cpp-python must
        # forget it too, so the next generation evaluates its prompt from the start.
        llm.reset()
        try:
            nll = score_tokens(llm.ctx, llm.n_vocab(), tokens, _SCORE_BATCH)
        finally:
            clear_memory(llm.ctx)
        return float(math.exp(float(nll.mean())))


def task_messages(task: Task, document: str, system_prompt: str | None
                  ) -> list[dict[str, str]]:
    """``task``'s chat messages, its system message replaced by ``system_prompt`` (the
    manifest's, for the model role) when there is one. One builder for the in-process
    model and the company-hosted one, so both see the same prompts."""
    messages = task.messages(document)
    if not system_prompt:
        return messages
    rest = [m for m in messages if m["role"] != "system"]
    return [{"role": "system", "content": system_prompt}, *rest]


def clear_memory(ctx: Any) -> None:
    """Empty the KV cache of the llama.cpp context ``ctx``."""
    import llama_cpp

    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)


def score_tokens(ctx: Any, n_vocab: int, tokens: list[int], batch_size: int) -> np.ndarray:
    """Negative log-likelihood of ``tokens[1:]`` given the tokens before each, decoded
    from position 0 in the llama.cpp context ``ctx`` (its KV cache is emptied first),
    ``batch_size`` tokens per batch with the logits of every token requested."""
    import llama_cpp

    clear_memory(ctx)
    batch = llama_cpp.llama_batch_init(batch_size, 0, 1)
    parts: list[np.ndarray] = []
    try:
        for lo in range(0, len(tokens) - 1, batch_size):
            part = tokens[lo:lo + batch_size]
            batch.n_tokens = len(part)
            for i, token in enumerate(part):
                batch.token[i] = token
                batch.pos[i] = lo + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = True
            status = llama_cpp.llama_decode(ctx, batch)
            if status != 0:
                raise RuntimeError(f"llama_decode returned {status}")
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx),
                                           shape=(len(part), n_vocab))
            # row i predicts token lo + i + 1; the window's last token predicts nothing
            parts.append(token_nll(logits, tokens[lo:lo + len(part) + 1]))
    finally:
        llama_cpp.llama_batch_free(batch)
    return np.concatenate(parts)


def token_nll(scores: np.ndarray, tokens: list[int], rows: int = 16) -> np.ndarray:
    """Negative log-likelihood of ``tokens[1:]`` under the float32 logits ``scores[:-1]``,
    in float64, a few rows at a time: a whole-window float64 softmax costs ~300 MB of
    temporaries (vocabulary 49,152 x 256 rows x 8 bytes x 3). Every step is row-wise,
    so the values are the same as computing all rows at once."""
    n = len(tokens) - 1
    nll = np.empty(n, dtype=np.float64)
    for lo in range(0, n, rows):
        hi = min(lo + rows, n)
        logits = np.asarray(scores[lo:hi], dtype=np.float64)
        peak = logits.max(axis=1, keepdims=True)
        shifted = logits - peak
        np.exp(shifted, out=shifted)
        log_z = np.log(shifted.sum(axis=1)) + peak[:, 0]
        target = np.asarray(tokens[lo + 1:hi + 1])
        nll[lo:hi] = log_z - logits[np.arange(hi - lo), target]
    return nll
