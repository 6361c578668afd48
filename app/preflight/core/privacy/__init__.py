"""Measured privacy of a payload: attacks on what a sanitized text still reveals."""
