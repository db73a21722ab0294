"""The GitHub App's private key: read from CRA_PRIVATE_KEY or CRA_PRIVATE_KEY_PATH, checked to be
a PEM RSA key before anything needs a token."""

from __future__ import annotations

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from bot.errors import SettingsError
from bot.settings import BotSettings

DOWNLOAD_HINT = (
    "download a private key from the App's settings on GitHub (General → Private "
    "keys), a .pem file beginning -----BEGIN RSA PRIVATE KEY-----"
)


def load_private_key(settings: BotSettings) -> str:
    """The App's private key as PEM text; SettingsError naming the setting when it is missing,
    unreadable or not a PEM RSA private key."""
    if settings.private_key is not None and settings.private_key.get_secret_value():
        text = settings.private_key.get_secret_value().replace("\\n", "\n")
        return check_rsa_pem(text, "CRA_PRIVATE_KEY")
    path = settings.private_key_path
    if path is None:
        raise SettingsError("set CRA_PRIVATE_KEY or CRA_PRIVATE_KEY_PATH for the GitHub App")
    where = f"CRA_PRIVATE_KEY_PATH={path}"
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SettingsError(f"{where}: no such file → {DOWNLOAD_HINT}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not a text file"
        raise SettingsError(f"{where}: cannot read it ({reason})") from None
    return check_rsa_pem(text, where)


def check_rsa_pem(text: str, where: str) -> str:
    """`text` when it is an unencrypted PEM RSA private key; SettingsError naming `where`."""
    try:
        key = serialization.load_pem_private_key(text.encode(), password=None)
    except TypeError:
        raise SettingsError(
            f"{where}: the key is encrypted; GitHub's keys are not, → {DOWNLOAD_HINT}"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise SettingsError(f"{where}: not a PEM private key → {DOWNLOAD_HINT}") from None
    if not isinstance(key, RSAPrivateKey):
        raise SettingsError(
            f"{where}: a {type(key).__name__.removeprefix('_')} key, but GitHub "
            f"Apps sign with RSA → {DOWNLOAD_HINT}"
        )
    return text
