"""editions.myst: the one MyST grammar the editions read the chapters with."""
import pytest
from editions import myst

TEXT = """(fig-x)=
# Title {math}`x^2`

Some {glue:text}`acc:.2f` and {footcite:t}`vaswani2017`, then `{glue}`not_a_role``.

| a | b |
|---|---|
| {glue}`x` | {glue}`y` |

:::{note} A title
Body {glue}`z`

```{math}
a = b
```
:::
"""


def _role(name, content):
    return f"<{name}|{content}>"


def _directive(name, arg, body):
    inner = myst.rewrite(body, _role, _directive) if name != "math" else body
    return f"[{name}:{arg}]{inner.strip()}[/{name}]"


def test_roles_targets_and_directives_become_what_the_caller_says():
    out = myst.rewrite(TEXT, _role, _directive)
    assert "(fig-x)=" not in out and out.startswith("# Title <math|x^2>")
    assert "Some <glue:text|acc:.2f> and <footcite:t|vaswani2017>" in out
    assert "`{glue}`not_a_role``" in out, "a code span is code, not a role"
    assert "| <glue|x> | <glue|y> |" in out, "every role of a table row"
    assert "[note:A title]Body <glue|z>\n\n[math:]a = b[/math][/note]" in out, "a directive inside a directive"
    assert myst.raw_myst(out) == []


def test_the_roles_come_in_reading_order_with_directive_bodies():
    assert myst.roles(TEXT) == [("math", "x^2"), ("glue:text", "acc:.2f"), ("footcite:t", "vaswani2017"),
                                ("glue", "x"), ("glue", "y"), ("glue", "z")]


def test_raw_myst_finds_what_is_left():
    found = myst.raw_myst(TEXT)
    assert "(fig-x)=" in found and "{glue}`x`" in found and ":::{note} A title" in found


def test_a_directive_s_options_are_not_its_body():
    tok = next(t for t in myst.parse("```{figure} a.png\n:name: fig-a\n:width: 50%\nThe caption\n```\n")
               if myst.directive(t))
    assert myst.directive(tok) == ("figure", "a.png")
    assert myst.options_and_body(tok) == ([":name: fig-a", ":width: 50%"], "The caption\n")


def test_a_plain_code_fence_is_no_directive():
    tok = next(t for t in myst.parse("```python\nx = 1\n```\n"))
    assert myst.directive(tok) is None


@pytest.mark.parametrize("text", ["no MyST at all\n\n- a list\n", "", "$$\na\n$$\n"])
def test_text_without_myst_comes_back_as_it_was(text):
    assert myst.rewrite(text, _role, _directive) == text


def _r(text):
    return myst.rewrite(text, _role, _directive)


def test_a_role_wrapped_onto_the_next_line_is_found():
    assert _r("See {ref}`the\nfigure <f>`.") == "See <ref|the figure <f>>."
    assert _r("- a {ref}`x\n  y` b\n") == "- a <ref|x y> b\n"


def test_a_role_in_a_definition_term_is_found():
    assert _r("Term {math}`x`\n: def {glue}`y`\n") == "Term <math|x>\n: def <glue|y>\n"


def test_a_code_span_that_spells_a_role_is_left_and_the_role_after_it_rewritten():
    assert _r("Write `{math}`x`` for {math}`x`.") == "Write `{math}`x`` for <math|x>."


def test_a_directive_keeps_the_list_item_or_blockquote_it_sits_in():
    assert _r("1. item\n\n   :::{note}\n   x\n   :::\n2. next") == "1. item\n\n   [note:]x[/note]\n2. next"
    out = _r("> ```{note} T\n> one\n>\n> two\n> ```")
    assert out == "> [note:T]one\n>\n> two[/note]", out


def test_a_yaml_options_block_is_not_the_body():
    tok = next(t for t in myst.parse("```{figure} a.png\n---\nname: fig-a\n---\nThe caption\n```\n")
               if myst.directive(t))
    assert myst.options_and_body(tok) == (["---", "name: fig-a", "---"], "The caption\n")
