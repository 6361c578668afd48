"""Qt-free core of Preflight: detection, sanitization, utility, sending."""
