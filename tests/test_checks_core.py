"""The checker machinery: modes (lenient, strict, graded), natural answers, no leaked answers."""
import importlib.util

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


def test_graded_mode_raises_without_revealing_the_answer(graded):
    for key, q in _core.QUESTIONS.items():
        wrong = _a_wrong_answer(q)
        with pytest.raises(CheckFailure) as err:
            checks.check_prediction(key, wrong)
        message = str(err.value).replace(key, "")
        assert q["explanation"] not in message
        assert _core._text(q["answer"]) not in _core._text(message).split(), (key, message)
    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_causal_mask(_todo)


def _a_wrong_answer(q):
    if q["choices"]:
        return next(c for c in q["choices"] if not _core._equal(c, q["answer"]))
    return float(q["answer"]) + 10 * (q["tolerance"] or 0) + 1.5


def test_no_wrong_prediction_message_states_the_answer(monkeypatch):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    for key, q in _core.QUESTIONS.items():
        with pytest.raises(CheckFailure) as err:
            checks.check_prediction(key, _a_wrong_answer(q))
        assert q["explanation"] not in str(err.value) and "not what the experiment shows" in str(err.value)


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


def test_the_solution_block_makes_a_notebook_the_instructors(tmp_path):
    src = tmp_path / "nb_cell.py"
    begin, end = "### BEGIN" + " SOLUTION", "### END" + " SOLUTION"  # not literally in this file
    src.write_text(f"def mine(t):\n    {begin}\n    return t\n    {end}\n\n"
                   "def theirs(t):\n    # YOUR CODE HERE\n    return t\n")
    spec = importlib.util.spec_from_file_location("nb_cell", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert _core._has_solution(mod.mine) and not _core._has_solution(mod.theirs)


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
