"""The sign-off study lists lines by their shape alone and reads the detector's persons."""

from types import SimpleNamespace

from preflight_eval.signoff_lines import lone_words


class _Persons:
    """A detector that calls every occurrence of the given words a person."""

    def __init__(self, *words: str) -> None:
        self.words = words

    def detect(self, text):
        return [SimpleNamespace(type="PERSON", start=i, end=i + len(w))
                for w in self.words for i in range(len(text)) if text.startswith(w, i)]


def test_lines_of_one_capitalized_word_are_listed_with_their_protection():
    texts = ["Works now.\n\n- Joe\n", "Thanks\n\nGreg.\n\n--Joe", "Ask Greg about it.\nok\n"]
    found = lone_words(_Persons("Greg"), texts)
    assert found == {("Joe", False): 2, ("Thanks", False): 1, ("Greg", True): 1}
