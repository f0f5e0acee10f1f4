"""The book's notation: one sympy symbol per quantity, with its meaning and SI unit.

The notation page of the book is generated from :data:`NOTATION`, and every
symbolic twin (see :func:`twin`) is written with these symbols, so the prose,
the derivations and the numeric code share one vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Notation:
    symbol: sp.Symbol
    latex: str
    meaning: str
    unit: str


def _s(name: str, latex: str, meaning: str, unit: str) -> sp.Symbol:
    sym = sp.Symbol(name, positive=True)
    NOTATION[name] = Notation(sym, latex, meaning, unit)
    return sym


NOTATION: dict[str, Notation] = {}

N = _s("N", "N", "parameter count of a model", "parameters")
N_active = _s("N_a", "N_a", "parameters active per token (MoE)", "parameters")
b_W = _s("b_W", "b_W", "bytes stored per weight", "B/parameter")
Pi = _s("Pi", r"\Pi", "peak compute throughput (dense)", "FLOP/s")
beta = _s("beta", r"\beta", "memory or link bandwidth", "B/s")
B = _s("B", "B", "batch size: requests decoded together", "requests")
P = _s("P", "P", "prompt length (prefill tokens)", "tokens")
G_out = _s("G", "G", "generated tokens per request (decode steps)", "tokens")
L = _s("L", "L", "number of transformer layers", "layers")
d = _s("d", "d", "model (hidden) width", "elements")
n_ctx = _s("n_ctx", r"n_{\mathrm{ctx}}", "context length seen by a step", "tokens")
eta_F = _s("eta_F", r"\eta_F", "achieved fraction of peak compute", "1")
eta_B = _s("eta_B", r"\eta_B", "achieved fraction of peak bandwidth", "1")
F = _s("F", "F", "floating-point operations of a piece of work", "FLOP")
R = _s("R", "R", "bytes read or written through an interface", "B")
M = _s("M", "M", "bytes that must be resident", "B")
M_cap = _s("M_cap", r"M_{\mathrm{cap}}", "memory capacity of a device", "B")
T = _s("T", "T", "measured (elapsed) time", "s")
F_1 = _s("F_1", "F_1", "FLOPs of one request in one step", "FLOP")
R_W = _s("R_W", "R_W", "weight bytes read per step", "B")
R_state = _s("R_state", r"R_{\mathrm{state},1}", "state (KV) bytes read per request per step", "B")
H_kv = _s("H_kv", r"H_{\mathrm{kv}}", "key/value heads per layer", "heads")
d_head = _s("d_head", r"d_{\mathrm{head}}", "width of one attention head", "elements")
b_KV = _s("b_KV", r"b_{\mathrm{KV}}", "bytes per stored KV element", "B")
f_par = _s("f", "f", "fraction of the time that is sped up (Amdahl)", "1")
s_speed = _s("s", "s", "speedup of that fraction (Amdahl)", "1")
n_gpu = _s("n_G", r"n_G", "number of GPUs (accelerators)", "GPUs")
P_gpu = _s("P_GPU", r"P_{\mathrm{GPU}}", "power drawn per GPU", "W")
PUE = _s("PUE", r"\mathrm{PUE}", "power usage effectiveness (facility / IT power)", "1")
alpha = _s("alpha", r"\alpha", "acceptance rate of a drafted token", "1")
gamma = _s("gamma", r"\gamma", "tokens drafted per speculative step", "tokens")
c_draft = _s("c", "c", "cost of one draft pass relative to one target pass", "1")
S_msg = _s("S", "S", "message size of a collective", "B")
t_lat = _s("t_0", "t_0", "fixed latency per transfer or hop", "s")


def twin(expr, domains=None, **symbols):
    """Attach the symbolic twin ``expr`` to a numeric function.

    ``symbols`` maps each of the function's argument names to the sympy
    symbol that stands for it in ``expr``. ``domains`` optionally maps an
    argument name to ``(low, high, kind)`` with kind ``"float"`` or ``"int"``,
    the range the twin test samples it from (default: floats in [0.5, 1e3]).
    Tests evaluate both at random points and require agreement; chapters
    print ``fn.sym`` to show a formula.
    """

    def decorate(fn):
        fn.sym = expr
        fn.sym_args = dict(symbols)
        fn.sym_domains = dict(domains or {})
        TWINS[f"{fn.__module__}.{fn.__qualname__}"] = fn
        return fn

    return decorate


TWINS: dict = {}
