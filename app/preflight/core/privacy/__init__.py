"""Measured privacy of a payload: what an attacker could still learn from it.

- :mod:`.dx_attack` (with :mod:`.dx_likelihood`, :mod:`.dx_prior`): the optimal
  context-free (Bayesian) attack on d_X output, and the naive attacks it is compared with.
- :mod:`.quasi`: the quasi-identifiers (dates, places, ages, organizations, job titles)
  the payload still carries as written, and a warning when several remain together.
- :mod:`.reconstruct`: the contextual reconstruction attack — the local SLM is asked to
  restore the original from the payload; scored against the values the sanitization
  replaced.
- :mod:`.ledger`: the ε ledger per document (sequential composition over every send of
  the same or a near-duplicate document).

Core only: every model comes in through :mod:`preflight.core.ports`.
"""
