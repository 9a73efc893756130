"""The checker machinery: modes (lenient, strict, graded), natural answers, no leaked answers."""
import importlib.util
import os
import math
import json
from pathlib import Path

import pytest
import torch

from beforeqkv import checks
from beforeqkv.checks import CheckFailure, _core


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "lenient")
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)


@pytest.fixture
def graded(monkeypatch):
    monkeypatch.setenv("BEFOREQKV_GRADING", "1")


def _todo(*args):
    raise NotImplementedError()


def test_outside_a_kernel_checks_are_strict(monkeypatch):
    monkeypatch.delenv("BEFOREQKV_CHECKS", raising=False)
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    assert checks.mode() == "strict"


def test_lenient_unimplemented_function_prints_what_to_do_and_goes_on(lenient, capsys):
    result = checks.check_causal_attention(_todo)
    out = capsys.readouterr().out
    assert not result and "\u2717" in out and "YOUR CODE HERE" in out


def test_lenient_unanswered_prediction_prints_what_to_do_and_goes_on(lenient, capsys):
    result = checks.check_prediction("ch6_one_head_routings", ...)
    assert not result and "replace the `...`" in capsys.readouterr().out


def test_lenient_wrong_function_prints_the_hint_without_raising(lenient, capsys):
    result = checks.check_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())
    out = capsys.readouterr().out
    assert not result and out.startswith("\u2717") and "BLOCKED" in out and "Traceback" not in out


def test_lenient_error_in_the_readers_code_names_their_line(lenient, capsys):
    def broken(q, k, v):
        return q @ k  # wrong shapes unless square
    checks.check_causal_attention(broken)
    out = capsys.readouterr().out
    assert "raised RuntimeError" in out and "your line" in out and "return q @ k" in out


def test_right_answers_return_a_truthy_result_that_displays_nothing(lenient, capsys):
    result = checks.check_causal_mask(lambda t: torch.ones(t, t).tril().bool())
    assert result and result._ipython_display_() is None
    assert capsys.readouterr().out.startswith("\u2713")


KEY = json.loads((Path(__file__).resolve().parents[1] / "instructor" / "answers.json").read_text())


def test_graded_mode_raises_without_revealing_the_answer(graded):
    for key, q in _core.QUESTIONS.items():
        wrong = _a_wrong_answer(key, q)
        with pytest.raises(CheckFailure) as err:
            checks.check_prediction(key, wrong)
        message = str(err.value).replace(key, "")
        assert KEY[key]["explanation"] not in message
        assert _core._text(KEY[key]["answer"]) not in _core._text(message).split(), (key, message)
    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_causal_mask(_todo)


def _a_wrong_answer(key, q):
    answer = KEY[key]["answer"]
    if q["choices"]:
        return next(c for c in q["choices"] if not _core._equal(c, answer))
    return float(answer) + 1.5


def test_no_wrong_prediction_message_states_the_answer(monkeypatch):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    for key, q in _core.QUESTIONS.items():
        with pytest.raises(CheckFailure) as err:
            checks.check_prediction(key, _a_wrong_answer(key, q))
        assert KEY[key]["explanation"] not in str(err.value) and "not what the experiment shows" in str(err.value)


def test_every_question_has_a_hint_and_its_sealed_answer_is_the_keys(monkeypatch, capsys):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    assert set(KEY) == set(_core.QUESTIONS)
    for key, q in _core.QUESTIONS.items():
        assert q["hint"], f"{key} gives no hint after a wrong answer"
        assert checks.check_prediction(key, KEY[key]["answer"])
        assert KEY[key]["explanation"] in capsys.readouterr().out


def test_the_sealed_file_is_up_to_date():
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-m", "editions.seal", "--check"], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr


def test_no_answer_or_explanation_is_readable_in_the_package():
    """What `checks??`, the wheel and site-packages hold: no explanation, and no answer beside
    its question (a choice question lists its options, the answer among them, unmarked)."""
    import ast
    src = Path(_core.__file__).resolve().parents[1]
    files = {p: p.read_text(encoding="utf-8") for p in src.rglob("*.py")}
    text = "\n".join(files.values())
    calls = 0
    for entry in KEY.values():
        assert entry["explanation"][:40] not in text
    for path, code in files.items():
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "register_question":
                calls += 1
                key = node.args[0].value
                assert len(node.args) == 1, f"{path.name}: {key} passes more than its name positionally"
                for kw in node.keywords:
                    if kw.arg == "choices":
                        continue
                    consts = [c.value for c in ast.walk(kw.value) if isinstance(c, ast.Constant)]
                    assert not any(_core._equal(c, KEY[key]["answer"]) for c in consts), (key, kw.arg)
    assert calls == len(KEY)


def test_explain_shows_nothing_before_a_right_answer(monkeypatch, capsys):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "lenient")
    monkeypatch.setattr(_core, "_EXPLAINED", {})
    checks.check_prediction("ch5_weights_symmetric", "yes")  # wrong
    capsys.readouterr()
    checks.explain("ch5_weights_symmetric")
    out = capsys.readouterr().out
    assert KEY["ch5_weights_symmetric"]["explanation"] not in out and "answer it first" in out
    assert checks.check_prediction("ch5_weights_symmetric", "No")
    capsys.readouterr()
    checks.explain("ch5_weights_symmetric")
    assert KEY["ch5_weights_symmetric"]["explanation"] in capsys.readouterr().out


@pytest.mark.parametrize("given, digits, canon", [
    (2.7726, 1, "2.8"), ("2.77", 1, "2.8"), (288, 0, "288"), ("288.0", 0, "288"), ("1e12", 0, "1000000000000"),
    (-0.01, 1, "0"), ("a half", 1, None), (float("nan"), 1, None),
])
def test_numbers_are_hashed_in_one_spelling(given, digits, canon):
    assert _core.canonical(given, digits=digits) == canon


def test_a_choice_is_hashed_in_one_spelling():
    choices = ["near 1.00", "near chance"]
    assert _core.canonical("Near 1", choices) == _core.canonical("near 1.00", choices) == "near 1.0"
    assert _core.canonical(1, ["0", "1"]) == _core.canonical(" 1 ", ["0", "1"]) == "1.0"
    assert _core.canonical("far", choices) is None


# ---------------------------------------------------------------- grading.verify
def test_verify_grades_honestly_whatever_the_kernel_patched(monkeypatch):
    """A student's cell may patch the mode, a checker or the environment: verify ignores them."""
    from beforeqkv.checks import grading
    wrong = lambda t: torch.ones(t, t).triu(1).bool()  # noqa: E731
    right = lambda t: torch.ones(t, t).tril().bool()  # noqa: E731
    monkeypatch.setattr(_core, "mode", lambda fn=None: "lenient")
    monkeypatch.setattr(_core, "_report", lambda *a, **k: checks.CheckResult("x", True))
    monkeypatch.setattr(checks, "check_causal_mask", lambda fn: True)
    monkeypatch.setattr(checks, "check_prediction", lambda *a: True)
    monkeypatch.setenv("BEFOREQKV_GRADING", "0")
    monkeypatch.setenv("BEFOREQKV_CHECKS", "lenient")
    with pytest.raises(AssertionError, match="BLOCKED"):
        grading.verify("check_causal_mask", wrong)
    with pytest.raises(AssertionError, match="not what the experiment shows"):
        grading.verify("check_prediction", "ch5_weights_symmetric", "yes")
    with pytest.raises(AssertionError, match="replace the"):
        grading.verify("check_prediction", "ch5_weights_symmetric", ...)
    assert grading.verify("check_causal_mask", right) is True
    assert grading.verify("check_prediction", "ch5_weights_symmetric", "no") is True
    with pytest.raises(ValueError, match="checker"):
        grading.verify("explain", "ch5_weights_symmetric")
    assert "beforeqkv._graded_checks" not in __import__("sys").modules


@pytest.mark.parametrize("given, answer", [
    (1, "1"), ("1", 1), (1.0, "1"), (" 1 ", "1"), ("Near Uniform", "near-uniform"), ("THE  SAME", "the same"),
    ("1e12", "10^12"), (10 ** 12, "10^12"), ("10**12", "10^12"), ("near 1", "near 1.00"), (torch.tensor(2), 2),
    ("'chance'", "chance"),
])
def test_answers_are_accepted_in_every_natural_form(given, answer):
    assert _core._equal(given, answer)


@pytest.mark.parametrize("given, answer", [(2, "1"), ("near", "near 1.00"), ("higher", "lower"), (True, 1)])
def test_different_answers_stay_different(given, answer):
    assert not _core._equal(given, answer)


def test_the_mode_is_chosen_explicitly_never_read_from_the_code_under_check(monkeypatch, tmp_path):
    for name in ("BEFOREQKV_CHECKS", "BEFOREQKV_GRADING", "NBGRADER_EXECUTION"):
        monkeypatch.delenv(name, raising=False)
    src = tmp_path / "nb_cell.py"
    begin, end = "### BEGIN" + " SOLUTION", "### END" + " SOLUTION"  # not literally in this file
    src.write_text(f"def mine(t):\n    {begin}\n    return t\n    {end}\n")
    spec = importlib.util.spec_from_file_location("nb_cell", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(_core, "_in_kernel", lambda: True)  # a notebook: lenient, solution block or not
    assert checks.mode(mod.mine) == "lenient" and checks.mode() == "lenient"
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")  # what book/conftest.py and make execute set
    assert checks.mode(mod.mine) == "strict"
    try:
        checks.configure("lenient")  # configure wins over the environment ...
        assert checks.mode() == "lenient"
        monkeypatch.setenv("BEFOREQKV_GRADING", "1")  # ... but never over grading
        assert checks.mode() == "graded"
    finally:
        checks.configure(None)
    monkeypatch.delenv("BEFOREQKV_GRADING")
    assert checks.mode() == "strict"
    with pytest.raises(ValueError, match="mode must be"):
        checks.configure("loud")


def test_the_unit_tests_run_strict():
    """tests/conftest.py pins strict mode: a checker test that forgets its assert still fails."""
    assert checks.mode() == "strict"
    with pytest.raises(CheckFailure):
        checks.check_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())


def test_a_checker_that_raises_by_itself_is_reported_by_mode(lenient, capsys):
    @checks.checker
    def check_positive(x):
        if x <= 0:
            raise CheckFailure("positive: got a non-positive number")
        return None
    assert not check_positive(-1) and "\u2717 positive" in capsys.readouterr().out
    assert check_positive(1)


def test_hints_are_only_given_when_the_mistake_matches_every_case():
    # tril(-1) and triu(1) agree at T = 1; only the second is the True = blocked convention.
    with pytest.raises(CheckFailure) as err:
        checks.check_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())
    assert "attend to itself" not in str(err.value) and "BLOCKED" in str(err.value)


def test_an_einsum_with_a_fixed_batch_dimension_gets_the_batch_hint():
    with pytest.raises(CheckFailure, match="any number of batch dimensions"):
        checks.check_all_to_all_mix(lambda x, w: torch.einsum("bij,bjd->bid", w, x))


def test_a_strict_failure_raises_from_a_frame_that_shows_no_checker_source(monkeypatch):
    import traceback
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    with pytest.raises(CheckFailure) as err:
        checks.check_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())
    last = traceback.extract_tb(err.value.__traceback__)[-1]
    assert last.filename.endswith("_failed.py") and err.value.__cause__ is None


# ---------------------------------------------------------------- numeric predictions: value, not format
@pytest.mark.parametrize("key, answer", [
    ("ch8_iid_floor", 2.7726), ("ch8_iid_floor", "2.8"), ("ch8_iid_floor", 2.75), ("ch8_iid_floor", "2.80"),
    ("ch9_handwritten_3m_4c", 0.49), ("ch9_handwritten_3m_4c", "1/2"), ("ch9_handwritten_3m_4c", 0.5000001),
])
def test_a_numeric_prediction_within_the_stated_tolerance_is_right_whatever_its_digits(key, answer, capsys):
    assert checks.check_prediction(key, answer)
    assert _core.is_right(key, answer)


@pytest.mark.parametrize("key, answer", [
    ("ch8_iid_floor", 2.7), ("ch8_iid_floor", math.log(15)), ("ch8_iid_floor", 4), ("ch9_handwritten_3m_4c", 0.44),
    ("ch9_handwritten_3m_4c", 1 / 3), ("ch9_handwritten_3m_4c", 1),
])
def test_a_wrong_numeric_prediction_still_gets_the_concept_hint(key, answer, monkeypatch):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    with pytest.raises(CheckFailure, match="not what the experiment shows. Hint:"):
        checks.check_prediction(key, answer)
    assert not _core.is_right(key, answer)


def test_a_right_value_rounded_too_coarsely_gets_a_hint_about_the_rounding(monkeypatch):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    with pytest.raises(CheckFailure, match="rounded to 0 decimal.*within 0.05: give more decimals") as err:
        checks.check_prediction("ch8_iid_floor", 3)
    assert "not what the experiment shows" not in str(err.value) and KEY["ch8_iid_floor"]["explanation"][:30] \
        not in str(err.value)


def test_each_stated_tolerance_is_in_its_questions_text():
    """A question with a tolerance says it where it is asked (the chapter's markdown)."""
    root = Path(__file__).resolve().parents[1]
    for key, q in _core.QUESTIONS.items():
        if q["tolerance"] is None:
            continue
        chapter = next((root / "book").glob(f"{int(key[2:].split('_')[0]):02d}_*.ipynb"))
        cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
        at = next(i for i, c in enumerate(cells) if f'check_prediction("{key}"' in "".join(c["source"]))
        asked = "".join("".join(c["source"]) for c in cells[max(0, at - 2):at] if c["cell_type"] == "markdown")
        assert f"to within {q['tolerance']:g}" in asked, key


def test_a_tolerance_needs_a_number_and_a_sensible_size():
    with pytest.raises(ValueError, match="tolerance"):
        _core.register_question("x_test", choices=["a", "b"], tolerance=0.1)
    with pytest.raises(ValueError, match="tolerance"):
        _core.register_question("x_test", digits=2, tolerance=5.0)
    assert "x_test" not in _core.QUESTIONS


@pytest.mark.parametrize("graded", [False, True])
def test_a_right_answer_that_warns_prints_nothing_on_stderr(graded):
    """nbgrader zeroes a test cell with any stderr output: a check sends what the reader's code
    writes there (a warning, here) to stdout. A fresh interpreter, where Python itself prints warnings."""
    import subprocess
    import sys
    code = ("import warnings, torch\n"
            "from beforeqkv import checks\n"
            "from beforeqkv.checks import grading\n"
            "def mask(t):\n"
            "    warnings.warn('my code uses something deprecated', UserWarning)\n"
            "    return torch.ones(t, t).tril().bool()\n"
            "assert checks.check_causal_mask(mask)\n"
            "assert grading.verify('check_causal_mask', mask)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEFOREQKV_")}
    env.update(BEFOREQKV_GRADING="1" if graded else "0", BEFOREQKV_CHECKS="strict", PYTHONWARNINGS="default")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and "my code uses something deprecated" in r.stdout and "\u2713" in r.stdout
