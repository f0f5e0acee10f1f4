"""Every figure with sliders, built as the book build builds it: within the page-weight cap, every slider moving."""

import pytest

from aiinfra.book import interactive
from aiinfra.book.interactive import interactive_figure
from test_figures_legibility import INTERACTIVE


@pytest.mark.parametrize("name", list(INTERACTIVE))
def test_static_figure_fits_the_cap_and_moves_every_slider(name):
    fn, sliders, fixed = INTERACTIVE[name]
    f = interactive_figure(fn, sliders(), fixed=fixed(), mode="static")
    assert interactive.embedded_state_bytes(f) <= interactive.DEFAULT_MAX_BYTES, name
    assert f.live_only == [], f"{name}: sliders {f.live_only} do not move in the static book"
    assert f.density >= 1.0  # type at its designed size or sharper
    assert len({fr.png for fr in f.frames}) == len(f.frames), f"{name}: two frames are the same image"
