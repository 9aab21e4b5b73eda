"""How figures read in the profile report: HTML escaping, counts, bytes in
binary units, percentages, and labels matplotlib draws literally."""

from __future__ import annotations

import html


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def count_text(n) -> str:
    return "–" if n is None else f"{int(n):,}"


def bytes_text(n) -> str:
    if n is None:
        return "–"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            break
        n /= 1024
    # Three significant digits, without switching to exponent notation at 1000.
    digits = 0 if unit == "B" or abs(n) >= 100 else 1 if abs(n) >= 10 else 2
    return f"{n:,.{digits}f} {unit}"


def percent_text(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def plain_label(text: str, limit: int = 40) -> str:
    """A label matplotlib draws literally: `$` would otherwise start mathtext."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")
