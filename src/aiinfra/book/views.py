"""A figure drawn once and moved in place: the view model behind every interactive figure.

A figure of the book is a *view*: a matplotlib figure built once, with the
artists that a slider moves (lines, markers, texts) listed as its *moving*
artists, and an ``update(**params) -> readouts`` that sets their data
(``set_data``, ``set_ydata``, ``set_text``, ...). :func:`redraws` turns the
builder into a plain function ``fn(**params) -> (Figure, readouts)`` (tests
and chapters call it directly) that also carries the builder, so that
:class:`Redrawer` (and through it :func:`aiinfra.book.interactive.interactive_figure`)
can build the figure once and update it. Readouts are a mapping
``label -> text`` (text carries its unit, e.g. ``"23.9 tok/s"``) or a single string.

A plain function that builds a new figure on each call (no :func:`redraws`)
is accepted too: :class:`Redrawer` then takes its new figure at every step.
Nothing here draws pixels (:mod:`aiinfra.book.raster`) or widgets
(:mod:`aiinfra.book.interactive`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Readouts = Mapping[str, Any] | str
FigureFn = Callable[..., tuple[Any, Readouts]]


class View:
    """A figure built once: ``update(**params)`` moves its ``moving`` artists and returns the readouts.

    ``moving`` lists every artist that ``update`` may change; everything else
    in ``fig`` must stay as built (it is rasterised once, as the background).
    """

    def __init__(self, fig, update: Callable[..., Readouts], moving: Sequence[Any] = ()):
        if not hasattr(fig, "savefig"):
            raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
        if not callable(update):
            raise ValueError(f"update must be callable, got {type(update).__name__}")
        moving = list(moving)
        if not all(hasattr(a, "set_animated") and hasattr(a, "draw") for a in moving):
            raise ValueError("moving must hold matplotlib artists")
        self.fig, self._update, self.moving = fig, update, moving

    def update(self, **params) -> Readouts:
        return self._update(**params)


def redraws(*moves: str):
    """Decorator: ``build(**params) -> View`` becomes ``fn(**params) -> (Figure, readouts)``.

    ``moves`` names the parameters that the view's ``update`` takes; a change
    of any other parameter builds the figure anew. The returned function has
    ``build``'s signature and defaults, calls ``build`` then ``update``, and
    returns an ordinary figure (nothing marked animated). ``fn.build`` and
    ``fn.moves`` let :func:`interactive_figure` keep one view and update it.
    """
    for m in moves:
        if not (isinstance(m, str) and m.isidentifier()):
            raise ValueError(f"moves must be parameter names, got {m!r}")

    def decorate(build):
        sig = inspect.signature(build)
        missing = [m for m in moves if m not in sig.parameters]
        if missing:
            raise ValueError(f"moves {missing} are not parameters of {build.__name__}")

        @functools.wraps(build)
        def fn(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            params = dict(bound.arguments)
            view = _build_view(build, params)
            readouts = view.update(**{m: params[m] for m in moves})
            return view.fig, readouts

        fn.build = build
        fn.moves = tuple(moves)
        return fn

    return decorate


def _build_view(build, params: dict) -> View:
    view = build(**params)
    if not isinstance(view, View):
        raise ValueError(
            f"{getattr(build, '__name__', 'build')} must return a View, got {type(view).__name__}"
        )
    return view


def same_value(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare element-wise
        return repr(a) == repr(b)


class Redrawer:
    """Keeps one view of ``fn`` and brings it to new parameters: update in place, or rebuild."""

    def __init__(self, fn: FigureFn):
        self.fn = fn
        # a @redraws function carries its view builder and the parameters its view moves
        self.build: Callable[..., View] | None = getattr(fn, "build", None)
        self.moves: tuple[str, ...] | None = getattr(fn, "moves", None) if self.build is not None else None
        self._view: View | None = None
        self._key: dict = {}
        self.rebuilt = False

    @property
    def view(self) -> View:
        """The current view (after the first :meth:`update`)."""
        if self._view is None:
            raise RuntimeError("no view yet: call update() first")
        return self._view

    def can_move(self, names) -> bool:
        """Whether a change of these parameters only updates the view (no rebuild)."""
        return self.moves is not None and set(names) <= set(self.moves)

    def update(self, params: dict) -> Readouts:
        if self.build is None or self.moves is None:  # a plain function: a new figure on every call
            fig, readouts = _call(self.fn, params)
            if self._view is not None and self._view.fig is not fig:
                _close(self._view.fig)
            self._view, self.rebuilt = View(fig, lambda: readouts), True
            return readouts
        key = {k: v for k, v in params.items() if k not in self.moves}
        self.rebuilt = (
            self._view is None
            or key.keys() != self._key.keys()
            or not all(same_value(v, self._key[k]) for k, v in key.items())
        )
        if self.rebuilt:
            self._view, self._key = _build_view(self.build, params), key
        return self.view.update(**{m: params[m] for m in self.moves if m in params})


def _close(fig) -> None:
    manager = getattr(getattr(fig, "canvas", None), "manager", None)
    if manager is not None:  # created through pyplot: release it
        import matplotlib.pyplot as plt

        plt.close(fig)


def _call(fn: FigureFn, params: dict):
    result = fn(**params)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ValueError("fn must return a pair (matplotlib Figure, readouts)")
    fig, readouts = result
    if not hasattr(fig, "savefig"):
        raise ValueError(f"fn must return a matplotlib Figure first, got {type(fig).__name__}")
    return fig, readouts
