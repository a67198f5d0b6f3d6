"""Secret scanning of memory content: real-looking credentials refused, prose about code kept."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitmem.errors import GitmemError, SecretRefused
from gitmem.sharing.secret_scan import SecretFinding, check_content, find_secrets

ROOT = Path(__file__).resolve().parents[1]

# Made-up credentials, assembled at run time so that no scanner flags this file itself.
AWS_KEY = "AKIA" + "Z3MPLE7QW4RT2XYB"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SLACK_TOKEN = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
PRIVATE_KEY_HEADER = "-----BEGIN RSA " + "PRIVATE KEY-----"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
SHA = "3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"

PROSE = [
    "the password field is hashed with bcrypt",
    "API key rotation happens monthly",
    "password reset tokens expire after 15 minutes",
    "The secret_key is loaded from the QUEUE_SECRET_KEY environment variable.",
    'Use `token = os.environ["API_TOKEN"]`; never a literal.',
    "Auth service uses JWT tokens configured in src/auth/tokens.py#L13-L17",
    "SQLite signal queue uses WAL mode and busy_timeout=5000ms.",
    "Set PASSWORD_MIN_LENGTH = 12 in settings.py",
    "db_password = get_password()  # read from the vault at start-up",
    "ExponentialBackoffWithJitter in gitmem/store/records_cache_and_blobs.py",
    "the staging host is 203.0.113.5",
    "uuid 123e4567-e89b-12d3-a456-426614174000 identifies the tenant",
]

SHAS = [
    f"fixed in commit {SHA}",
    f'git_sha: "{SHA}"',
    f"observed at {SHA[:12]} on main",
    "fingerprint: sha256:9b74c9897bac770ffc029102a200c5de7f5e1b2c3d4a5b6c7d8e9f0a1b2c3d4e",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_credentials_is_not_refused(text):
    assert find_secrets(text) == []
    check_content(text)


@pytest.mark.parametrize("text", SHAS)
def test_git_shas_and_fingerprints_are_not_refused(text):
    assert find_secrets(text) == []
    check_content(text)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"the deploy user's key is {AWS_KEY}", "AWS Access Key"),
        (f"CI pushes with {GITHUB_TOKEN}", "GitHub Token"),
        (PRIVATE_KEY_HEADER, "Private Key"),
        (f"bot token {SLACK_TOKEN}", "Slack Token"),
        ('password = "hunter2hunter2"', "Secret Keyword"),
        (f"aws_secret_access_key = {AWS_SECRET}", "Base64 High Entropy String"),
        ("postgres://admin:s3cr3tpw@db.internal:5432/app", "Basic Auth Credentials"),
    ],
)
def test_real_looking_credentials_are_found_by_kind(text, kind):
    assert find_secrets(text) == [SecretFinding(kind=kind, line=1)]


def test_findings_carry_line_numbers_and_the_specific_kind_only():
    text = "\n".join([
        "SQLite uses WAL.",
        "",
        PRIVATE_KEY_HEADER,
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "-----END RSA PRIVATE KEY-----",
        f"and {GITHUB_TOKEN}\r",
    ])
    assert find_secrets(text) == [
        SecretFinding("Private Key", 3),
        SecretFinding("Base64 High Entropy String", 4),
        SecretFinding("GitHub Token", 6),
    ]


def test_refusal_names_kind_and_line_but_not_the_secret():
    with pytest.raises(SecretRefused) as caught:
        check_content(f"the key is {AWS_KEY}")
    assert str(caught.value) == (
        "content looks like it contains a secret (AWS Access Key on line 1); nothing was "
        "stored — remove it, or pass --allow-secret if it is not a real credential"
    )
    assert caught.value.hint == "remove it, or pass --allow-secret if it is not a real credential"
    assert caught.value.exit_code == 2
    assert isinstance(caught.value, GitmemError)
    assert AWS_KEY not in str(caught.value)


def test_refusal_lists_three_findings_then_a_count():
    keyword = "password = 'hunter2hunter2'"
    text = "\n".join([AWS_KEY, GITHUB_TOKEN, PRIVATE_KEY_HEADER, SLACK_TOKEN, keyword])
    with pytest.raises(SecretRefused) as caught:
        check_content(text)
    assert caught.value.message == (
        "content looks like it contains a secret (AWS Access Key on line 1, GitHub Token on "
        "line 2, Private Key on line 3 and 2 more); nothing was stored"
    )


def test_allow_skips_the_scan():
    assert check_content(f"the key is {AWS_KEY}", allow=True) is None


def test_clean_and_blank_content_gives_no_findings():
    assert find_secrets("") == []
    assert find_secrets("\n\n  \n") == []


def test_scan_leaves_detect_secrets_global_settings_as_they_were():
    from detect_secrets.settings import get_settings

    before = get_settings().json()
    find_secrets(f"{AWS_KEY}\n{SHA}")
    assert get_settings().json() == before


def test_concurrent_scans_give_the_same_findings():
    text = f"{AWS_KEY}\nthe password field is hashed\n{GITHUB_TOKEN}"
    expected = [SecretFinding("AWS Access Key", 1), SecretFinding("GitHub Token", 3)]
    results: list[list[SecretFinding]] = []

    def scan() -> None:
        for _ in range(5):
            results.append(find_secrets(text))

    threads = [threading.Thread(target=scan) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 30


def test_importing_the_module_does_not_import_detect_secrets():
    code = (
        "import sys, gitmem.sharing.secret_scan\n"
        "print('detect_secrets' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"


