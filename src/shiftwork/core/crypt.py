"""Payload encryption at rest: a key ring, the sealed envelope, and the keyed digest.

A sealed value is stored in its own column, in place of the clear one, as the envelope
``{"$enc": "<key id>", "v": "<base64 of nonce + AES-GCM ciphertext>"}``: JSON still, so
no column changes type, and the key id says which key of the ring opens it (so rows
written before a rotation still read). The associated data binds each ciphertext to
where it is stored (``args:<task>``, ``result:<job id>``...): moved to another column or
row, it no longer opens. No I/O here; ``cryptography`` is imported when a ring is made,
so the plain install never needs it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from typing import Any

from shiftwork.core.errors import ConfigurationError, EncryptionKeyError, EncryptionUnavailableError

#: The envelope's key naming the key id; "$" so that no plain JSON value is read as one.
SEAL = "$enc"
_NONCE = 12  # bytes: AES-GCM's standard nonce, random per value
_KEY_SIZES = (16, 24, 32)  # AES-128, -192, -256
ENV_VAR = "SHIFTWORK_KEYS"


def is_sealed(value: Any) -> bool:
    """True for an envelope a :class:`Keys` ring wrote."""
    return isinstance(value, dict) and len(value) == 2 and SEAL in value and "v" in value


class Encrypted(str):
    """A sealed value this App could not open (no key, or not this one), as it reads: the
    text ``encrypted``, which the dashboard and the command line show. ``key_id`` names
    the key it was sealed with; ``reason`` says why it stayed closed."""

    key_id: str
    reason: str

    def __new__(cls, key_id: str, reason: str) -> Encrypted:
        self = super().__new__(cls, "encrypted")
        self.key_id = key_id
        self.reason = reason
        return self


class SealedArgs(list[Any]):
    """The arguments of a job as a store read them when they are sealed: one item, the
    envelope (opened by the worker, or shown as ``encrypted``)."""


def _aesgcm() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise EncryptionUnavailableError(
            "payload encryption needs the cryptography package: "
            "pip install 'shiftwork[encryption]'") from None
    return AESGCM


def _key_bytes(key_id: str, key: bytes | str) -> bytes:
    if isinstance(key, str):  # base64 text, as in an environment variable
        try:
            text = key.strip().replace("-", "+").replace("_", "/")  # either alphabet
            key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigurationError(f"Keys: key {key_id!r} is not base64 text") from None
    if not isinstance(key, bytes) or len(key) not in _KEY_SIZES:
        size = len(key) if isinstance(key, bytes) else type(key).__name__
        raise ConfigurationError(
            f"Keys: key {key_id!r} must be 16, 24 or 32 bytes (AES-128/192/256), not {size}; "
            "make one with Keys.generate()")
    return key


class Keys:
    """The keys that encrypt payloads: ``Keys({"k2": new, "k1": old}, current="k2")``.

    New values are sealed with ``current``; every key of the ring still opens the
    values sealed with it, so rows written before a rotation read on (and
    ``shiftwork jobs reencrypt`` rewrites them with the current key). A key is 16, 24 or
    32 bytes (AES-GCM), or that as base64 text. ``current`` defaults to the first key.

    Unique keys of encrypted tasks are stored as an HMAC of the clear key, under a key
    derived from ``digest_key`` (default: ``current``). Keep ``digest_key`` naming the
    same key across a rotation, or a job enqueued before it and a repeat after it are
    not seen as the same.
    """

    def __init__(self, keys: Mapping[str, bytes | str], current: str | None = None, *,
                 digest_key: str | None = None) -> None:
        if not isinstance(keys, Mapping) or not keys:
            raise ConfigurationError("Keys: give at least one key, as {key_id: key_bytes}")
        for key_id in keys:
            if not isinstance(key_id, str) or not key_id or len(key_id) > 64 \
                    or not key_id.isprintable() or key_id.strip() != key_id:
                raise ConfigurationError(f"Keys: key id {key_id!r} must be a short "
                                         "printable name (at most 64 characters)")
        self._keys = {key_id: _key_bytes(key_id, key) for key_id, key in keys.items()}
        self.current = next(iter(self._keys)) if current is None else current
        if self.current not in self._keys:
            raise ConfigurationError(f"Keys: current={self.current!r} is not one of the keys "
                                     f"({', '.join(self._keys)})")
        digest_from = self.current if digest_key is None else digest_key
        if digest_from not in self._keys:
            raise ConfigurationError(f"Keys: digest_key={digest_from!r} is not one of the "
                                     f"keys ({', '.join(self._keys)})")
        # A key of its own for digests: the cipher key itself is never used for two things.
        self._digest = hmac.new(self._keys[digest_from], b"shiftwork unique key digest",
                                hashlib.sha256).digest()
        aesgcm = _aesgcm()
        self._ciphers = {key_id: aesgcm(key) for key_id, key in self._keys.items()}
        self._cipher = self._ciphers[self.current]
        # the envelope's text up to the ciphertext (the key id JSON-escaped once)
        self._prefix = '{"' + SEAL + '":' + json.dumps(self.current) + ',"v":"'

    def __repr__(self) -> str:  # never the keys themselves
        return f"<Keys {', '.join(self._keys)} current={self.current}>"

    @property
    def ids(self) -> tuple[str, ...]:
        """The key ids of the ring, the current one among them."""
        return tuple(self._keys)

    @staticmethod
    def generate() -> str:
        """A new random 256-bit key, as base64 text (for ``SHIFTWORK_KEYS`` or a vault)."""
        return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")

    @classmethod
    def from_env(cls, var: str = ENV_VAR, *, digest_key: str | None = None,
                 environ: Mapping[str, str] | None = None) -> Keys:
        """The ring from an environment variable: ``k2:<base64>,k1:<base64>``, the
        first one current (``digest_key``: as for the constructor)."""
        text = (os.environ if environ is None else environ).get(var, "")
        keys: dict[str, bytes | str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key_id, sep, key = part.partition(":")
            if not sep:
                raise ConfigurationError(f"{var}: each key is <id>:<base64>, "
                                         f"got one without a colon")
            keys[key_id.strip()] = key
        if not keys:
            raise ConfigurationError(f"{var} is not set: give the keys as "
                                     "k1:<base64>[,k0:<base64>...], the first one current")
        return cls(keys, digest_key=digest_key)

    def seal(self, text: str, aad: str) -> dict[str, str]:
        """``text`` (a JSON document) sealed with the current key, bound to ``aad``."""
        return {SEAL: self.current, "v": self._sealed(text, aad)}

    def seal_json(self, text: str, aad: str) -> str:
        """:meth:`seal`'s envelope as JSON text, for a column (the hot path: enqueue)."""
        return self._prefix + self._sealed(text, aad) + '"}'

    def _sealed(self, text: str, aad: str) -> str:
        nonce = os.urandom(_NONCE)
        body = self._cipher.encrypt(nonce, text.encode(), aad.encode())
        return base64.b64encode(nonce + body).decode()

    def open(self, envelope: dict[str, Any], aad: str) -> str:
        """The text sealed in ``envelope``; EncryptionKeyError if no key here opens it."""
        key_id = str(envelope.get(SEAL))
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise EncryptionKeyError(f"{aad}: sealed with key {key_id!r}, which is not among "
                                     f"this App's keys ({', '.join(self._keys)})")
        try:
            raw = base64.b64decode(str(envelope.get("v")), validate=True)
            return cipher.decrypt(raw[:_NONCE], raw[_NONCE:], aad.encode()).decode()  # type: ignore[no-any-return]
        except Exception:  # InvalidTag, bad base64: the same answer either way
            raise EncryptionKeyError(
                f"{aad}: key {key_id!r} does not open it (a different key under that id, "
                "or the value was altered or moved from another row or column)") from None

    def digest(self, text: str) -> str:
        """A keyed digest of ``text`` (a unique key): equal for equal texts, and telling
        nothing of the text without the key."""
        return hmac.new(self._digest, text.encode(), hashlib.sha256).hexdigest()[:40]
