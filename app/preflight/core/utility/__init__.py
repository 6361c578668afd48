"""Utility assessment: predict how useful a cloud answer on sanitized text will be.

``features`` (A–D and cheap extras), ``predictor`` (the shipped regressor), ``assess``
(two-stage assessment with the local SLM), ``recommend`` (the most private ε that is
still useful enough) and ``flow`` (learning from real answers).
"""
