"""Constructor wiring (model path / locator / none), the threshold guard, detection
windows on long documents, and propagation of name parts in other scripts."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from preflight.core.config import DetectionSettings
from preflight.core.errors import ConfigError, ModelUnavailableError
from preflight.core.pii.detector import PiiDetector, text_windows
from preflight.core.pii.propagate import name_parts, propagate_values, trie_regex
from preflight.core.ports import ModelLocator
from preflight.core.types import Category, Span


class _Locator:
    """A ModelLocator fake that records what it was asked for."""

    def __init__(self, path: Path | None) -> None:
        self.asked: list[str] = []
        self._path = path

    def path(self, role: str) -> Path:
        self.asked.append(role)
        if self._path is None:
            raise ModelUnavailableError("The ner model is not installed.", "Install it.")
        return self._path


def test_locator_fake_matches_the_protocol():
    assert inspect.signature(_Locator.path).parameters.keys() == \
        inspect.signature(ModelLocator.path).parameters.keys()


def test_no_model_configured_degrades_with_a_warning():
    det = PiiDetector()
    spans = det.detect("card 4111 1111 1111 1111")
    assert [s.type for s in spans] == ["CREDIT_CARD"]
    assert det.ner_available is False
    assert "No NER model was configured" in det.warnings[0]
    assert "preflight models install" in det.warnings[0]


def test_locator_is_asked_for_the_ner_model():
    locator = _Locator(None)
    det = PiiDetector(models=locator)
    det.load()
    assert locator.asked == ["ner"]
    assert "not installed" in det.warnings[0]


def test_locator_path_is_used(tmp_path):
    locator = _Locator(tmp_path / "missing")
    det = PiiDetector(models=locator)
    det.load()
    assert "does not exist" in det.warnings[0] and str(tmp_path) in det.warnings[0]


@pytest.mark.parametrize("threshold", [1.5, -0.1, float("nan")])
def test_threshold_outside_0_1_is_refused(threshold):
    with pytest.raises(ConfigError, match="outside 0"):
        PiiDetector(DetectionSettings(score_threshold=threshold))
    det = PiiDetector()
    det.settings = DetectionSettings(score_threshold=threshold)
    with pytest.raises(ConfigError):
        det.detect("x")


def test_windows_tile_the_text_and_overlap():
    text = ("word " * 30 + "\n\n") * 400
    wins = text_windows(text, size=2000, overlap=200)
    assert len(wins) > 5
    assert wins[0][2] == 0 and wins[-1][3] == len(text)
    for (s, e, a, b), nxt in zip(wins, wins[1:]):
        assert b == nxt[2]                       # own parts tile the text
        assert s <= a < b <= e and e - b >= 150  # context after the own part
        assert text[b - 2:b] == "\n\n"           # cut at a paragraph break
    assert text_windows("short", size=2000) == [(0, 5, 0, 5)]


def test_entity_on_a_window_boundary_is_found_once(monkeypatch):
    import preflight.core.pii.detector as mod

    monkeypatch.setattr(mod, "WINDOW_CHARS", 1000)
    monkeypatch.setattr(mod, "WINDOW_OVERLAP", 300)
    monkeypatch.setattr(mod.text_windows, "__defaults__", (1000, 300))
    filler = "The model improves the results on the data set. " * 19   # ~950 chars
    text = filler + "mail jane.roe@acme.com or card 4111 1111 1111 1111 now. " + filler * 3
    det = PiiDetector()
    spans = det.detect(text)
    values = sorted(text[s.start:s.end] for s in spans)
    assert values == ["4111 1111 1111 1111", "jane.roe@acme.com"]
    assert len(text_windows(text)) > 1


def test_a_token_longer_than_the_window_overlap_is_covered_whole(monkeypatch):
    # A pasted key blob with no break to cut at: each window sees a piece of it. The
    # pieces after the first used to be dropped as "the previous window's", so all but
    # the first window's worth of the blob was sent as written.
    import base64
    import random

    import preflight.core.pii.detector as mod

    monkeypatch.setattr(mod.text_windows, "__defaults__", (1000, 300))
    rng = random.Random(5)
    blob = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(3000))).decode()
    text = f"Attachment:\n{blob}\nThanks, and see you soon."
    assert len(text_windows(text)) >= 4
    secrets = [s for s in PiiDetector().detect(text) if s.type == "SECRET"]
    start = text.index(blob)
    assert [(s.start, s.end) for s in secrets] == [(start, start + len(blob))]


def test_values_propagate_across_windows(monkeypatch):
    import preflight.core.pii.detector as mod

    monkeypatch.setattr(mod.text_windows, "__defaults__", (1000, 300))
    filler = "The model improves the results on the data set. " * 40
    text = "Name: Jane Roe\n" + filler + "Later Roe wrote back. " + filler
    spans = PiiDetector().detect(text)
    later = text.index("Roe wrote")
    assert any(s.start == later and s.type == "PERSON" for s in spans)


def _person(text: str, value: str) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), "PERSON", Category.DIRECT_IDENTIFIER, 0.8, "X", "x")


@pytest.mark.parametrize("name, alone", [
    ("Иван Петров", "Петров"),          # Cyrillic
    ("Νίκος Παπαδόπουλος", "Παπαδόπουλος"),
    ("محمد العلي", "العلي"),            # Arabic: no capitals
    ("王小明", "小明"),                  # Chinese: given name, no spaces
    ("김민준", "민준"),
])
def test_name_parts_in_other_scripts_propagate(name, alone):
    text = f"Signed {name}. Later {alone}説 agreed." if alone == "小明" else \
        f"Signed {name}. Later {alone} agreed."
    first = _person(text, name)
    found = [text[s.start:s.end] for s in propagate_values(text, [first])]
    assert alone in found
    assert alone in name_parts(name)


def test_trie_regex_prefers_the_longest_term():
    import re

    rx = re.compile(rf"(?<!\w)(?:{trie_regex(['Ann', 'Ann Lee', 'Anna'])})(?!\w)", re.I)
    assert [m.group() for m in rx.finditer("ann  lee, Anna, Ann. Annex")] == \
        ["ann  lee", "Anna", "Ann"]
    assert trie_regex([]) is None


def test_trie_regex_matches_like_a_longest_first_alternation():
    import random
    import re

    def alternation(terms):
        folded = sorted({" ".join(t.split()).lower() for t in terms if t.split()},
                        key=len, reverse=True)
        return "|".join(r"\s+".join(map(re.escape, t.split(" "))) for t in folded)

    rng = random.Random(7)
    for _ in range(2000):
        terms = ["".join(rng.choice("ab c") for _ in range(rng.randint(1, 6)))
                 for _ in range(rng.randint(1, 6))]
        text = "".join(rng.choice("ab  c.") for _ in range(30))
        ours, ref = trie_regex(terms), alternation(terms)
        if ours is None:
            assert not ref
            continue
        spans = [[m.span() for m in re.finditer(rf"(?<!\w)(?:{rx})(?!\w)", text, re.I)]
                 for rx in (ours, ref)]
        assert spans[0] == spans[1], (terms, text)


def test_a_value_longer_than_the_call_stack_propagates():
    # A detected key block is thousands of characters: the trie used to recurse once per
    # character and crashed the whole detection (RecursionError) on a repeated key.
    import random
    import string

    rng = random.Random(1)
    key = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(20_000))
    text = f"key {key} and again {key}."
    first = Span(4, 4 + len(key), "SECRET", Category.SECRET, 0.9, "test", "")
    found = propagate_values(text, [first])
    assert [(s.start, s.end) for s in found] == [(text.rindex(key), text.rindex(key) + len(key))]


def test_bisect_context_enhancer_finds_the_same_token_as_presidio():
    import random

    from preflight.core.pii.presidio_loader import import_presidio

    import_presidio()
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    from preflight.core.pii.context import BisectContextEnhancer

    rng = random.Random(3)
    fast = BisectContextEnhancer()
    for _ in range(50):
        tokens, indices, pos = [], [], 0
        for _ in range(rng.randint(1, 30)):
            pos += rng.randint(0, 2)                 # spaces between tokens (or none)
            word = "x" * rng.randint(1, 6)
            tokens.append(word)
            indices.append(pos)
            pos += len(word)
        for start in range(pos):
            expected = LemmaContextAwareEnhancer._find_index_of_match_token(
                "w", start, tokens, indices)
            assert fast._find_index_of_match_token("w", start, tokens, indices) == expected


def test_a_name_part_in_a_lower_case_sign_off_propagates():
    # A part of a name (not the whole value, which matches in any case): "tom" of "Tom
    # Baker" in prose could be a word; alone on the last line it is the signature.
    text = "Tom Baker wrote that we will meet.\nthanks tom for it\n\n-tom\n"
    first = Span(0, 9, "PERSON", Category.DIRECT_IDENTIFIER, 0.85, "test", "")
    found = [(text[s.start:s.end], s.start) for s in propagate_values(text, [first])]
    assert found == [("tom", text.rindex("tom"))]      # the sign-off, not the prose "tom"
