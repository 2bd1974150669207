"""Secrets kept encrypted at rest: a study's Prolific API token and webhook secret. Fernet (AES-128-CBC with
an HMAC-SHA256 tag, so a changed or foreign value is detected, never decrypted to garbage) under the key in
the SECRETS_ENCRYPTION_KEY setting, or, when it is unset, a key derived from SECRET_KEY with HKDF-SHA256.

Only the model's accessors (ProlificLink.token, .webhook_secret) call this module: no other code sees
ciphertext. A value sealed under another key (SECRET_KEY rotated, SECRETS_ENCRYPTION_KEY changed) cannot be
read: `reveal` raises SecretUnreadable, whose message asks for the secret to be entered again."""

from __future__ import annotations

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Fixed: changing it changes the derived key, as rotating SECRET_KEY does.
DERIVATION_INFO = b"nli-studio recruitment secrets at rest, v1"
SET, UNSET, UNREADABLE = "set", "unset", "unreadable"


class SecretUnreadable(ValueError):
    """A secret is stored but the current key does not open it: it has to be entered again."""

    def __init__(self, label: str):
        self.label = label
        super().__init__(
            f"the {label} stored for this study can no longer be read (the server's encryption key changed "
            f"since it was saved): enter the {label} again on the study's Prolific page"
        )


def seal(plain: str) -> str:
    """The value encrypted for storage; an empty value stays empty (nothing stored)."""
    return _fernet().encrypt(plain.encode()).decode() if plain else ""


def reveal(sealed: str, label: str) -> str:
    """The stored value in clear ("" when none is stored); SecretUnreadable when the key does not open it."""
    if not sealed:
        return ""
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(label) from None


def state(sealed: str) -> str:
    """SET, UNSET or UNREADABLE, for a page to say which (never the value)."""
    if not sealed:
        return UNSET
    try:
        reveal(sealed, "secret")
    except SecretUnreadable:
        return UNREADABLE
    return SET


def check_key() -> str | None:
    """What is wrong with SECRETS_ENCRYPTION_KEY, or None (the system check reports it at start-up)."""
    try:
        _fernet()
    except ImproperlyConfigured as error:
        return str(error)
    return None


def _fernet() -> Fernet:
    return _fernet_for(settings.SECRETS_ENCRYPTION_KEY, settings.SECRET_KEY)


@functools.lru_cache(maxsize=4)
def _fernet_for(configured: str, secret_key: str) -> Fernet:
    if configured:
        try:
            return Fernet(configured)
        except ValueError:
            raise ImproperlyConfigured(
                "SECRETS_ENCRYPTION_KEY is not a Fernet key (32 url-safe base64-encoded bytes); make one with "
                '`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`'
            ) from None
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=DERIVATION_INFO).derive(secret_key.encode())
    return Fernet(base64.urlsafe_b64encode(derived))
