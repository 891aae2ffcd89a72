"""Remove credentials from text before it is printed, logged or stored (e.g. as `last_error`).

Errors from drivers and HTTP clients quote what they were given: a connection string, a URL
with `user:password@`, a request's headers. The patterns err on the side of hiding too much:
a redacted word in an error message costs little, a leaked password a lot.
"""

from __future__ import annotations

import re

MASK = "***"

# `scheme://user:secret@host`. The secret runs to the last `@` before whitespace or a quote,
# because a password with a raw `@` or `/` in it is common and must not leak its tail.
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\"'<>]*:)[^\s\"'<>]*@")

# `Authorization: Bearer xyz`, `"authorization": "Basic ..."`: whatever the scheme, the rest is
# the credential.
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?authorization[\"']?\s*[=:]\s*[\"']?"
    r"(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?)[^\s\"',;]+",
    re.IGNORECASE,
)

# `password=...`, `sslpassword='...'`, `api_key: ...`, `"client_secret": "..."`,
# `X-Api-Key: ...`, `?access_token=...&`: a key naming a secret, `=` or `:`, and its value
# (quoted, possibly without its closing quote, or up to whitespace or `&`).
_SECRET_KEY = (
    r"[A-Za-z0-9_.\-]*"
    r"(?:password|passwd|pwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key|credentials?|signature)"
    r"(?:[_\-][A-Za-z0-9]+)*"
)
_ASSIGNMENT = re.compile(
    rf"(?P<head>\b{_SECRET_KEY}[\"']?\s*[=:]\s*)"
    # An unquoted value ends only at whitespace or `&` (libpq allows `,` and `;` in it), so
    # skip one that is already masked: redacting twice must not eat the `,` after `***`.
    r"(?!\*\*\*(?:[\s,;)}\]&]|$))"
    r"(?:(?P<quote>[\"'])(?:(?!(?P=quote))[^\\]|\\.)*(?P<closing>(?P=quote)?)|[^\s&\"']+)",
    re.IGNORECASE,
)

# A bare `Bearer <token>` outside a header. Capitalised and long, so that prose ("the bearer
# of") is left alone.
_BEARER = re.compile(r"(?P<head>\bBearer\s+)[A-Za-z0-9\-._~+/]{8,}=*")

# Tokens recognisable by their shape wherever they appear; the prefix is kept to say which.
_TOKEN_SHAPES = re.compile(
    r"\b(?P<head>sk-|sk_live_|sk_test_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-"
    r"|AKIA|ASIA|AIza|hf_)"
    r"(?P<body>[A-Za-z0-9_\-]{16,})"
    # A JWT: three base64url parts, the first two JSON objects (`{"` is `eyJ`).
    r"|\b(?P<jwt>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)"
)


def _keep_head(match: re.Match[str]) -> str:
    return match.group("head") + MASK


def _keep_quotes(match: re.Match[str]) -> str:
    quote = match.group("quote")
    if quote is None:
        return match.group("head") + MASK
    return match.group("head") + quote + MASK + match.group("closing")


def _keep_url_head(match: re.Match[str]) -> str:
    return match.group("head") + MASK + "@"


def _token(match: re.Match[str]) -> str:
    return MASK if match.group("jwt") else match.group("head") + MASK


def redact(text: str) -> str:
    """`text` with passwords, API keys and bearer tokens replaced by `***`.

    >>> redact("cannot reach postgresql://app:s3cret@db:5432/shop")
    'cannot reach postgresql://app:***@db:5432/shop'

    Idempotent: redacting twice gives the same text.
    """
    text = _URL_PASSWORD.sub(_keep_url_head, text)
    text = _AUTH_HEADER.sub(_keep_head, text)
    text = _ASSIGNMENT.sub(_keep_quotes, text)
    text = _BEARER.sub(_keep_head, text)
    return _TOKEN_SHAPES.sub(_token, text)
