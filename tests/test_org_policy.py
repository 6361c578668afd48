"""The company policy file: strict reading (errors name the file and the line), the
fail-closed broken state, and its enforcement on the send path, `providers`, the settings
and `recommend`. The file is written under tmp_path and found through
PREFLIGHT_ORG_POLICY (tests/conftest.py points it at a missing file by default)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import keyring
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "core" / "send"))

from _fakes import FakeDetector, MemoryKeyring, fake_mechanisms  # noqa: E402
from _loopback import CaptureServer  # noqa: E402

from preflight.app.services import Services  # noqa: E402
from preflight.cli import main as cli  # noqa: E402
from preflight.core import paths  # noqa: E402
from preflight.core.config import (  # noqa: E402
    ProviderSettings, Settings, load_settings, save_settings,
)
from preflight.core.errors import ConfigError  # noqa: E402
from preflight.core.fsutil import file_sha256  # noqa: E402
from preflight.core.org_policy import OrgPolicy, load_org_policy  # noqa: E402
from preflight.core.sanitize.base import SanitizeParams  # noqa: E402
from preflight.core.sanitize.policy import PRESETS, Action, DxScope, Policy  # noqa: E402
from preflight.core.send.session import Confirmation, SendBlocked, SendSession  # noqa: E402
from preflight.core.types import Category  # noqa: E402

DOC = ("Alice Martin (alice.martin@corp.example) asked Bob Stone to review the Q3 budget "
       "before Friday. Alice Martin will present it to the board.")

VALID = """\
# Example Corp: deployed by IT
min_utility = 0.6
allow_overrides = false
allow_resend = false
default_policy = "identifiers"
allowed_providers = ["https://api.example-llm.test/v1", "{loop}"]

[epsilon]
min = 5
max = 50

[minimum.types]
PERSON = "placeholder"

[minimum.categories]
secret = "redact"
"""


def write_org(tmp_path: Path, text: str, monkeypatch) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("PREFLIGHT_ORG_POLICY", str(path))
    return path


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: FakeDetector())
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    with fake_mechanisms():
        yield
    keyring.set_keyring(previous)


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text(DOC, encoding="utf-8")
    return path


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return cli.main(argv)


# -- reading the file -------------------------------------------------------------------

def test_the_env_variable_names_the_file_and_a_missing_file_sets_nothing(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("PREFLIGHT_ORG_POLICY", str(tmp_path / "absent.toml"))
    assert paths.org_policy_path() == tmp_path / "absent.toml"
    org = load_org_policy()
    assert org == OrgPolicy.none() and org.send_block_reason() is None
    assert org.provider_allowed("https://anything.test/v1") and org.allow_resend
    monkeypatch.delenv("PREFLIGHT_ORG_POLICY")
    assert paths.org_policy_path().name == "policy.toml"


def test_a_valid_file_is_described_with_its_hash(tmp_path, monkeypatch):
    path = write_org(tmp_path, VALID.format(loop="http://127.0.0.1:9"), monkeypatch)
    org = load_org_policy()
    assert org.send_block_reason() is None
    info = org.describe()
    assert info["status"] == "ok" and info["file"] == str(path)
    assert info["sha256"] == file_sha256(path)
    assert info["sets"]["minimum"] == {"PERSON": "placeholder", "secret": "redact"}
    assert info["sets"]["epsilon"] == {"min": 5.0, "max": 50.0}
    assert (org.min_utility, org.allow_overrides, org.allow_resend, org.default_policy) == (
        0.6, False, False, "identifiers")


@pytest.mark.parametrize("text, line, words", [
    ('min_utility = 0.6\nallow_resend = false\nallowed_providers = ["https://a.test/v1"\n',
     3, "not valid TOML"),
    ('min_utility = 0.6\n\n[epsilon]\nmin = 5\n\n[minimum.types]\nPERSON = "hide"\n',
     7, "'PERSON' must be one of keep, generalize"),
    ('allow_resend = "no"\n', 1, "'allow_resend' must be true or false"),
    ('min_utility = 0.5\nmax_utility = 0.9\n', 2, "'max_utility' is not a company policy key"),
    ('[minimum]\ncategories.secrets = "redact"\n', 2, "'secrets' is not a category"),
    ('[epsilon]\nmin = 9\nmax = 3\n', 2, "epsilon.min (9) must be below epsilon.max (3)"),
    ('allowed_providers = [\n  "https://a.test/v1",\n  "ftp://b.test",\n]\n', 3,
     "'ftp://b.test' must be an http(s) URL"),
    ('min_utility = 2\n', 1, "'min_utility' must be a number from -1 to 1"),
])
def test_a_malformed_file_names_the_file_and_the_line(tmp_path, monkeypatch, text, line,
                                                      words):
    path = write_org(tmp_path, text, monkeypatch)
    org = load_org_policy()
    reason = org.send_block_reason()
    assert org.broken and reason is not None
    assert f"Your organization's policy file {path} is invalid (line {line}: " in reason
    assert words in reason and "ask your IT administrator" in reason
    assert "\n" not in reason
    with pytest.raises(ConfigError, match="is invalid"):
        org.check_provider("https://a.test/v1")
    assert org.describe()["status"] == "invalid"


def test_a_file_nested_too_deeply_fails_closed(tmp_path, monkeypatch):
    path = write_org(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n", monkeypatch)
    org = load_org_policy()
    reason = org.send_block_reason()
    assert org.broken and reason is not None
    assert f"Your organization's policy file {path} is invalid (not valid TOML" in reason
    assert "too deeply" in reason


def test_an_unreadable_policy_fails_closed(tmp_path, monkeypatch):
    folder = tmp_path / "policy.toml"
    folder.mkdir()
    monkeypatch.setenv("PREFLIGHT_ORG_POLICY", str(folder))
    org = load_org_policy()
    assert org.broken and "is a folder" in org.send_block_reason()
    assert not org.allow_overrides and not org.allow_resend


# -- minimum actions --------------------------------------------------------------------

def test_tighten_raises_what_is_below_the_minimum_and_says_what(tmp_path, monkeypatch):
    write_org(tmp_path, '[minimum.types]\nPERSON = "placeholder"\nDATE_TIME = "generalize"'
              '\n[minimum.categories]\nsecret = "redact"\n', monkeypatch)
    org = load_org_policy()
    loose = Policy(name="loose", title="loose", by_type={"PERSON": Action.KEEP},
                   fallback=Action.KEEP)
    report = org.tighten_report(loose)
    assert report.raised == {"secret": ("keep", "redact"), "DATE_TIME": ("keep", "generalize"),
                             "PERSON": ("keep", "placeholder")}
    tight = report.policy
    assert tight.by_type["PERSON"] is Action.PLACEHOLDER
    assert tight.by_category[Category.SECRET] is Action.REDACT
    # stricter actions are left alone: mask meets placeholder, delete meets redact
    strict = Policy(name="strict", title="s", by_type={"PERSON": Action.MASK},
                    fallback=Action.DELETE)
    assert org.tighten_report(strict).raised == {}
    org.check_policy(strict)
    # a d_X-only policy cannot meet a minimum: it becomes the hybrid
    dx = org.tighten_report(PRESETS["dx-all"])
    assert dx.raised["dx"] == ("all", "rest") and dx.policy.dx is DxScope.REST


def test_an_explicit_policy_below_the_minimum_is_refused_in_one_line(tmp_path, monkeypatch):
    path = write_org(tmp_path, '[minimum.types]\nPERSON = "placeholder"\n', monkeypatch)
    org = load_org_policy()
    user = Policy(name="mine", title="mine", by_type={"PERSON": Action.KEEP})
    with pytest.raises(ConfigError) as err:
        org.check_policy(user)
    text = str(err.value)
    assert "'mine' sets PERSON to keep" in text and str(path) in text
    assert err.value.exit_code == 2 and "\n" not in text
    # the window's legend asks the same rule type by type
    with pytest.raises(ConfigError, match="PERSON cannot be generalize"):
        org.check_action("PERSON", Action.GENERALIZE)
    org.check_action("PERSON", Action.REDACT)
    org.check_action("LOCATION", Action.KEEP)
    assert org.locked_types() == {"PERSON": Action.PLACEHOLDER}


def test_cli_policy_file_below_the_minimum_exits_2(tmp_path, monkeypatch, doc, capsys):
    path = write_org(tmp_path, '[minimum.types]\nPERSON = "placeholder"\n', monkeypatch)
    mine = tmp_path / "mine.toml"
    mine.write_text('name = "mine"\n[types]\nPERSON = "keep"\n', encoding="utf-8")
    assert cli.main(["sanitize", str(doc), "--policy", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(path) in err and "PERSON" in err and len(err.splitlines()) == 1


def test_a_preset_is_raised_to_the_minimum_and_says_so(tmp_path, monkeypatch, doc, capsys):
    write_org(tmp_path, '[minimum.types]\nORGANIZATION = "placeholder"\n', monkeypatch)
    from preflight.app.services import build_services

    policy = build_services().policy("identifiers")
    assert policy.by_type["ORGANIZATION"].value == "placeholder"
    assert policy.describe()["raised_by_organization"] == {
        "ORGANIZATION": ["keep", "placeholder"]}


# -- ε, utility, providers ----------------------------------------------------------------

def test_epsilon_bounds_are_checked_and_ranges_clamped(tmp_path, monkeypatch):
    write_org(tmp_path, "[epsilon]\nmin = 5\nmax = 50\n", monkeypatch)
    org = load_org_policy()
    org.check_epsilon(5)
    for eps in (4.9, 50.1):
        with pytest.raises(ConfigError, match=r"outside the range \[5, 50\]"):
            org.check_epsilon(eps)
    assert org.clamp_epsilon_range(1, 30) == (5, 30)
    assert org.clamp_epsilon_range(10, 253) == (10, 50)
    assert org.clamp_epsilon_range(60, 200) == (5, 50)      # no overlap: the company's range


def test_settings_min_utility_is_raised_on_load_and_refused_on_save(tmp_path, monkeypatch):
    s = Settings()
    s.policy.min_utility = 0.2
    save_settings(s)                                  # no company policy yet
    write_org(tmp_path, "min_utility = 0.6\n", monkeypatch)
    assert load_settings().policy.min_utility == 0.6
    with pytest.raises(ConfigError, match="cannot be 0.2.*requires at least 0.6"):
        save_settings(s)
    s.policy.min_utility = 0.7
    save_settings(s)
    assert load_settings().policy.min_utility == 0.7


def test_recommend_refuses_a_min_utility_below_the_company_s(tmp_path, monkeypatch, doc,
                                                             capsys):
    write_org(tmp_path, "min_utility = 0.6\n", monkeypatch)
    assert cli.main(["recommend", str(doc), "--min-utility", "0.1"]) == 2
    assert "requires at least 0.6" in capsys.readouterr().err


def test_provider_prefixes_match_by_origin_and_path(tmp_path, monkeypatch):
    write_org(tmp_path, 'allowed_providers = ["https://api.x.test/v1", "http://127.0.0.1:8080"]\n',
              monkeypatch)
    org = load_org_policy()
    ok = ["https://api.x.test/v1", "https://API.x.test:443/v1/", "https://api.x.test/v1/deploy",
          "http://127.0.0.1:8080/v1"]
    bad = ["https://api.x.test/v2", "https://api.x.test/v10", "https://api.x.test.evil/v1",
           "http://api.x.test/v1", "http://127.0.0.1:8081/v1", "https://u@api.x.test/v1",
           "not a url"]
    assert all(org.provider_allowed(u) for u in ok)
    assert not any(org.provider_allowed(u) for u in bad)


def test_providers_add_and_set_default_refuse_a_disallowed_address(tmp_path, monkeypatch,
                                                                   capsys):
    assert quiet(["providers", "add", "old", "--base-url", "https://old.test/v1",
                  "--model", "m"]) == 0
    path = write_org(tmp_path, 'allowed_providers = ["https://ok.test/v1"]\n', monkeypatch)
    assert cli.main(["providers", "add", "evil", "--base-url", "https://evil.test/v1",
                     "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "https://evil.test/v1 is not allowed" in err and str(path) in err
    assert [p.name for p in load_settings().providers] == ["old"]
    assert quiet(["providers", "add", "good", "--base-url", "https://ok.test/v1/",
                  "--model", "m"]) == 0
    assert cli.main(["providers", "set-default", "old"]) == 2
    assert load_settings().default_provider == "old"     # added first: unchanged by refusal
    assert quiet(["providers", "set-default", "good"]) == 0
    assert load_settings().default_provider == "good"
    capsys.readouterr()
    assert cli.main(["providers", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["providers"]}
    assert not rows["old"]["allowed_by_organization"] and rows["good"]["allowed_by_organization"]


# -- the send path ------------------------------------------------------------------------

def add_loop(url: str) -> None:
    assert quiet(["providers", "add", "loop", "--base-url", url, "--model", "m-1"]) == 0


def test_a_broken_policy_blocks_sending_but_sanitize_still_works(server, doc, tmp_path,
                                                                   monkeypatch, capsys):
    add_loop(server.url)
    path = write_org(tmp_path, "[minimum.types]\nPERSON = 'placeholder'\n\nmin_utility = 0.5\n",
                     monkeypatch)                   # a key after a table: semantic error
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 2
    err = capsys.readouterr().err
    assert f"policy file {path} is invalid (line 4:" in err and "Sending is disabled" in err
    assert server.requests == []
    assert cli.main(["sanitize", str(doc), "--method", "placeholder"]) == 0
    out = capsys.readouterr().out
    assert "Alice Martin" not in out and "<PERSON_1>" in out
    path.write_text("min_utility = \n", encoding="utf-8")       # a syntax error
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 2
    assert "(line 1: not valid TOML" in capsys.readouterr().err and server.requests == []
    assert cli.main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["org_policy"]["status"] == "invalid"


def test_send_to_a_provider_outside_the_allow_list_is_refused(server, doc, tmp_path,
                                                              monkeypatch, capsys):
    add_loop(server.url)                           # configured before the policy came
    write_org(tmp_path, 'allowed_providers = ["https://api.example-llm.test/v1"]\n',
              monkeypatch)
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 2
    assert "is not allowed by your organization's policy" in capsys.readouterr().err
    assert server.requests == []
    write_org(tmp_path, VALID.format(loop=server.url), monkeypatch)
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 0
    assert len(server.requests) == 1


def test_overrides_and_resends_follow_the_company_policy(server, doc, tmp_path, monkeypatch,
                                                         capsys):
    from preflight.core.send.session import finding_id

    add_loop(server.url)
    write_org(tmp_path, VALID.format(loop=server.url), monkeypatch)
    allow = ["--allow", finding_id("PERSON", "Alice Martin"), "--allow",
             finding_id("PERSON", "Bob Stone")]
    base = ["send", str(doc), "--policy", "fake-surrogate", "--yes", "--no-learn"]
    assert cli.main(["send", str(doc), "--policy", "fake-identity", "--yes", "--no-learn",
                     *allow]) == 2
    assert "does not allow sending residual personal data" in capsys.readouterr().err
    assert quiet(base) == 0
    assert cli.main(base + ["--allow-resend"]) == 2
    assert "does not allow sending it again" in capsys.readouterr().err
    assert len(server.requests) == 1


def test_the_session_checks_epsilon_and_rechecks_before_sending(server, tmp_path,
                                                                monkeypatch):
    write_org(tmp_path, VALID.format(loop=server.url), monkeypatch)
    org = load_org_policy()
    settings = Settings(providers=[ProviderSettings("loop", server.url, "m-1")],
                        default_provider="loop")
    session = SendSession(settings, detector=FakeDetector(), org_policy=org)
    with pytest.raises(ConfigError, match=r"ε = 1 is outside the range \[5, 50\]"):
        session.prepare_send(DOC, "loop", "placeholder", SanitizeParams(epsilon=1.0))
    plan = session.prepare_send(DOC, "loop", "placeholder")
    # the same plan under a company policy that arrived since: refused at check time
    strict = SendSession(settings, detector=FakeDetector(), audit=session.audit,
                         org_policy=OrgPolicy(tmp_path / "p.toml", error=ConfigError("x", "y")))
    with pytest.raises(ConfigError, match="x"):
        strict.check(plan, Confirmation(confirmed=True))
    with pytest.raises(SendBlocked, match="item by item"):
        session.check(plan, Confirmation(True, frozenset({"person-0123456789"})))
    session.check(plan, Confirmation(confirmed=True))


# -- what the user controls ---------------------------------------------------------------

@pytest.mark.parametrize("text, line, words", [
    ('[detection]\nmax_score_threshold = 1.5\n', 2,
     "'detection.max_score_threshold' must be a number from 0 to 1"),
    ('[detection]\nmin_score = 0.2\n', 2, "'detection.min_score' is not a company policy key"),
    ('allow_degraded_detection = "never"\n', 1,
     "'allow_degraded_detection' must be true or false"),
    ('[audit]\nlost_logs = "3f2a9c1e-0000"\n', 2, "'audit.lost_logs' must be a list"),
    ('[audit]\nlost_logs = ["../../etc"]\n', 2, "'audit.lost_logs' must be a list"),
    ('allowed_providers = ["https://api.x.test/v1/../admin"]\n', 1,
     "must not contain '.' or '..' path segments"),
])
def test_the_new_keys_are_checked_like_the_others(tmp_path, monkeypatch, text, line, words):
    path = write_org(tmp_path, text, monkeypatch)
    reason = load_org_policy().send_block_reason()
    assert f"{path} is invalid (line {line}: " in reason and words in reason


# Each row: the company file, then (type, category) pairs with whether the user's
# allow-list and threshold still apply to them.
FLOORS = [
    ("", [("PERSON", "direct_identifier", True), ("API_KEY", "secret", True)]),
    ("allow_overrides = true\n[minimum.types]\nPERSON = 'placeholder'\nLOCATION = 'keep'\n",
     [("PERSON", "direct_identifier", False), ("LOCATION", "quasi_identifier", True),
      ("EMAIL_ADDRESS", "direct_identifier", True)]),
    ("allow_overrides = false\n",
     [("EMAIL_ADDRESS", "direct_identifier", False), ("API_KEY", "secret", False),
      ("ORGANIZATION", "quasi_identifier", True), ("HEALTH", "confidential_attribute", True)]),
    ("[minimum.categories]\nconfidential_attribute = 'generalize'\nsecret = 'keep'\n",
     [("HEALTH", "confidential_attribute", False), ("API_KEY", "secret", True)]),
]


@pytest.mark.parametrize("text, rows", FLOORS)
def test_which_types_the_user_s_detection_settings_may_loosen(tmp_path, monkeypatch, text,
                                                            rows):
    write_org(tmp_path, text or "version = 1\n", monkeypatch)
    floor = load_org_policy().detection_floor()
    for etype, cat, user_decides in rows:
        assert floor.guards(etype, Category(cat)) is not user_decides, etype
        assert floor.threshold(0.9, etype, Category(cat)) == (0.9 if user_decides else 0.35)


def test_a_broken_policy_guards_every_type_and_the_company_may_raise_the_threshold(
        tmp_path, monkeypatch):
    write_org(tmp_path, "allow_overrides = maybe\n", monkeypatch)
    assert load_org_policy().detection_floor().guards("LOCATION", Category.QUASI_IDENTIFIER)
    write_org(tmp_path, "allow_overrides = false\n[detection]\nmax_score_threshold = 0.6\n",
              monkeypatch)
    org = load_org_policy()
    assert org.detection_floor().threshold(0.9, "PERSON", Category.DIRECT_IDENTIFIER) == 0.6
    assert org.detection_floor().threshold(0.5, "PERSON", Category.DIRECT_IDENTIFIER) == 0.5
    assert org.describe()["sets"]["detection"] == {"max_score_threshold": 0.6}
    assert org.describe()["sets"]["allow_degraded_detection"] is False
    assert org.detection_limits([], 0.5) == []          # nothing the company changes


def test_degraded_detection_follows_overrides_unless_the_file_says(tmp_path, monkeypatch):
    for text, allowed in [("version = 1\n", True), ("allow_overrides = false\n", False),
                          ("allow_overrides = false\nallow_degraded_detection = true\n", True),
                          ("allow_degraded_detection = false\n", False)]:
        write_org(tmp_path, text, monkeypatch)
        org = load_org_policy()
        assert org.allow_degraded_detection is allowed, text
        assert (org.degraded_refusal("no NER model") is None) is allowed
