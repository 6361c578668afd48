"""Credentials: vendor API keys with known prefixes, private keys, passwords and tokens
in context, and a generic high-entropy token detector."""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer

from preflight.core.pii.recognizers.base import (
    Rule, RuleRecognizer, context_regex, cue, has_context, make_result,
)
from preflight.core.pii.recognizers.prose_secrets import (
    CUE_WORDS, PROSE_SECRET_RULES, not_masked, secret_shaped,
)
from preflight.core.pii.recognizers.validators import char_classes, shannon_entropy
from preflight.core.types import Evidence

_KEY_CONTEXT = context_regex([
    "key", "api key", "apikey", "token", "secret", "password", "passwd", "credential",
    "credentials", "auth", "authorization", "access key", "bearer", "private", "creds",
    "pwd", "pw", "passphrase", "passcode", "login", "client secret",
])


def _random_looking(value: str) -> bool:
    body = re.sub(r"^[a-z]+[-_](?:[a-z]+[-_])?", "", value)  # drop a vendor prefix
    return char_classes(body) >= 2 and shannon_entropy(body) >= 3.0


def _aws_secret_ok(value: str) -> bool:
    return char_classes(value) >= 3 and shannon_entropy(value) >= 3.5


def _long_enough_secret(value: str) -> bool:
    return len(value) >= 8 and char_classes(value) >= 2


_I = re.IGNORECASE
_B = r"(?<![A-Za-z0-9_-])"   # left boundary that also excludes '-' and '_'
_E = r"(?![A-Za-z0-9_-])"

VENDOR_KEY_RULES: tuple[Rule, ...] = (
    Rule("API_KEY", re.compile(_B + r"sk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?"
                               r"[A-Za-z0-9_-]{20,}" + _E), 0.95,
         "Starts with the sk- prefix of OpenAI/Anthropic API keys and looks random",
         validate=_random_looking, needs=cue("sk-")),
    Rule("API_KEY", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)"
                               r"[A-Z0-9]{16}\b"), 0.95,
         "Matches the format of an AWS access key ID",
         needs=cue("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA",
                   "AROA", "APKA")),
    Rule("API_KEY", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"), 0.97,
         "Matches the format of a GitHub token", needs=cue("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Rule("API_KEY", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"), 0.97,
         "Matches the format of a GitHub fine-grained token", needs=cue("github_pat_")),
    Rule("API_KEY", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0.95,
         "Matches the format of a GitLab token", needs=cue("glpat-")),
    Rule("API_KEY", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}\b"), 0.95,
         "Matches the format of a Slack token", needs=cue("xox")),
    Rule("API_KEY", re.compile(r"\bAIza[0-9A-Za-z_-]{35}" + _E), 0.9,
         "Matches the format of a Google API key", needs=cue("AIza")),
    Rule("API_KEY", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b"), 0.95,
         "Matches the format of a Stripe API key", needs=cue("_live_", "_test_")),
    Rule("API_KEY", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0.9,
         "Matches the format of a Hugging Face token", needs=cue("hf_")),
    Rule("API_KEY", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0.9,
         "Matches the format of an npm token", needs=cue("npm_")),
)

CONTEXT_SECRET_RULES: tuple[Rule, ...] = (
    Rule("SECRET", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                              r".*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", re.S),
         1.0, "A private key block", needs=cue("-----BEGIN ")),
    Rule("SECRET", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
         0.9, "Matches the three-part format of a JSON Web Token", needs=cue("eyJ")),
    Rule("SECRET", re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), 0.9,
         "A 40-character AWS secret access key next to a mention of one",
         validate=_aws_secret_ok,
         context=context_regex(["aws_secret_access_key", "secret access key", "aws secret",
                                "secret_key", "secret key", "aws_secret"]),
         require_context=True, window=60, context_why=""),
    Rule("SECRET", re.compile(r"\b[Bb]earer\s+([A-Za-z0-9._~+/-]{16,}=*)"), 0.85,
         "A bearer token in an authorization header", group=1, needs=cue("Bearer", "bearer")),
    Rule("SECRET", re.compile(r"\b(?:password|passwd|pwd|passphrase|passcode|pin)\b"
                              r"[ \t]*(?:[:=]|:=)[ \t]*[\"'“]?"
                              # a ';' before the next "Key=" of a connection string ends it
                              r"([^\s\"'”;](?:[^\s\"'”;]|;(?![\w ]{1,30}=)){1,126}"
                              r"[^\s\"'”;])", _I),
         0.85, "A value given as a password", group=1, validate=not_masked,
         needs=cue("pass", "pwd", "pin", ignore_case=True)),
    # names may sit inside identifiers (OPENAI_API_KEY=…), so no \b around them
    Rule("SECRET", re.compile(r"(?<![A-Za-z0-9])(?:api[ _-]?key|apikey|access[ _-]?token|"
                              r"auth[ _-]?token|client[ _-]?secret|secret[ _-]?key|secret|"
                              r"token)(?![A-Za-z0-9])"
                              r"[\"']?[ \t]*(?:[:=]|:=)[ \t]*[\"'“]?([^\s\"'”,;]{8,256})", _I),
         0.8, "A value assigned to a key, token or secret", group=1,
         validate=_long_enough_secret, needs=cue("key", "token", "secret", ignore_case=True)),
    Rule("SECRET", re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]+:([^\s:/@]{3,})@", _I), 0.9,
         "The password part of a URL with credentials", group=1, needs=cue("://")),
)


class SecretsRecognizer(RuleRecognizer):
    """Known vendor key formats and credentials in context (code and prose)."""

    evidence = Evidence.RULE

    RULES = VENDOR_KEY_RULES + CONTEXT_SECRET_RULES + PROSE_SECRET_RULES


_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-+/])[A-Za-z0-9_\-+/]{20,}={0,2}(?![A-Za-z0-9_\-+/=])")
_WORDLIKE = re.compile(r"[a-z]{4,}|[A-Z][a-z]{3,}|[A-Z]{4,}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", _I)
_HEX = re.compile(r"[0-9a-fA-F]+")


_VOWELS = set("aeiouyAEIOUY")
_CONSONANT_RUN = re.compile(r"[^aeiouyAEIOUY]{4,}")


def _pronounceable(run: str) -> bool:
    """Random letter runs rarely alternate vowels and consonants like words do."""
    vowels = sum(c in _VOWELS for c in run)
    return 0.25 <= vowels / len(run) <= 0.7 and not _CONSONANT_RUN.search(run)


def looks_like_secret(token: str) -> str | None:
    """Why a token looks like a random secret, or None.

    Random keys mix upper case, lower case and digits with high entropy and contain
    no word-like runs; identifiers, paths and prose do not.
    """
    if _UUID.fullmatch(token):
        return None
    core = token.rstrip("=")
    entropy = shannon_entropy(core)
    wordlike = sum(len(m) for m in _WORDLIKE.findall(core) if _pronounceable(m)) / len(core)
    if wordlike > 0.35 or ("/" in core and core.count("/") >= 2 and wordlike > 0.2):
        return None
    if _HEX.fullmatch(core):
        if len(core) >= 32 and entropy >= 3.0 and any(c.isalpha() for c in core):
            return "hex"
        return None
    has = (any(c.islower() for c in core), any(c.isupper() for c in core),
           any(c.isdigit() for c in core))
    if sum(has) == 3 and entropy >= 3.5 + (0.3 if len(core) < 24 else 0.0):
        return "mixed"
    return None


class HighEntropyTokenRecognizer(EntityRecognizer):
    """Long tokens that look random (Shannon entropy and character classes).

    Long hex strings (hashes, ids) count only with a key/token/secret word nearby.
    """

    evidence = Evidence.RULE

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["SECRET"], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "SECRET" not in entities:
            return []
        out = []
        for m in _TOKEN.finditer(text):
            kind = looks_like_secret(m.group())
            if kind is None:
                continue
            near = has_context(text, m.start(), m.end(), _KEY_CONTEXT, 40)
            if kind == "hex" and not near:
                continue
            score = 0.85 if near else 0.6
            why = ("A long random-looking token (high entropy, mixed letters and digits)"
                   if kind == "mixed" else "A long hexadecimal token")
            if near:
                why += " next to a key, token or password word"
            out.append(make_result(self, "SECRET", m.start(), m.end(), score, why))
        return out


# the rest of a sentence after a cue word: up to a full stop or a blank line, across the
# line breaks of wrapped prose ("the old credential was\nZq8!vR2m#Lp4"), at most 400
# characters (the value is a few words away)
_SENTENCE_REST = re.compile(r"(?:[^\n]|\n(?![ \t]*(?:\n|$))){0,400}?"
                            r"(?=\.(?:\s|$)|\n[ \t]*(?:\n|$)|$)")
_WORD_TOKEN = re.compile(r"[^\s,;()\[\]\"'“”‘’]+")
#: How many words after a cue word a random-looking value may stand.
CUE_REACH = 8


class CueSecretRecognizer(EntityRecognizer):
    """A random-looking value a few words after a credential word, whatever the syntax
    between them ("Here are the creds for staging — deploy / Qw3rty!9", "login details:
    user jdoe, Xk29!fLq")."""

    evidence = Evidence.RULE

    WHY = "A random-looking value a few words after a password, key or credential word"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["SECRET"], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "SECRET" not in entities:
            return []
        out = []
        for word in CUE_WORDS.finditer(text):
            rest = _SENTENCE_REST.match(text, word.end())
            stop = rest.end() if rest else min(len(text), word.end() + 400)
            for i, m in enumerate(_WORD_TOKEN.finditer(text, word.end(), stop)):
                if i >= CUE_REACH:
                    break
                start, end = m.span()
                while end > start and text[end - 1] in ".:?":
                    end -= 1                        # sentence punctuation, not the value
                if secret_shaped(text[start:end]):
                    out.append(make_result(self, "SECRET", start, end, 0.7, self.WHY))
        return out
