"""Join codes and secrets of a class.

A join code is 8 symbols drawn with `secrets.choice` from ALPHABET, 31 symbols with no
look-alikes (no 0/O, 1/I/L): 31**8 = 8.5e11 codes (39.6 bits), shown as ABCD-EFGH. A class
lives CLASS_HOURS (4 h). Guessing a code costs a page run of the app (a websocket message
answered by Streamlit's Python thread, tens of milliseconds): even 1,000 guesses a second
for 4 hours are 1.44e7 guesses, and with 100 classes open at once the chance that any guess
hits one is 1.44e7 * 100 / 8.5e11 = 0.17 %. A guessed code gives what the QR code on the
projector gives anyway (a student's seat), never the teacher's control.

The teacher's control is a separate secret, `secrets.token_urlsafe(32)` (256 bits), kept in
the teacher's session only; the store keeps its SHA-256 (`digest`), compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
LENGTH = 8
GROUP = 4  # shown as two groups of 4: ABCD-EFGH
CLASS_HOURS = 4.0


def new_code() -> str:
    """A fresh join code, e.g. 'K7QM-2XHD'."""
    raw = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
    return raw[:GROUP] + "-" + raw[GROUP:]


def parse_code(text: object) -> str | None:
    """The join code `text` names (any case, spaces or a hyphen anywhere), or None when it
    cannot be one (wrong length, a symbol outside ALPHABET, not text)."""
    if not isinstance(text, str) or len(text) > 32:
        return None
    raw = "".join(c for c in text.upper() if c not in " -")
    if len(raw) != LENGTH or any(c not in ALPHABET for c in raw):
        return None
    return raw[:GROUP] + "-" + raw[GROUP:]


def new_secret() -> str:
    """A teacher's control secret (256 random bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """SHA-256 of a secret, hex: what the store keeps instead of the secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def same(secret: str | None, kept: str | None) -> bool:
    """Whether `secret` is the one whose digest is `kept` (constant time)."""
    if not secret or not kept or not isinstance(secret, str):
        return False
    return hmac.compare_digest(digest(secret), kept)
