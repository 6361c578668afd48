"""The company's utility model: the policy names a path or URL and its sha256; the app
loads it only when the sha256 matches, else keeps the shipped model and says why."""

from __future__ import annotations

import hashlib
import http.server
import math
import os
import random
import threading
from pathlib import Path

import pytest

from preflight.app.services import build_services
from preflight.core.org_policy import load_org_policy
from preflight.core.org_policy_learning import CompanyModelSettings
from preflight.core.utility.features import ALL_FEATURES
from preflight.core.utility.flow import ProviderKey
from preflight.core.utility.predictor import save_bundle, shipped_bundle_path
from preflight.runtime.company_model import company_predictor, load_company_predictor
from preflight_eval.train_company import train_provider


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory) -> Path:
    rng = random.Random(5)
    rows = []
    for i in range(60):
        q, eps = rng.random(), (20.0, 60.0, 150.0)[i % 3]
        row = {n: math.nan for n in ALL_FEATURES}
        row.update(epsilon=eps, log_epsilon=math.log(eps), method_dx=1.0, sim_sanitized=q,
                   frac_tokens_changed=1 - q, target=0.2 + 0.6 * q, variant="plain",
                   laptop=f"l{i % 6}", group=f"l{i % 6}")
        rows.append(row)
    path = tmp_path_factory.mktemp("company") / "regressor.joblib"
    save_bundle(train_provider(rows, ProviderKey("acme", "acme-1")), path)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_matching_file_loads_and_a_mismatch_is_refused(bundle_file):
    good = load_company_predictor(CompanyModelSettings(str(bundle_file), _sha(bundle_file)))
    assert good.path == bundle_file and good.metrics["company"]["pairs"] == 60
    predictor, problem = company_predictor(CompanyModelSettings(str(bundle_file), "0" * 64))
    assert predictor is None
    assert "sha256" in problem and "refused" in problem and "shipped" in problem


def test_a_loopback_url_is_fetched_once_and_checked(bundle_file, tmp_path):
    hits: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(bundle_file.parent), **kw)

        def log_message(self, *args):                 # keep the test output clean
            hits.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/regressor.joblib"
        spec = CompanyModelSettings(url, _sha(bundle_file))
        first = load_company_predictor(spec, cache=tmp_path)
        again = load_company_predictor(spec, cache=tmp_path)
        assert first.path == again.path == tmp_path / f"{spec.sha256}.joblib"
        assert len(hits) == 1                          # the cached copy served the second
        bad, problem = company_predictor(CompanyModelSettings(url, "f" * 64),
                                         cache=tmp_path / "other")
        assert bad is None and "refused" in problem
        assert not (tmp_path / "other" / f"{'f' * 64}.joblib").exists()
    finally:
        server.shutdown()


def _policy(text: str) -> None:
    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text("version = 1\n" + text,
                                                        encoding="utf-8")


def test_services_use_the_company_model_and_fall_back_when_refused(bundle_file):
    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{_sha(bundle_file)}"\n')
    services = build_services()
    assert services.predictor().path == bundle_file
    assert services.company_model_problem is None

    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{"1" * 64}"\n')
    services = build_services()
    assert services.predictor().path == shipped_bundle_path()
    assert "refused" in services.company_model_problem


def test_a_model_for_one_provider_serves_only_it(bundle_file):
    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{_sha(bundle_file)}"\n'
            'provider = "acme"\n')
    services = build_services()
    assert services.company_predictor(ProviderKey("acme", "x")).path == bundle_file
    assert services.company_predictor(ProviderKey("other", "x")) is None


@pytest.mark.parametrize("text, problem", [
    ("share_learning_pairs = true\n", "needs the central store"),
    ('share_learning_pairs = "yes"\n', "true or false"),
    ('[utility_model]\npath_or_url = "/m.joblib"\nsha256 = "abc"\n', "64 hex digits"),
    ('[utility_model]\npath_or_url = "http://models.example.com/m"\nsha256 = "'
     + "a" * 64 + '"\n', "loopback"),
    ('[utility_model]\npath_or_url = "/m.joblib"\nsha256 = "' + "a" * 64 + '"\nurl = "x"\n',
     "not a company policy key"),
])
def test_bad_pooled_learning_keys_name_the_problem(text, problem):
    _policy(text)
    policy = load_org_policy()
    assert policy.broken and problem in str(policy.error)


def test_sharing_is_off_unless_the_policy_says_so(tmp_path):
    central = '[audit.central]\nurl = "postgresql://u@db.example.com/p"\n'
    _policy(central)
    assert load_org_policy().share_learning_pairs is False
    _policy("share_learning_pairs = true\n" + central)
    policy = load_org_policy()
    assert policy.share_learning_pairs and policy.describe()["sets"]["share_learning_pairs"]


# --- never silent: what the faces say about the utility model in use -------------------------
def test_status_names_the_company_model_or_why_it_was_refused(bundle_file):
    from preflight.app.ops_status import utility_model_status

    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{_sha(bundle_file)}"\n')
    status = utility_model_status(build_services())
    assert status.source == "company" and status.warning is None
    assert status.line == f"Utility model: company model {bundle_file}"

    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{"1" * 64}"\n')
    status = utility_model_status(build_services())
    assert status.source == "refused" and status.warning == status.line
    assert status.line.startswith("Utility model: company model refused — The company "
                                  "utility model at")
    assert "sha256" in status.line and status.line.endswith("Using the shipped model; "
                                                            "tell IT.")

    Path(os.environ["PREFLIGHT_ORG_POLICY"]).unlink()
    status = utility_model_status(build_services())
    assert (status.source, status.line) == ("shipped", "Utility model: shipped with Preflight")


def test_info_prints_the_refused_company_model(bundle_file, capsys, monkeypatch):
    import json

    from preflight.cli import main as cli
    from preflight.cli.commands import info

    monkeypatch.setattr(info, "SECTIONS", [s for s in info.SECTIONS if s[0] != "dx"])
    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{"2" * 64}"\n')
    assert cli.main(["info"]) == 0
    out, err = capsys.readouterr()
    line = next(ln for ln in out.splitlines() if ln.startswith("Utility model:"))
    assert "company model refused" in line and "tell IT" in line
    assert f"preflight: warning: {line}" in err
    assert cli.main(["info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["utility_model"]["source"] == "refused"
    assert "sha256" in data["utility_model"]["problem"]

    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{_sha(bundle_file)}"\n')
    assert cli.main(["info"]) == 0
    out, err = capsys.readouterr()
    assert f"Utility model: company model {bundle_file}" in out.splitlines()
    assert "Utility model" not in err


@pytest.mark.slow
def test_assess_warns_when_the_company_model_was_refused(bundle_file, tmp_path, capsys):
    import json

    from preflight.cli.main import main

    doc = tmp_path / "doc.txt"
    doc.write_text("Alice Martin asked for the quarterly figures before the board meeting.",
                   encoding="utf-8")
    args = ["assess", str(doc), "--method", "redact", "--fast"]
    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{"3" * 64}"\n')
    assert main(args + ["--json"]) == 0
    out, err = capsys.readouterr()
    field = json.loads(out)["utility_model"]
    assert field["source"] == "refused" and "sha256" in field["problem"]
    assert f"preflight: warning: {field['line']}" in err and "tell IT" in err
    _policy(f'[utility_model]\npath_or_url = "{bundle_file}"\nsha256 = "{_sha(bundle_file)}"\n')
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and "predicted utility" in out
