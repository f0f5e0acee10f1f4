"""The exercise format, variants, feedback, self-check and rendering (no kernels here)."""
from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aiinfra import units
from aiinfra.course.exercises import (Choice, Exercise, Free, Numeric, Param, feedback, notebooks, record, registry, render,
                               runtime, sheet)
from aiinfra.course.exercises.variants import namespace, params_for, references, student_id

REPO = Path(__file__).resolve().parent.parent


def _ref_one(p):
    return 1.0


def _default(ex):
    ns = namespace(ex, params_for(ex, None, False))
    return ns, references(ex, ns)


# --- the format rejects malformed definitions -----------------------------------------

@pytest.mark.parametrize("bad_id", ["1.2", "ch01", "0-1", "1-", "", 12])
def test_exercise_id_is_validated(bad_id):
    with pytest.raises(ValueError, match="id must look like"):
        Exercise(id=bad_id, title="t", level="core", intro="x", parts=(Numeric("a", "p", _ref_one, "GB", hint="h"),))


def test_parts_must_be_lettered_in_order():
    with pytest.raises(ValueError, match="must be lettered"):
        Exercise(id="1-9", title="t", level="core", intro="x",
                 parts=(Numeric("b", "p", _ref_one, "GB", hint="h"),))


def test_level_and_param_clash_are_validated():
    with pytest.raises(ValueError, match="level"):
        Exercise(id="1-9", title="t", level="hard", intro="x", parts=(Numeric("a", "p", _ref_one, "GB", hint="h"),))
    with pytest.raises(ValueError, match="clash"):
        Exercise(id="1-9", title="t", level="core", intro="x", params={"a": Param(1)},
                 parts=(Numeric("a", "p", _ref_one, "GB", hint="h"),))


def test_part_fields_are_validated():
    with pytest.raises(ValueError, match="rel_tol"):
        Numeric("a", "p", _ref_one, "GB", rel_tol=1.5, hint="h")
    with pytest.raises(ValueError, match="needs a hint"):
        Numeric("a", "p", _ref_one, "GB")
    with pytest.raises(ValueError, match="points"):
        Numeric("a", "p", _ref_one, "GB", points=0, hint="h")
    with pytest.raises(ValueError, match="options"):
        Choice("a", "p", _ref_one, options=("only",), hint="h")
    with pytest.raises(ValueError, match="sample"):
        Free("a", "p", sample="  ")
    with pytest.raises(ValueError, match="part must be one lower-case letter"):
        Free("A", "p", sample="s")


def test_param_default_must_be_a_choice_and_plain():
    with pytest.raises(ValueError, match="one of Param.choices"):
        Param(3, choices=(1, 2))
    with pytest.raises(ValueError, match="plain"):
        Param(np.float64(1.0))


# --- registry ---------------------------------------------------------------------------

def test_registry_finds_chapter_one():
    assert "ch01" in registry.chapters()
    assert [e.id for e in registry.chapter("ch01")] == ["1-1", "1-2", "1-3", "1-4"]
    assert registry.get("1-2").label == "ex-1-2"
    with pytest.raises(ValueError, match="exercise_id must be one of"):
        registry.get("1-99")
    with pytest.raises(ValueError, match="chapter must look like"):
        registry.chapter("chapter1")
    with pytest.raises(ValueError, match="target must be"):
        registry.resolve("everything")


def test_chapter_one_mixes_numeric_and_free_as_required():
    kinds = {e.id: {p.kind for p in e.parts} for e in registry.chapter("ch01")}
    assert "free" in kinds["1-1"] and "numeric" in kinds["1-1"]
    assert "free" in kinds["1-4"] and "numeric" in kinds["1-4"]
    assert "free" not in kinds["1-2"] and "free" not in kinds["1-3"]
    assert any(e.varies for e in registry.chapter("ch01"))


# --- every reference, for the defaults and for every variant ----------------------------

def _all_param_sets(ex):
    names = list(ex.params)
    choices = [ex.params[n].choices or (ex.params[n].default,) for n in names]
    for combo in itertools.product(*choices):
        yield dict(zip(names, combo))


@pytest.mark.parametrize("ex", [e for ch in registry.chapters() for e in registry.chapter(ch)], ids=lambda e: e.id)
def test_references_are_plain_for_every_variant_and_templates_resolve(ex):
    for prm in _all_param_sets(ex):
        ns = namespace(ex, prm)
        refs = references(ex, ns)
        for p in ex.parts:
            if p.kind == "numeric":
                vals = refs[p.part] if type(refs[p.part]) is list else [refs[p.part]]
                assert all(type(v) in (int, float) and math.isfinite(v) for v in vals)
        render.statement_markdown(ex, ns)
        render.solution_markdown(ex, ns, refs)


def test_chapter_one_references_match_the_source_numbers():
    ex = registry.get("1-2")
    _, r = _default(ex)
    assert r["a"] == pytest.approx(141.11, abs=0.005)
    assert r["b"] == pytest.approx(131.42, abs=0.005)
    assert r["c"] is False and r["f"] is False
    assert r["d"] == pytest.approx(80 - 5 - 141.107412992 / 2)
    assert r["e"] == pytest.approx(80 - 5 - 73.73, abs=0.005)
    assert r["h"] == pytest.approx(50.0) and r["i"] == pytest.approx(20.0)
    assert r["j"] == pytest.approx(141.107412992e9 / 2 / 450e9 * 1e3)
    _, r3 = _default(registry.get("1-3"))
    read_ms = 70e9 / (0.7 * 3.35e12) * 1e3
    assert r3["a"] == pytest.approx([read_ms] * 3)
    assert r3["d"] == 0
    assert r3["f"] == pytest.approx(0.5 * 989.4e12 / (2 * 0.7 * 3.35e12))
    _, r4 = _default(registry.get("1-4"))
    assert r4["a"] == pytest.approx(40.5 / 26.5)
    assert r4["b"] == pytest.approx(64.0)
    assert r4["d"] == pytest.approx(8.62, abs=0.005)


# --- variants -----------------------------------------------------------------------------

def test_variants_are_deterministic_and_differ_between_students():
    ex = registry.get("1-3")
    a = params_for(ex, "alice", True)
    assert a == params_for(ex, "alice", True)
    seen = {json.dumps(params_for(ex, f"s{i}", True), sort_keys=True) for i in range(40)}
    assert len(seen) > 5
    assert params_for(ex, "alice", False) == {k: p.default for k, p in ex.params.items()}
    for name, prm in ex.params.items():
        if prm.choices:
            assert a[name] in prm.choices


def test_student_id_is_validated():
    assert student_id("  bob ") == "bob"
    for bad in ["", "   ", "x" * 200, "a\nb", 7]:
        with pytest.raises(ValueError, match="student_id"):
            student_id(bad)
    with pytest.raises(ValueError, match="student_id"):
        params_for(registry.get("1-2"), None, True)


# --- feedback -------------------------------------------------------------------------------

@pytest.mark.parametrize("factor,status", [
    (8.0, "bits-vs-bytes"), (1 / 8.0, "bits-vs-bytes"),
    (units.GiB / units.GB, "gib-vs-gb"), (units.GB / units.GiB, "gib-vs-gb"),
    (2.0, "per-direction-vs-both"), (0.5, "per-direction-vs-both"),
    (1000.0, "unit-prefix"),
])
def test_diagnose_recognises_the_usual_slips(factor, status):
    got, msg = feedback.diagnose(141.107 * factor, 141.107, 0.002)
    assert got == status
    assert "141" not in msg  # the reference never leaks into the message


def test_diagnose_correct_and_wrong():
    assert feedback.diagnose(141.1, 141.107, 0.002)[0] == "correct"
    assert feedback.diagnose(120.0, 141.107, 0.002)[0] == "wrong"
    assert feedback.diagnose(0.0, 0.0, 0.0, 0.1)[0] == "correct"


@pytest.mark.parametrize("value,why", [
    (float("nan"), "NaN"), (float("inf"), "infinity"), (np.float64(1.0), "numpy"),
    (np.int64(3), "numpy"), ([1.0, float("nan")], "item 1"), (None, "cannot be graded"),
])
def test_encode_answer_rejects_non_plain_values(value, why):
    rec = feedback.encode_answer(value)
    assert "rejected" in rec and why in rec["rejected"]


def test_encode_answer_never_calls_the_objects_methods():
    class Liar:
        def __eq__(self, other):
            raise AssertionError("__eq__ was called")

        def __float__(self):
            raise AssertionError("__float__ was called")

        def __repr__(self):
            raise AssertionError("__repr__ was called")

    rec = feedback.encode_answer(Liar())
    assert "cannot be graded" in rec["rejected"]


def test_decode_record_rechecks_types():
    assert feedback.decode_record({"value": 1.5}).value == 1.5
    assert feedback.decode_record({"value": float("nan")}).rejected
    assert feedback.decode_record({"value": {"x": 1}}).rejected
    assert feedback.decode_record([1]).rejected
    assert feedback.decode_record({"rejected": "why"}).rejected == "why"


def test_score_part_lists_give_partial_credit_and_choices_need_exact_types():
    part = registry.get("1-3").part("a")
    r = feedback.score_part("1-3", part, {"value": [10.0, 20.0, 99.0]}, [10.0, 20.0, 30.0])
    assert r.status == "partial" and r.points == pytest.approx(2 / 3)
    r = feedback.score_part("1-3", part, {"value": [80.0, 160.0, 240.0]}, [10.0, 20.0, 30.0])
    assert r.status == "bits-vs-bytes" and r.points == 0
    numeric = registry.get("1-2").part("a")
    r = feedback.score_part("1-2", numeric, feedback.encode_answer("141.1"), 141.107)
    assert r.status == "rejected" and "string" in r.reason
    choice = registry.get("1-2").part("c")
    assert feedback.score_part("1-2", choice, {"value": "False"}, False).status == "rejected"
    assert feedback.score_part("1-2", choice, {"value": False}, False).status == "correct"
    assert feedback.score_part("1-2", choice, {"value": True}, False).status == "wrong"
    free = registry.get("1-1").part("g")
    assert feedback.score_part("1-1", free, {"value": "text"}, None).status == "manual"
    assert feedback.score_part("1-1", free, {"value": 3.0}, None).status == "rejected"


# --- the notebook API, in process ------------------------------------------------------------

@pytest.fixture
def fresh(monkeypatch):
    for var in (record.ENV_STUDENT, record.ENV_ANSWERS_FD, record.ENV_VARIANTS, record.ENV_SHEET):
        monkeypatch.delenv(var, raising=False)
    runtime.reset()
    yield runtime
    runtime.reset()


@pytest.fixture
def answer_pipe(monkeypatch):
    """The grader's end of the answers channel: returns a function that reads what was sent."""
    import os

    r, w = os.pipe()
    os.set_blocking(r, False)
    monkeypatch.setenv(record.ENV_ANSWERS_FD, str(w))

    def sent() -> list[dict]:
        try:
            data = os.read(r, 1 << 20)
        except BlockingIOError:
            data = b""
        return [json.loads(line) for line in data.decode().splitlines()]

    yield sent
    os.close(r)
    os.close(w)


def test_check_reports_each_slip(fresh):
    _, r = _default(registry.get("1-2"))
    fresh.answer("1-2", "a", r["a"])
    fresh.answer("1-2", "b", r["a"])                     # GB given where GiB is due
    fresh.answer("1-2", "h", r["h"] * 8)                 # Gbit/s left as bits
    fresh.answer("1-2", "j", r["j"] / 2)                 # both directions used
    fresh.answer("1-2", "i", 1.0)
    fresh.answer("1-2", "c", ...)                        # not answered yet
    report = fresh.check("1-2")
    by = {x.part: x for x in report.results}
    assert by["a"].status == "correct"
    assert by["b"].status == "gib-vs-gb"
    assert by["h"].status == "bits-vs-bytes"
    assert by["j"].status == "per-direction-vs-both"
    assert by["i"].status == "wrong" and "Hint:" in by["i"].reason
    assert by["c"].status == "missing"
    assert report.score == 1.0
    text = report._repr_markdown_()
    assert f"{r['a']:.4g}" not in text and "bits vs bytes" in text


def test_answer_validates_ids_and_records_rejections(fresh, capsys, answer_pipe):
    with pytest.raises(ValueError, match="exercise_id"):
        fresh.answer("1-99", "a", 1.0)
    with pytest.raises(ValueError, match="has no part"):
        fresh.answer("1-2", "z", 1.0)
    fresh.answer("1-2", "a", np.float64(141.1))
    assert "numpy" in capsys.readouterr().out
    line = answer_pipe()[-1]
    assert line["exercise"] == "1-2" and "rejected" in line


def test_variants_need_a_student_and_use_their_parameters(fresh, monkeypatch):
    fresh.configure("ch01", variants=True)
    with pytest.raises(ValueError, match="set_student"):
        fresh.params("1-3")
    ex = registry.get("1-3")
    students = [f"student{i}" for i in range(30)]
    a, b = next((x, y) for x, y in itertools.combinations(students, 2)
                if references(ex, namespace(ex, params_for(ex, x, True)))["f"]
                != references(ex, namespace(ex, params_for(ex, y, True)))["f"])
    fresh.set_student(a)
    ref_a = references(ex, fresh.params("1-3"))["f"]
    fresh.answer("1-3", "f", ref_a)
    assert fresh.check("1-3").results[5].status == "correct"
    monkeypatch.setenv(runtime.ENV_STUDENT, b)
    fresh.set_student("")                                 # fall back to the environment
    assert fresh.current_student() == b
    assert fresh.check("1-3").results[5].status != "correct"
    monkeypatch.setenv(runtime.ENV_VARIANTS, "0")         # the grader's setting wins
    assert fresh.params("1-3")["eta_b"] == ex.params["eta_b"].default


# --- rendering and the generated notebooks ---------------------------------------------------

def test_book_blocks_have_labels_dropdown_solutions_and_computed_numbers():
    text = runtime.show("ch01").text
    for e in registry.chapter("ch01"):
        assert f":label: {e.label}" in text and f"{{solution}} {e.label}" in text
    assert text.count(":class: dropdown") == 4
    _, r = _default(registry.get("1-2"))
    assert f"{r['a']:.4g}" in text
    assert "{" + "model}" not in text
    assert runtime.show("1-2", solutions=False).text.count("{solution}") == 0


SOURCE = "aiinfra @ git+https://github.com/example/book@main"


def test_student_notebook_holds_no_reference_values():
    for variants in (False, True):
        text = json.dumps(notebooks.student_notebook("ch01", variants, SOURCE))
        for ex in registry.chapter("ch01"):
            _, refs = _default(ex)
            for letter, ref in refs.items():
                for v in (ref if type(ref) is list else [ref]):
                    if type(v) is float and not float(v).is_integer():
                        for fmt in (".4g", ".3g", ".2f"):
                            assert format(v, fmt) not in text, (ex.id, letter, format(v, fmt))
    on = notebooks.student_notebook("ch01", True, SOURCE)
    assert on["metadata"]["aiinfra"]["variants"] is True
    assert "DeepSeek-R1-Distill-Llama-70B has" not in json.dumps(on)   # statements come from prompt()


def test_generated_notebooks_are_current():
    done = subprocess.run([sys.executable, str(REPO / "tools" / "build_exercises.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr


def test_build_exercises_check_detects_a_stale_file(tmp_path):
    tool = str(REPO / "tools" / "build_exercises.py")
    subprocess.run([sys.executable, tool, "--out", str(tmp_path)], check=True, capture_output=True)
    stale = tmp_path / "exercises" / "ch01.ipynb"
    stale.write_text(stale.read_text().replace("Chapter 1 exercises", "Chapter one"))
    done = subprocess.run([sys.executable, tool, "--out", str(tmp_path), "--check"], capture_output=True, text=True)
    assert done.returncode == 1 and "stale" in done.stderr


def test_solution_notebook_shows_the_reference_source():
    text = json.dumps(notebooks.solution_notebook("ch01", False, SOURCE))
    assert "def ref_1_2_a(p)" in text and "def _bf16_bytes()" in text
    assert re.search(r"from aiinfra import memory", text)


# --- the graded kernel: a sheet instead of the definitions ---------------------------------------

def _sheet_file(tmp_path, student, variants):
    path = tmp_path / "sheet.json"
    path.write_bytes(sheet.dumps(sheet.build("ch01", student, variants)))
    return path


def test_graded_kernel_reads_the_sheet_records_and_gives_no_verdict(fresh, answer_pipe, tmp_path, monkeypatch):
    ex = registry.get("1-3")
    home = namespace(ex, params_for(ex, "alice", True))
    monkeypatch.setenv(record.ENV_SHEET, str(_sheet_file(tmp_path, "alice", True)))
    got = fresh.params("1-3")
    assert got == home and type(got["batches"]) is tuple            # tuples survive the JSON trip
    assert fresh.prompt("1-3").text == render.statement_markdown(ex, home, heading=f"### Exercise {render.title_text(ex)}")
    fresh.set_student("alice")
    fresh.answer("1-3", "f", 2.5)
    fresh.answer("1-1", "g", "text \udcff")                         # a lone surrogate travels as an escape
    assert answer_pipe() == [{"student": "alice"}, {"exercise": "1-3", "part": "f", "value": 2.5},
                             {"exercise": "1-1", "part": "g", "value": "text \udcff"}]
    report = fresh.check("1-3")
    assert report.results == [] and report.score == 0 and "grader scores" in report.text
    with pytest.raises(ValueError, match="exercise_id must be one of"):
        fresh.answer("2-1", "a", 1.0)                               # not in this assignment
    with pytest.raises(ValueError, match="has no part"):
        fresh.answer("1-3", "z", 1.0)
    fresh.configure("ch02", variants=True)                          # accepted and ignored while graded
    with pytest.raises(ValueError, match="chapter"):
        fresh.configure("chapter one")


@pytest.mark.parametrize("variants", [False, True])
def test_sheets_round_trip_and_hold_no_reference(variants):
    for ch in registry.chapters():
        data = json.loads(sheet.dumps(sheet.build(ch, "bob", variants)))
        text = json.dumps(data)
        for ex in registry.chapter(ch):
            ns = namespace(ex, params_for(ex, "bob", variants))
            assert {k: record.decode_value(v) for k, v in data["exercises"][ex.id]["params"].items()} == ns
            assert data["exercises"][ex.id]["parts"] == [p.part for p in ex.parts]
            for letter, ref in references(ex, ns).items():
                for v in (ref if type(ref) is list else [ref]):
                    shown = format(v, ".4g") if type(v) is float else ""
                    if "." in shown and len(shown) >= 4 and v not in ns.values():
                        assert shown not in text, (ex.id, letter, v)
