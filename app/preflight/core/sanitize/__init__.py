"""Sanitization mechanisms: classic operators and d_X-privacy, behind one registry."""
