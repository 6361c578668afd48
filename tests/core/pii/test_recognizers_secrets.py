"""Secrets: vendor key formats, credentials in context, generic high-entropy tokens."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.secrets import (
    HighEntropyTokenRecognizer, SecretsRecognizer, looks_like_secret,
)

from pii_testutil import run

GH = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
FOUND = [
    ("key sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5 here", ("API_KEY", "sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5")),
    ("sk-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5", ("API_KEY", "sk-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5")),
    ("aws id AKIAIOSFODNN7EXAMPLE.", ("API_KEY", "AKIAIOSFODNN7EXAMPLE")),
    ("temp ASIAY34FZKBOKMUTVV7A", ("API_KEY", "ASIAY34FZKBOKMUTVV7A")),
    (f"token {GH}", ("API_KEY", GH)),
    ("github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyzABCDEFGH",
     ("API_KEY", "github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyzABCDEFGH")),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     ("API_KEY", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx")),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", ("API_KEY", "sk_live_4eC39HqLyjWDarjtT1zdp7dc")),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     ("SECRET", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")),
    ("Authorization: Bearer abcDEF123456ghiJKL789", ("SECRET", "abcDEF123456ghiJKL789")),
    ("password: Hunter2!", ("SECRET", "Hunter2!")),
    ("The password is s3cr3tpass, don't share it", ("SECRET", "s3cr3tpass")),
    ("export OPENAI_API_KEY=Zx81kQpLmN03rTyU", ("SECRET", "Zx81kQpLmN03rTyU")),
    ("db: postgres://admin:pa55word@db.internal:5432/x", ("SECRET", "pa55word")),
]


@pytest.mark.parametrize("text,expected", FOUND)
def test_secret_found(text, expected):
    assert expected in run(SecretsRecognizer(), text)


def test_private_key_block_is_one_span():
    text = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\ny"
    found = run(SecretsRecognizer(), text)
    assert found == [("SECRET", text[2:-2])]


NOT_FOUND = [
    "The password is required for every login.",     # "is" + ordinary word
    "sk-learn is a popular library",                 # too short after the prefix
    "AKIA is not a key by itself",
    "Use the token-based approach described above.",
    "The ask-the-expert-mode-of-the-system-works well.",
]


@pytest.mark.parametrize("text", NOT_FOUND)
def test_no_secret(text):
    assert run(SecretsRecognizer(), text) == []


@pytest.mark.parametrize("token,kind", [
    ("TGumno1Vpywq3aFXGiBWEfHZ1rgogBzjhQC0HQ8Z", "mixed"),
    ("k5kD8Tpz3wYWKUjDCUbZMy4VlzGdErzqTU7ATPEx", "mixed"),
    ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "hex"),
    ("state_of_the_art_model_v2_final", None),
    ("ThisIsACamelCaseIdentifierName2", None),
    ("/usr/local/lib/python3.11/site-packages", None),
    ("123e4567-e89b-12d3-a456-426614174000", None),   # a UUID is not a secret
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", None),
])
def test_entropy_classifier(token, kind):
    assert looks_like_secret(token) == kind


def test_high_entropy_scores_and_context():
    rec = HighEntropyTokenRecognizer()
    token = "TGumno1Vpywq3aFXGiBWEfHZ1rgogBzjhQC0HQ8Z"
    plain = rec.analyze(f"see {token} below", None, None)
    near = rec.analyze(f"the api key {token}", None, None)
    assert [r.score for r in plain] == [0.6]
    assert [r.score for r in near] == [0.85]
    sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert rec.analyze(f"commit {sha} fixed it", None, None) == []      # hex needs context
    assert len(rec.analyze(f"secret: {sha}", None, None)) == 1


def test_why_never_contains_the_value():
    text = "password: Hunter2! and AKIAIOSFODNN7EXAMPLE"
    for r in SecretsRecognizer().analyze(text, None, None):
        why = r.recognition_metadata["preflight_why"]
        assert text[r.start:r.end] not in why


# -- credentials in configuration files, code and shell commands (issue 45, item 5) ------

from preflight.core.pii.recognizers.config_secrets import (  # noqa: E402
    ConfigSecretRecognizer, secret_name,
)
from preflight.core.pii.recognizers.secrets import CueSecretRecognizer  # noqa: E402

CONFIG_SECRETS = [
    # .env and shell environment
    ("DB_HOST=db.example.com\nDB_PASSWORD=Wint3r!Db\nDB_PORT=5432\n", "Wint3r!Db"),
    ("MYSQL_ROOT_PASSWORD=r00tpw-prod", "r00tpw-prod"),
    ("export AWS_SECRET_ACCESS_KEY=q8Zr1Lm2Nx3Ob4Pc5Qd6Re7Sf8Tg9Uh0Vi1Wj2Xk",
     "q8Zr1Lm2Nx3Ob4Pc5Qd6Re7Sf8Tg9Uh0Vi1Wj2Xk"),
    ("PGPASSWORD=Pg9!xyz psql -h db.example.com -U app", "Pg9!xyz"),
    ("SMTP_PASS='Mail#2024'", "Mail#2024"),
    # YAML, JSON, INI, Java properties
    ("database:\n  user: app\n  password: Tr0ub4dor&3\n", "Tr0ub4dor&3"),
    ('  db_password: "hunter2!"', "hunter2!"),
    ('{"user": "svc-report", "clientSecret": "8Q~xYz.4AbC-1234_Def"}', "8Q~xYz.4AbC-1234_Def"),
    ("[mail]\nhost = smtp.example.com\npass = Sm7p!relay\n", "Sm7p!relay"),
    ("spring.datasource.password=Spr1ng!Pass", "Spr1ng!Pass"),
    # XML
    ("<db><user>app</user><password>Winter#2025</password></db>", "Winter#2025"),
    ('<add key="DbPassword" value="Pa55-w0rd!"/>', "Pa55-w0rd!"),
    # code
    ("define('DB_PASSWORD', 'Sup3r$ecret');", "Sup3r$ecret"),
    ('$pass = "MyPa55!";', "MyPa55!"),
    ('conn = psycopg2.connect(host="db", password="Pg#pass1")', "Pg#pass1"),
    ("'Password' => 'Arr4y!pw',", "Arr4y!pw"),
    # HTTP and connection strings
    ("X-API-Key: 7f3e9a1b2c4d5e6f", "7f3e9a1b2c4d5e6f"),
    ("Authorization: Basic YWRtaW46UzNjcjN0IQ==", "YWRtaW46UzNjcjN0IQ=="),
    ("jdbc:mysql://db:3306/app?user=root&password=Jd8c!pw&useSSL=false", "Jd8c!pw"),
    ("jdbc:oracle:thin:scott/T1ger!x@db:1521:ORCL", "T1ger!x"),
    # shell commands
    ("mysql -u root -pS3cr3t! mydb < dump.sql", "S3cr3t!"),
    ("mysql -uroot -p'My$ql9' -h db", "My$ql9"),
    ("curl -u admin:Cu7l!pass https://api.example.com/v1/users", "Cu7l!pass"),
    ("sshpass -p 'Ssh#pass1' ssh admin@build-07", "Ssh#pass1"),
    ("docker login -u bob -p Dock3r!pw registry.example.com", "Dock3r!pw"),
    ("./deploy --password=Fl4g!pass --user bob", "Fl4g!pass"),
    ("redis-cli -h cache -a R3dis!pw ping", "R3dis!pw"),
    ("openssl pkcs12 -in cert.p12 -passin pass:Ssl!pw99", "Ssl!pw99"),
    ("smbclient //fs01/hr -U bob%Smb!pass1", "Smb!pass1"),
]


@pytest.mark.parametrize("text,value", CONFIG_SECRETS)
def test_credentials_in_config_code_and_commands(text, value):
    assert ("SECRET", value) in run(ConfigSecretRecognizer(), text)


NOT_CONFIG_SECRETS = [
    "password: ${DB_PASSWORD}",
    "def login(password: str) -> bool:",
    "token_url=https://auth.example.com/token",
    "pass_rate=0.95",
    "password_policy: strict-12",
    "PWD=/home/alice/projects",
    "auth: true",
    'api_key = os.environ["API_KEY"]',
    "password = settings.DB_PASSWORD",
    "secret: <your-secret-here>",
    "password: ********",
    "The author: Jane Doe",
    "compass=north-2",
    "echo $PW | docker login --password-stdin registry.example.com",
    'curl -u "$USER:$PASS" https://api.example.com',
    "passenger_count=3, bypass=true",
]


@pytest.mark.parametrize("text", NOT_CONFIG_SECRETS)
def test_references_types_and_settings_are_no_secret(text):
    assert run(ConfigSecretRecognizer(), text) == []


@pytest.mark.parametrize("name,is_secret", [
    ("dbPassword", True), ("AWS_SECRET_ACCESS_KEY", True), ("client-secret", True),
    ("PGPASSWORD", True), ("X-API-Key", True), ("smtp_pass", True), ("authToken", True),
    ("bypass", False), ("compass", False), ("tokenizer", False), ("author", False),
    ("pass_rate", False), ("password_policy", False), ("AWS_ACCESS_KEY_ID", False),
])
def test_secret_names(name, is_secret):
    assert secret_name(name) is is_secret


@pytest.mark.parametrize("text,value", [
    ("Here are the creds for staging — deploy / Qw3rty!9", "Qw3rty!9"),
    ("Your new login details: user jdoe, Xk29!fLq", "Xk29!fLq"),
    ("The old credential was Xy7#pQ2! and nobody changed it.", "Xy7#pQ2!"),
    # prose wrapped at a fixed width puts the value on the next line
    ("the jump host is still build-07 and the old credential was\nZq8!vR2m#Lp4 (please "
     "rotate it).", "Zq8!vR2m#Lp4"),
    ("I have reset your password, the temporary one is\n  Hq4$Lm2vT9 until Monday.",
     "Hq4$Lm2vT9"),
])
def test_a_random_value_near_a_credential_word(text, value):
    assert ("SECRET", value) in run(CueSecretRecognizer(), text)


@pytest.mark.parametrize("text", [
    "Login to Windows10 with your badge.",
    "Your token expires 2024-05-01T10:00:00Z.",
    "The release key feature ships in v2.3.1-beta4.",
    "The secret to success is Practice2024.",
    "Password reset links go to jane.doe@example.com.",
    "The key.\nAbc123!xyz is on the next line.",           # another sentence
    "Reset your password here\n\nAbc123!xyz is unrelated",  # another paragraph
])
def test_ordinary_words_near_a_credential_word_are_no_secret(text):
    assert run(CueSecretRecognizer(), text) == []
