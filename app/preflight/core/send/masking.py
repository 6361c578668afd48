"""How a value the user let through reads in the audit log: its type and a masked form
("EMAIL_ADDRESS j…@…com allowed"), readable in History without storing the value itself.
Secrets keep no character at all, only their length."""

from __future__ import annotations

SECRET_TYPES = frozenset({"PASSWORD", "SECRET", "API_KEY", "PRIVATE_KEY", "PIN", "TOKEN",
                          "CREDENTIAL"})


def mask_value(type_: str, value: str) -> str:
    """A hint of ``value``: first letters and the ending, never enough to read it back."""
    value = " ".join(value.split())
    if not value:
        return ""
    if type_.upper() in SECRET_TYPES or "SECRET" in type_.upper():
        return f"•••• ({len(value)} characters)"
    if "@" in value:
        local, _, domain = value.partition("@")
        tld = domain.rsplit(".", 1)[-1] if "." in domain else ""
        return f"{local[:1]}…@…{tld}"
    if " " in value and not any(ch.isdigit() for ch in value):     # a name: initials
        return " ".join(f"{w[:1]}…" for w in value.split(" "))
    if len(value) <= 4:
        return f"{value[:1]}…"
    return f"{value[:1]}…{value[-2:]}"


def override_label(type_: str, value: str) -> str:
    """The audit log's record of one override: ``"TYPE masked allowed"``."""
    masked = mask_value(type_, value)
    return f"{type_} {masked} allowed" if masked else f"{type_} allowed"
