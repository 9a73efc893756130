"""book/notation.md's Code column names what the package really calls each quantity.

Every identifier-like name in the Code column (backticked, e.g. `d_head`, `E_item`; not an
expression such as `x[:, i]` or `score.matrix()`) must be defined somewhere in the
package (a module attribute, class or function, a class attribute, an ``nn.Module``
parameter or submodule ``self.name = ...``, a dataclass field, a function parameter or a
local name) or, for the few names only a chapter's own code uses (``alpha`` in chapter 2,
``perm`` in chapter 4), in a chapter's code cells. And one code name means one quantity: two symbol rows may list the
same code name only when one row says how they relate (its meaning mentions the other
row's symbol, as in ``$m = d_\\text{mlp}$``).
"""
import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTATION = ROOT / "book" / "notation.md"
PACKAGE = ROOT / "src" / "beforeqkv"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _table_rows():
    """{column: cell} of every body row of every table on the notation page."""
    rows, header = [], None
    for line in NOTATION.read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(cells[0]) <= {"-", ":", " "}:
            rows.append(dict(zip(header, cells)))
    return rows


def _rows():
    """(symbol cell, code cell, meaning cell) of every table whose header has Symbol and Code."""
    return [(r["Symbol"], r["Code"], r["Meaning"]) for r in _table_rows() if "Symbol" in r and "Code" in r]


def _code_names(code_cell):
    return [name for name in re.findall(r"`([^`]+)`", code_cell) if IDENTIFIER.fullmatch(name)]


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.read_text()
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                lines = "".join(cell["source"]).splitlines()
                yield "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def _defined_names(sources=None):
    names = set()
    for source in _sources() if sources is None else sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            if isinstance(node, ast.arguments):
                names.update(a.arg for a in node.posonlyargs + node.args + node.kwonlyargs)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return names


ROWS = _rows()
DEFINED = _defined_names()


def test_the_notation_page_has_code_names_to_check():
    assert len(ROWS) > 40 and sum(len(_code_names(code)) for _, code, _ in ROWS) > 40


@pytest.mark.parametrize("name", sorted({n for _, code, _ in ROWS for n in _code_names(code)}))
def test_every_code_name_is_defined_in_the_package(name):
    assert name in DEFINED, f"notation.md lists `{name}`, which the package never defines"


def _symbols(cell):
    return [s.strip() for s in re.findall(r"\$([^$]+)\$", cell)]


def _mentions(meaning, symbol):
    maths = " ".join(re.findall(r"\$([^$]+)\$", meaning))
    return re.search(r"(?<![A-Za-z\\])" + re.escape(symbol) + r"(?![A-Za-z_])", maths) is not None


def test_one_code_name_means_one_quantity_unless_the_page_relates_them():
    seen = {}
    for symbol, code, meaning in ROWS:
        for name in _code_names(code):
            seen.setdefault(name, []).append((symbol, meaning))
    for name, rows in seen.items():
        for k, (sym_a, mean_a) in enumerate(rows):
            for sym_b, mean_b in rows[k + 1:]:
                related = (any(_mentions(mean_a, s) for s in _symbols(sym_b))
                           or any(_mentions(mean_b, s) for s in _symbols(sym_a)))
                assert related, f"`{name}` names both {sym_a} and {sym_b}, and the page does not relate them"


def _never_names():
    """{name: symbol} of the "Never in code" column: names other code bases use for a size."""
    return {name: r["Symbol"] for r in _table_rows() if "Never in code" in r
            for name in re.findall(r"`([^`]+)`", r["Never in code"])}


def test_no_code_defines_a_name_the_notation_says_it_never_uses():
    """Names such as `seq_len` or `n_tokens` for T: no package module and no chapter defines them
    (as a function, class, parameter, variable or attribute)."""
    never = _never_names()
    assert {"seq_len", "n_tokens", "num_heads", "vocab_size"} <= set(never)
    listed = {n for _, code, _ in ROWS for n in _code_names(code)}
    assert not set(never) & listed, set(never) & listed
    used = {name: symbol for name, symbol in never.items() if name in DEFINED}
    assert not used, f"the code defines names notation.md says it never uses: {used}"


def test_the_never_check_sees_a_forbidden_parameter_variable_and_attribute():
    """What the package had (`random_tokens(batch_size, seq_len)`, `for n_tokens in ...`) is caught."""
    never = set(_never_names())
    for source in ("def random_tokens(batch_size, seq_len=16):\n    return seq_len\n",
                   "for n_tokens in (10, 100):\n    pass\n", "self.num_heads = 4\n"):
        assert _defined_names([source]) & never, source
    assert not _defined_names(["nn.LSTM(32, 48, num_layers=2)\n"]) & never  # torch's keyword is torch's
