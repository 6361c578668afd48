"""Preflight's own Presidio recognizers (every module here subclasses Presidio's
``EntityRecognizer``, so Presidio is imported first, without its unused ML stack)."""

from preflight.core.pii.presidio_loader import import_presidio

import_presidio()
