"""The HTML and CSS of an interactive figure: readout cards, static frames and their shared background.

The browser tests find every figure by the CSS class :data:`CSS_FIGURE`
(``aiinfra-figure``); its slider carries :data:`CSS_SLIDER`, the frame image
:data:`CSS_FRAME` and the readout box :data:`CSS_READOUT`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from aiinfra.book.png import data_url
from aiinfra.book.views import Readouts

CSS_FIGURE = "aiinfra-figure"
CSS_SLIDER = "aiinfra-slider"
CSS_FRAME = "aiinfra-frame"
CSS_READOUT = "aiinfra-readout"
CSS_LIVE_ONLY = "aiinfra-live-only"
CSS_BACKGROUND = "aiinfra-bg"


def readouts_html(readouts: Readouts) -> str:
    """Render readouts (a mapping label -> text, or a string) as a small HTML block."""
    if isinstance(readouts, str):
        body = f'<div style="font-size:0.95em">{html.escape(readouts)}</div>'
    elif isinstance(readouts, Mapping):
        if not readouts:
            raise ValueError("readouts must not be empty")
        cards = []
        for label, value in readouts.items():
            text = value if isinstance(value, str) else f"{value:.3g}"
            cards.append(
                '<div style="display:inline-block;min-width:8.5em;margin:0 0.6em 0.3em 0;'
                'padding:0.2em 0.5em;border-left:3px solid #4c72b0;vertical-align:top">'
                f'<div style="font-size:1.15em;font-weight:600;font-variant-numeric:tabular-nums">{html.escape(text)}</div>'
                f'<div style="font-size:0.8em;color:#555">{html.escape(str(label))}</div></div>'
            )
        body = "".join(cards)
    else:
        raise ValueError(
            f"readouts must be a mapping label -> text or a string, got {type(readouts).__name__}"
        )
    return f'<div class="{CSS_READOUT}" style="line-height:1.25">{body}</div>'


def frame_html(
    png: bytes, readout_html: str, alt: str, width_px: int, background_class: str | None = None
) -> str:
    """One static frame: the readouts above the image (a moving layer over ``background_class``, or a whole image)."""
    cls = CSS_FRAME if background_class is None else f"{CSS_FRAME} {background_class}"
    return (
        f'{readout_html}<img class="{cls}" alt="{html.escape(alt)}" src="{data_url(png)}" '
        f'style="width:{width_px}px;max-width:100%;height:auto;display:block">'
    )


def background_style(png: bytes, css_class: str) -> str:
    return (
        f"<style>.{css_class}{{background-image:url({data_url(png)});background-size:100% 100%;"
        "background-repeat:no-repeat;background-color:white}</style>"
    )
