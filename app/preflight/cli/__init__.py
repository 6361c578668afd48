"""The command-line face of Preflight."""
