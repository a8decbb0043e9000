"""String formats as exact code-point automata, following the checks of the
``jsonschema`` oracle (its ``FormatChecker`` per draft, with the optional packages
this project installs: ``rfc3339-validator``, ``rfc3987``, ``fqdn``).

Each format is a list of variants ``(dfa, lo, hi)`` over code points (the union is
the format's language; ``lo..hi`` a code-point length window). Where the oracle's
check accepts odd strings that are impractical to model, the automaton accepts a
*subset* (a listed departure; never a superset):

- ``hostname``: ASCII labels only (``fqdn`` lowercases with Unicode rules and matches
  ``\\d`` as any Unicode digit, so it also accepts e.g. the Kelvin sign or Arabic
  digits);
- ``uuid``: the RFC 4122 text form only (``uuid.UUID`` also takes braces, ``urn:``
  prefixes, whitespace, underscores when the hyphens fall at the checked positions).

Faithfully reproduced quirks: ``date-time``/``time`` accept lowercase ``t``/``z``
and a trailing newline, ``hostname`` and ``uri`` a trailing newline (Python's ``$``);
``email`` is any string containing ``@``.

Formats unknown to the oracle for the draft are annotations (no constraint); known
ones not implemented here are refused by the JSON Schema compiler.
"""

from __future__ import annotations

import functools

from reference_engine.automata import DFA
from reference_engine.regex import compile_dfa

#: Formats each draft's FormatChecker validates (jsonschema 4.x with the optional
#: format packages installed); checked against jsonschema by the tests.
CHECKED = {
    "draft4": {"date-time", "email", "hostname", "idn-email", "ipv4", "ipv6", "regex", "uri"},
    "draft6": {"date-time", "email", "hostname", "idn-email", "ipv4", "ipv6", "json-pointer",
               "regex", "uri", "uri-reference", "uri-template"},
    "draft7": {"date", "date-time", "email", "hostname", "idn-email", "idn-hostname", "ipv4",
               "ipv6", "iri", "iri-reference", "json-pointer", "regex", "relative-json-pointer",
               "time", "uri", "uri-reference", "uri-template"},
}
CHECKED["draft2019-09"] = CHECKED["draft7"] | {"duration", "uuid"}
CHECKED["draft2020-12"] = CHECKED["draft2019-09"]

_Y = r"(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_LEAP = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
DATE = (rf"(?:{_Y}-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
        rf"|{_Y}-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
        rf"|{_Y}-02-(?:0[1-9]|1[0-9]|2[0-8])"
        rf"|{_LEAP}-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H = r"[0-9A-Fa-f]{1,4}"


def _ipv6() -> str:
    forms = [rf"{_H}(?::{_H}){{7}}", rf"{_H}(?::{_H}){{5}}:{IPV4}"]
    for k in range(0, 8):
        left = "" if k == 0 else rf"{_H}(?::{_H}){{{k - 1}}}"
        rights = [""]
        rights += [rf"{_H}(?::{_H}){{{m - 1}}}" for m in range(1, 8 - k)]
        rights += [rf"(?:{_H}:){{{m}}}{IPV4}" for m in range(0, 6 - k)]
        forms.append(rf"{left}::(?:{'|'.join(rights)})")
    return "(?:" + "|".join(forms) + ")"


IPV6 = _ipv6()
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = rf"^(?:{_LABEL}\.)*{_LABEL}\.?$"
UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
#: rfc3987's URI rule (RFC 3986), group names removed; used by jsonschema's "uri".
URI = "^(?:(?:(?:[a-zA-Z][a-zA-Z0-9+.-]*):(?://(?:(?:(?:(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:)*)@)?(?:(?:\\[(?:(?:(?:(?:[0-9A-Fa-f]{1,4}:){6}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|::(?:[0-9A-Fa-f]{1,4}:){5}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|(?:[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:){4}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|(?:(?:[0-9A-Fa-f]{1,4}:)?[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:){3}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|(?:(?:[0-9A-Fa-f]{1,4}:){,2}[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:){2}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|(?:(?:[0-9A-Fa-f]{1,4}:){,3}[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:)(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|(?:(?:[0-9A-Fa-f]{1,4}:){,4}[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)))|(?:(?:[0-9A-Fa-f]{1,4}:){,5}[0-9A-Fa-f]{1,4})?::[0-9A-Fa-f]{1,4}|(?:(?:[0-9A-Fa-f]{1,4}:){,6}[0-9A-Fa-f]{1,4})?::))|(?:v[0-9A-Fa-f]+\\.(?:[a-zA-Z0-9_.~-]|[!$&'()*+,;=]|:)+))\\]|(?:(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?))|(?:(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=])*)))(?::(?:[0-9]*))?)(?:(?:/(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)*)*)|(?:/(?:(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)+(?:/(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)*)*)?)|(?:(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)+(?:/(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)*)*)|(?:))(?:\\?(?:(?:(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)|/|\\?)*))?)(?:\\#(?:(?:(?:[a-zA-Z0-9_.~-]|%[0-9A-Fa-f]{2}|[!$&'()*+,;=]|:|@)|/|\\?)*))?)$"

Variant = tuple  # (DFA, lo, hi)


@functools.lru_cache(maxsize=None)
def format_variants(name: str) -> tuple[Variant, ...] | None:
    """The variants of a supported format, or None if not implemented here."""
    if name in ("email", "idn-email"):
        return ((compile_dfa("@", "search"), 0, None),)
    if name == "date":
        return ((compile_dfa(DATE, "fullmatch"), 0, None),)
    if name == "date-time":
        return ((compile_dfa(rf"^{DATE}[Tt]{_TIME}$", "search"), 0, None),)
    if name == "time":
        return ((compile_dfa(rf"^{_TIME}$", "search"), 0, None),)
    if name == "ipv4":
        return ((compile_dfa(IPV4, "fullmatch"), 0, None),)
    if name == "ipv6":
        return ((compile_dfa(IPV6, "fullmatch"), 0, None),)
    if name == "uuid":
        return ((compile_dfa(UUID, "fullmatch"), 0, None),)
    if name == "uri":
        return ((compile_dfa(URI, "search"), 0, None),)
    if name == "hostname":
        host = compile_dfa(HOSTNAME, "search")
        dot = compile_dfa(r"[\s\S]*\.", "fullmatch")
        return ((host.intersect(dot), 0, 254), (host.minus(dot), 0, 253))
    return None


def checked_formats(draft: str) -> set[str]:
    return CHECKED[draft]


__all__ = ["CHECKED", "format_variants", "checked_formats", "DFA"]
