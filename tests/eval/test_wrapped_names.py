"""The wrapped-names check reports a name kept whole across a wrapped line, and whether its
second line went out without the rule."""

from __future__ import annotations

from _models import require_model
from preflight_eval.wrapped_names import wrapped_names

WRAPPED = ("The sample server was originally written by Susan Angebranndt, Raymond\n"
           "Drewry, Philip Karlton, and Todd Newman, from Digital Equipment\n"
           "Corporation, with support from a large cast.\n")


def test_a_wrapped_name_and_what_the_rule_changed():
    require_model("ner")
    rows = wrapped_names(["No name here at all.", WRAPPED])
    assert rows == [(1, "Raymond\nDrewry", False)]
