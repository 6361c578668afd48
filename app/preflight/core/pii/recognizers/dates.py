"""Dates of birth: a date written right after "born", "DOB", "date of birth"..."""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer
from preflight.core.types import Evidence

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|Jun(?:e)?|Jul(?:y)?|"
           r"Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]\d\d|20\d\d)"
DATE = (
    rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:{_YEAR}|\d\d)"            # 03/14/1985, 14.03.85
    rf"|{_YEAR}[/.-]\d{{1,2}}[/.-]\d{{1,2}}"                         # 1985-03-14
    rf"|{_MONTHS}[ \t]+{_DAY},?[ \t]+{_YEAR}"                        # March 14, 1985
    rf"|{_DAY}(?:[ \t]+of)?[ \t]+{_MONTHS},?[ \t]+{_YEAR}"           # 14 March 1985
    rf"|{_MONTHS}[ \t]+{_YEAR})"                                     # March 1985
)
_CUE = (r"(?:\bborn\b|\bD\.?O\.?B\b\.?|\bdate[ \t]+of[ \t]+birth\b|\bbirth[ \t]*date\b|"
        r"\bbirthday\b|\bb\.(?=[ \t]*\d))")
# a cue, then up to 30 characters without a sentence end, then the date
_DOB = re.compile(rf"{_CUE}[^.;\n\d]{{0,30}}?(?:[ \t:]|\bon\b|\bin\b)[ \t]*({DATE})(?![\d])",
                  re.IGNORECASE)


class DateOfBirthRecognizer(RuleRecognizer):
    """A date that follows a birth cue within the same clause."""

    evidence = Evidence.RULE

    RULES = (
        Rule("DATE_OF_BIRTH", _DOB, 0.9,
             "A date written right after a birth cue (born, DOB, date of birth)", group=1),
    )
