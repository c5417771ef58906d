"""Colour arithmetic for the tests of how figures read on a page: WCAG 2 relative luminance
and contrast ratio of Plotly colours ('#rrggbb' or 'rgb(r, g, b)')."""

from __future__ import annotations

from plotly.colors import hex_to_rgb, unlabel_rgb


def luminance(colour: str) -> float:
    """WCAG relative luminance of a Plotly colour: 0 for black, 1 for white."""
    rgb = hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour)
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
           for c in (v / 255 for v in rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
