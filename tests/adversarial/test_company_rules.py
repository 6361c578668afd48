"""The company's minimums hold against everything the user controls: the settings file
(allow-list, score threshold, assessor endpoint, provider definitions), CLI flags
(--accept-degraded-detection, --remember-allow), the window's overrides — each either
cannot loosen a company rule or is refused with one line. Loopback servers only; the
real detector where detection is the point.

The audit log's existence and keys bound to a provider's origin are in
test_company_audit_and_keys.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _fakes import FakeDetector, fake_mechanisms  # noqa: E402
from _loopback import CaptureServer  # noqa: E402
from _models import require_model  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.app.services import Services  # noqa: E402
from preflight.cli import main as cli  # noqa: E402
from preflight.core.config import (  # noqa: E402
    AssessorEndpointSettings, DetectionSettings, ProviderSettings, Settings, load_settings,
    save_settings, settings_path,
)
from preflight.core.org_policy import load_org_policy  # noqa: E402
from preflight.core.send.plan import DEGRADED_DETECTOR_ID  # noqa: E402
from preflight.core.send.session import Confirmation, SendBlocked  # noqa: E402
from preflight.core.tasks import SUMMARIZE  # noqa: E402

CARD = "4539 1488 0343 6467"          # Luhn-valid (checked below)
EMAIL = "alice.martin@brightwater.co.uk"
NAMES = ("Alice Martin", "Bob Stone")
LETTER = (f"Hi team,\nplease refund the duplicate charge for Alice Martin ({EMAIL}). Her "
          f"card {CARD} was billed twice on the 3rd of May. Bob Stone approved it.\n"
          "Thanks, Carol")
PROTECTED = (*NAMES, EMAIL, CARD)

STRICT = """\
allow_overrides = false
allowed_providers = ["{loop}"]
[minimum.categories]
direct_identifier = "placeholder"
"""


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()][::-1]
    return sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2)
               for i, d in enumerate(digits)) % 10 == 0


def write_org(text: str) -> Path:
    import os

    path = Path(os.environ["PREFLIGHT_ORG_POLICY"])
    path.write_text(text, encoding="utf-8")
    return path


def leaked(server: CaptureServer, values=PROTECTED) -> list[str]:
    """The values found in any byte the server received (as sent, digits only, any case)."""
    seen = b"".join(r.all_bytes for r in server.requests).decode("utf-8", "replace")
    try:       # the JSON body escapes nothing here, but read it as the provider would
        seen += "".join(json.dumps(json.loads(r.body), ensure_ascii=False)
                        for r in server.requests if r.body)
    except ValueError:
        pass
    digits = "".join(c for c in seen if c.isdigit())
    return [v for v in values if v.casefold() in seen.casefold()
            or (v.replace(" ", "").isdigit() and v.replace(" ", "") in digits)]


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


def send(doc: Path, *extra: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(["send", str(doc), "--yes", "--no-learn", *extra])
    return code, err.getvalue()


def user_settings(server: CaptureServer, **detection) -> None:
    save_settings(Settings(detection=DetectionSettings(**detection),
                           providers=[ProviderSettings("loop", server.url, "m")],
                           default_provider="loop"))


# -- the user's detection settings ----------------------------------------------------

# Each row: what a user (or a script acting for them) writes into their own settings.
LOOSENING = [
    pytest.param({"allow_list": list(PROTECTED)}, id="allow-list of the values"),
    pytest.param({"allow_list": ["Alice", "Martin", "Bob", "Stone", EMAIL, CARD]},
                 id="allow-list of name parts"),
    pytest.param({"score_threshold": 1.0}, id="threshold 1.0"),
    pytest.param({"score_threshold": 0.99, "allow_list": [EMAIL, CARD]},
                 id="threshold 0.99 and allow-list"),
]


@pytest.mark.parametrize("detection", LOOSENING)
def test_the_user_s_detection_settings_cannot_send_protected_types(server, tmp_path,
                                                                   detection):
    require_model("ner")
    assert luhn_ok(CARD)
    write_org(STRICT.format(loop=server.url))
    user_settings(server, **detection)
    doc = tmp_path / "refund.txt"
    doc.write_text(LETTER, encoding="utf-8")
    code, err = send(doc, "--policy", "identifiers")
    assert code == 0, err              # sanitized, not refused: the company's floor applies
    assert len(server.requests) == 1 and leaked(server) == []


def test_without_a_company_policy_the_allow_list_is_the_user_s(server, tmp_path):
    require_model("ner")
    user_settings(server, allow_list=["Bob Stone"])
    doc = tmp_path / "refund.txt"
    doc.write_text(LETTER, encoding="utf-8")
    code, err = send(doc, "--policy", "identifiers")
    assert code == 0, err
    assert leaked(server) == ["Bob Stone"]            # the user's own choice, no company


def test_the_window_s_detector_applies_the_same_floor(server):
    require_model("ner")
    write_org(STRICT.format(loop=server.url))
    settings = Settings(detection=DetectionSettings(allow_list=list(PROTECTED),
                                                    score_threshold=1.0))
    from preflight.app.window_doorway import WindowDoorway

    door = WindowDoorway(settings)          # its detector runs in a child process
    try:
        found = {LETTER[s.start:s.end] for s in door.detect(LETTER)}
    finally:
        door.shutdown()
    cli_found = {LETTER[s.start:s.end] for s in Services(settings).make_detector()
                 .detect(LETTER)}
    assert set(PROTECTED) <= found and found == cli_found


def test_info_and_the_window_say_what_the_company_changes(server, capsys):
    write_org(STRICT.format(loop=server.url) + "[detection]\nmax_score_threshold = 0.5\n")
    user_settings(server, allow_list=["Bob Stone"], score_threshold=0.9)
    assert cli.main(["info", "--json"]) == 0
    limits = json.loads(capsys.readouterr().out)["org_policy"]["limits_on_your_settings"]
    assert any("allow-list does not apply to direct identifiers" in line for line in limits)
    assert any("threshold 0.9" in line and "it is 0.5" in line for line in limits)
    from preflight.app.window_doorway import WindowDoorway

    assert WindowDoorway(load_settings()).company_limits() == limits


def test_remember_allow_is_refused_before_the_allow_list_changes(server, tmp_path,
                                                                 monkeypatch):
    from preflight.core.send.session import finding_id

    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None:
                        FakeDetector())
    write_org(STRICT.format(loop=server.url))
    user_settings(server)
    doc = tmp_path / "doc.txt"
    doc.write_text("Carol Diaz asked for the Q3 budget.", encoding="utf-8")
    with fake_mechanisms():
        code, err = send(doc, "--policy", "fake-identity", "--remember-allow",
                         finding_id("PERSON", "Carol Diaz"))
    errors = [line for line in err.splitlines() if line.startswith("preflight: error")]
    assert code != 0 and len(errors) == 1 and "Traceback" not in err
    assert "does not allow sending residual personal data" in errors[0]
    assert load_settings().detection.allow_list == [] and server.requests == []


# -- a degraded detector ---------------------------------------------------------------

class DegradedDetector(FakeDetector):
    def __init__(self) -> None:
        super().__init__(names=())
        self.warnings = ["the NER model is missing: names are not detected"]


@pytest.mark.parametrize("org, sends", [
    ("allow_overrides = false\n", False),
    ("allow_overrides = true\nallow_degraded_detection = false\n", False),
    ("allow_overrides = false\nallow_degraded_detection = true\n", True),
])
def test_degraded_detection_is_the_company_s_call(server, tmp_path, monkeypatch, org, sends):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None:
                        DegradedDetector())
    write_org(org)
    user_settings(server)
    doc = tmp_path / "doc.txt"
    doc.write_text("Bob Stone asked for the Q3 budget by Friday.", encoding="utf-8")
    with fake_mechanisms():
        code, err = send(doc, "--method", "placeholder", "--accept-degraded-detection")
    if sends:
        assert code == 0, err
        assert len(server.requests) == 1
        return
    assert code != 0 and server.requests == []
    errors = [line for line in err.splitlines() if line.startswith("preflight: error")]
    assert len(errors) == 1 and "does not allow sending while the PII detector runs " \
        "degraded" in errors[0] and "Traceback" not in err
    # the window's per-item override of the degraded notice is refused the same way
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path,
                          detector=DegradedDetector(), org_policy=load_org_policy())
    with fake_mechanisms():
        plan = placeholder_plan(session)
    for confirmation in (Confirmation(True, frozenset({DEGRADED_DETECTOR_ID})),
                         Confirmation(True, accept_degraded_detection=True)):
        with pytest.raises(SendBlocked, match="runs degraded"):
            session.execute(plan, confirmation, learn=False)
    assert server.requests == []


# -- the assessor ------------------------------------------------------------------------

ORIGINAL = "Alice Martin of 14 Rue Caulaincourt wrote to Bob Stone about the merger."


def assessor_calls(services: Services) -> None:
    """What the assessor sends for one document: the sanitized text to its model, the
    original to the model it keeps for the original (see core/utility/assess.py)."""
    models = services.assessor_models()
    models.slm.run(SUMMARIZE, "<PERSON_1> wrote to <PERSON_2> about the merger.")
    (models.original or models.slm).run(SUMMARIZE, ORIGINAL)


class LocalFake:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def run(self, task, text, on_token=None, cancel=None):
        self.texts.append(text)
        return "a local answer"

    def perplexity(self, text):
        return 10.0


@pytest.fixture
def local_slm(monkeypatch):
    fake = LocalFake()
    monkeypatch.setattr(Services, "slm", lambda self: fake)
    monkeypatch.setattr(Services, "assessor_slm_role", lambda self: "slm")
    return fake


def test_a_user_endpoint_never_receives_the_original(server, local_slm):
    # an older settings file may still say "internal": it is not the user's to say
    settings_path().write_text(json.dumps({"assessor_endpoint": {
        "url": server.url, "model": "m", "internal": True}}), encoding="utf-8")
    services = Services(load_settings())
    assessor_calls(services)
    assert len(server.requests) == 1 and leaked(server, NAMES) == []
    assert local_slm.texts == [ORIGINAL]                  # the original stayed here
    place = services.assessor_place()
    assert place.where == "server" and "company" not in place.label
    assert "stayed on this computer" in place.note


def test_a_user_endpoint_outside_the_allowed_providers_is_not_used(server, local_slm):
    write_org('allowed_providers = ["https://api.example-llm.test/v1"]\n')
    services = Services(Settings(assessor_endpoint=AssessorEndpointSettings(server.url)))
    assessor_calls(services)
    assert server.requests == [] and len(local_slm.texts) == 2
    from preflight.app.company_limits import limits_on_settings

    (line,) = limits_on_settings(services.org_policy(), services.settings)
    assert f"assessor server in your settings ({server.url}) is not used" in line


@pytest.mark.parametrize("url", ["http://gpu-box.corp.example:8000/v1",
                                 "http://10.1.2.3:8000/v1", "HTTP://gpu:8000"])
def test_a_company_internal_assessor_needs_https_off_this_computer(url):
    org = load_org_policy(write_org(f'[assessor]\nurl = "{url}"\ninternal = true\n'))
    assert org.broken and "needs an https URL" in org.send_block_reason()


def test_the_company_internal_assessor_gets_the_original(server, local_slm):
    write_org(f'[assessor]\nurl = "{server.url}"\ninternal = true\n')   # loopback: http ok
    services = Services(Settings())
    assessor_calls(services)
    assert len(server.requests) == 2 and local_slm.texts == []
    assert services.assessor_place().where == "company"


# -- provider definitions ----------------------------------------------------------------

@pytest.mark.parametrize("tail", ["/v1/../admin", "/v1/%2e%2e/admin", "/v1/./x/../../v2"])
def test_a_base_url_cannot_climb_out_of_an_allowed_prefix(server, tmp_path, monkeypatch,
                                                          tail):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None:
                        FakeDetector())
    root = server.url.removesuffix("/v1")
    write_org(f'allowed_providers = ["{root}/v1"]\n')
    # written into the settings file directly, past `providers add`
    save_settings(Settings(providers=[ProviderSettings("loop", root + tail, "m")],
                           default_provider="loop"))
    doc = tmp_path / "doc.txt"
    doc.write_text("The Q3 budget is due on Friday.", encoding="utf-8")
    with fake_mechanisms():
        code, err = send(doc, "--method", "placeholder")
    # refused: as outside the company's prefix, or already as a base URL that is not plain
    assert code == 2 and ("is not allowed by your organization's policy" in err
                          or "has an invalid base URL" in err), err
    assert server.requests == []
