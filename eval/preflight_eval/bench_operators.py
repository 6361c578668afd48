"""Classic operators, restore and stream restore: median wall time per document.

    .venv/bin/python -m preflight_eval.bench_operators [--runs 15] [--words 1000]

The document is synthetic (Faker, fixed seed): prose with a PII value every ~12 words
(names that repeat, emails, phones, cards, IBANs, dates), with exact spans, so the numbers
measure the operators alone, not detection. Prints one line per step with the median.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from faker import Faker

from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.vault import StreamRestorer, restore
from preflight.core.types import Category, Span

METHODS = ["redact", "delete", "mask", "generalize", "placeholder", "pseudonym"]


def synthetic_document(words: int, seed: int = 0) -> tuple[str, list[Span]]:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    people = [fake.name() for _ in range(max(3, words // 100))]
    makers = [
        ("PERSON", lambda: rng.choice(people)),
        ("EMAIL_ADDRESS", fake.email),
        ("PHONE_NUMBER", fake.phone_number),
        ("CREDIT_CARD", fake.credit_card_number),
        ("IBAN_CODE", fake.iban),
        ("DATE_TIME", lambda: fake.date(pattern="%B %d, %Y")),
        ("LOCATION", fake.city),
        ("AGE", lambda: f"{rng.randint(18, 90)} years old"),
    ]
    text, spans, count = "", [], 0
    while count < words:
        filler = fake.sentence(nb_words=10)
        text += filler + " "
        count += len(filler.split())
        typ, make = rng.choice(makers)
        value = make()
        spans.append(Span(len(text), len(text) + len(value), typ,
                          Category.DIRECT_IDENTIFIER, 1.0, "bench", "bench"))
        text += value + ". "
        count += len(value.split())
    return text, spans


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--words", type=int, default=1000)
    args = ap.parse_args()
    text, spans = synthetic_document(args.words)
    print(f"document: {len(text.split())} words, {len(text)} chars, {len(spans)} spans, "
          f"median of {args.runs} runs")
    params = SanitizeParams(seed=1)
    for method in METHODS:
        t = median_time(lambda: create_mechanism(method).sanitize(text, spans, params),
                        args.runs)
        print(f"sanitize {method:<12} {t * 1000:8.2f} ms")
    for method in ("placeholder", "pseudonym"):
        mech = create_mechanism(method)
        out = mech.sanitize(text, spans, params).text
        assert restore(out, mech.vault) == text
        t = median_time(lambda: restore(out, mech.vault), args.runs)
        print(f"restore  {method:<12} {t * 1000:8.2f} ms")

        def stream() -> None:
            sr = StreamRestorer(mech.vault)
            for i in range(0, len(out), 4):  # ~1 token per chunk, like an SSE stream
                sr.feed(out[i:i + 4])
            sr.flush()

        t = median_time(stream, max(3, args.runs // 3))
        print(f"stream   {method:<12} {t * 1000:8.2f} ms  ({len(out) // 4} chunks of 4 chars)")


if __name__ == "__main__":
    main()
