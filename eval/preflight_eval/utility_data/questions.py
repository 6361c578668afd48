"""Questions whose answer is in the document, written by rule from its text.

The question-answering task of the utility data set asks the cloud one question about a
document. Each rule below finds a fact stated in the document and words a question
about it; the fact, as the document states it, is recorded as the reference answer.
The questions never contain the answer, and they name no person: the product sanitizes
the question with the document's policy (:mod:`preflight.core.send.question`), and a
question that named the applicant would change with the sanitization.

- court judgments (ECHR): the respondent State, the date the application was lodged,
  the single applicant's name, the applicant's representative;
- manual pages: what one command-line option does (its description in the page).
"""

from __future__ import annotations

import re

from preflight_eval.utility_data.corpus import Question

_ORIGIN = re.compile(r"The case originated in (?:an application|two applications|\w+ applications)"
                     r"[^)]*\) against (?P<state>(?:the )?[A-Z][\w ]+?) lodged with")
_LODGED = re.compile(r"(?:\(“the applicants?”\)|\bnationals?, [^.(]+?), on "
                     r"(?P<date>\d{1,2} (?:January|February|March|April|May|June|July|August|"
                     r"September|October|November|December) \d{4})")
_SINGLE = re.compile(r"\bby an? [\w ]+? national, (?P<name>(?:(?:Mr|Mrs|Ms|Miss)\.? )?"
                     r"[A-Z][^\s,(“]*(?: [A-Z][^\s,(“]*)+) \(“the applicant”\)")
_COUNSEL = re.compile(r"(?:applicants?|He|She) (?:was|were) represented by "
                      r"(?P<who>(?:Mr|Mrs|Ms|Miss)\.? (?:[A-Z]\.\s?)*[A-Z][^\s,]*"
                      r"(?: [A-Z][^\s,]*)*), an? (?:lawyer|solicitor|barrister) practising in "
                      r"(?P<city>[A-Z][\w]+)")


def judgment_questions(text: str) -> tuple[Question, ...]:
    """The questions the rules find in an ECHR judgment (possibly none)."""
    out: list[Question] = []
    origin = _ORIGIN.search(text)
    if origin:
        out.append(Question("Against which State was the application brought?",
                            origin.group("state"), "echr-state"))
        lodged = _LODGED.search(text, origin.end())
        if lodged and lodged.start() - origin.end() < 400:
            out.append(Question("On what date was the application lodged?",
                                lodged.group("date"), "echr-lodged"))
    single = _SINGLE.search(text)
    if single:
        out.append(Question("Who is the applicant?", single.group("name"), "echr-applicant"))
    counsel = _COUNSEL.search(text)
    if counsel:
        out.append(Question("Who represented the applicant, and where does that lawyer practise?",
                            f"{counsel.group('who')}, practising in {counsel.group('city')}",
                            "echr-counsel"))
    return tuple(out)


# "       -a, --all" (the option alone; its description on the next, deeper lines) or
# "       -c     with -lt: sort by ..." (the description on the same line)
_ARG = r"(?:[ =](?:<[^>\s]+>|\[[^\]\s]+\]|[A-Z][A-Z_:]*|[a-z_]+:[a-z_]+))?"
_OPTION = re.compile(r"^(?P<indent> {3,8})(?P<opt>--?[A-Za-z0-9][^\s,=]*" + _ARG
                     + r"(?:, --?[A-Za-z0-9][^\s,=]*" + _ARG + r")*)"
                     r"(?:(?P<gap> {2,})(?P<rest>\S.*))?$")


def man_options(text: str) -> list[tuple[str, str]]:
    """(option as written, its description) for each option the page describes."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _OPTION.match(line)
        if not m:
            continue
        indent = len(m.group("indent"))
        desc = [m.group("rest")] if m.group("rest") else []
        for nxt in lines[i + 1:]:
            lead = len(nxt) - len(nxt.lstrip(" "))
            if not nxt.strip() or lead <= indent:
                break
            desc.append(nxt.strip())
        description = " ".join(desc).strip()
        # --help and --version say the same on every page: no question about this one
        if len(description.split()) >= 4 and not re.search(r"help|version|usage",
                                                            m.group("opt")):
            out.append((m.group("opt"), description))
    return out


def manual_questions(text: str, command: str) -> tuple[Question, ...]:
    """One question per described option of the page's command (possibly none)."""
    return tuple(Question(f"What does the {opt} option of {command} do?", desc, "man-option")
                 for opt, desc in man_options(text))
