"""Which local SLMs the utility assessor may use, and where each one's shipped files live.

Features C and D and the perplexities come from the assessor's SLM, so each SLM has a
regressor of its own, fitted on its own features, and defaults derived with it.
"""

from __future__ import annotations

#: Manifest roles the utility assessor's local SLM may be (``Settings.assessor_slm``);
#: the first is the default (Qwen2.5-Coder-0.5B: its features predict better, see
#: docs/BENCHMARKS.md "Which local SLM"), the others are fallbacks in this order. The d_X
#: space has its own role and never follows this choice.
ASSESSOR_SLMS = ("slm_qwen05", "slm")
DEFAULT_SLM_ROLE = ASSESSOR_SLMS[0]
#: The first default SLM (SmolLM2-135M): its files carry no role in their names
#: (``resources/utility/``, the user's ``utility_flow.sqlite``), so an install that
#: learned from its sends keeps them; a bundle without ``slm_role`` learned from it.
BASE_SLM_ROLE = "slm"


def shipped_folder(slm_role: str = DEFAULT_SLM_ROLE) -> tuple[str, ...]:
    """``resources/`` parts of the shipped utility files for ``slm_role``: SmolLM2's in
    ``utility/``, another SLM's in a sub-folder named by its role."""
    return ("utility",) if slm_role == BASE_SLM_ROLE else ("utility", slm_role)
