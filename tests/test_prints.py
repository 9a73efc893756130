"""The chapters' print lines in Chinese (tools/editions/prints.py, locales/zh_CN/prints/).

Every English string literal a chapter passes to print() has a translation that keeps its
replacement fields; the catalogs hold exactly what the chapters print; translating touches
nothing but those literals, and the translated chapters still compile.
"""
import ast

import nbformat
import pytest

from _book import CHAPTERS

from editions import prints


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_print_line_of_a_chapter_has_a_translation_that_keeps_its_fields(path):
    nb = nbformat.read(path, as_version=4)
    ids = prints.messages(nb)
    lookup = prints.lookup_for(path.stem)
    missing = [i for i in ids if i not in lookup]
    assert not missing, f"{path.stem}: run `python -m editions.prints update book` and translate {missing[:3]}"
    with prints.catalog_path(path.stem).open("rb") as f:
        catalog = {m.id for m in prints.read_po(f) if m.id}
    assert catalog == set(ids), f"{path.stem}: the catalog holds lines the chapter does not print"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_translated_chapter_changes_only_its_print_literals_and_still_compiles(path):
    nb = nbformat.read(path, as_version=4)
    lookup = prints.lookup_for(path.stem)
    done = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        new, translated, missing = prints.translate_code(cell.source, lookup)
        done += translated
        assert missing == 0, cell.source[:80]
        ast.parse(prints._code(new))  # still Python
        expected, at = "", 0  # the code between the literals, unchanged; each literal its translation
        for start, end, text in prints.literals(cell.source):
            expected += cell.source[at:start] + lookup[text]
            at = end
        assert new == expected + cell.source[at:]
    assert done >= len(prints.messages(nb)) > 0


def test_only_what_print_shows_as_text_is_a_message():
    source = ('res = {"QK rank 1": {"acc": 0.5}}\n'
              'label = "not printed"  # a comment\n'
              'print(res["QK rank 1"]["acc"], "accuracy of rank 1")\n'
              'print(f"{len(res)} scores: " + "done", sep="; ")\n'
              'print("%d heads" % 4, "{} keys".format(3))\n'
              '%time print("timed")\n')
    texts = [t for _, _, t in prints.literals(source)]
    assert texts == ['"accuracy of rank 1"', 'f"{len(res)} scores: "', '"done"', '"%d heads"', '"{} keys"']
    lookup = {'"accuracy of rank 1"': '"秩 1 的准确率"', 'f"{len(res)} scores: "': 'f"{len(res)} 个分数："'}
    new, done, missing = prints.translate_code(source, lookup)
    assert (done, missing) == (2, 3)
    assert 'res["QK rank 1"]' in new and '"not printed"' in new and '"秩 1 的准确率"' in new
    assert new.endswith('%time print("timed")\n')


@pytest.mark.parametrize("msgid, msgstr, ok", [
    ('f"{T:3d} tokens: h {tuple(h.shape)}"', 'f"{T:3d} 个标记：h {tuple(h.shape)}"', True),
    ('f"{T:3d} tokens"', 'f"{T} 个标记"', False),            # a format spec dropped
    ('f"{a} then {b}"', 'f"{b} 然后 {a}"', False),            # fields swapped
    ('f"{a} tokens"', '"{a} 个标记"', False),                  # no longer an f-string
    ('"{} keys, {:.2f} s"', '"{} 个键，{:.2f} 秒"', True),
    ('"{} keys"', '"个键"', False),                            # a field lost
    ('"%d heads"', '"%s 个头"', False),                        # another conversion
    ('"done"', '"完成', False),                                 # not a literal
])
def test_same_fields_refuses_a_translation_that_would_print_something_else(msgid, msgstr, ok):
    assert prints.same_fields(msgid, msgstr) is ok


def test_a_broken_translation_is_left_out_and_the_line_stays_english(tmp_path):
    po = tmp_path / "zh_CN" / "prints" / "99_test.po"
    po.parent.mkdir(parents=True)
    catalog = prints.Catalog(locale="zh_CN")
    catalog.add('f"{n} facts"', 'f"{m} 个事实"')  # a field renamed: would raise NameError or lie
    catalog.add('"memory:"', '"记忆："')
    with po.open("wb") as f:
        prints.write_po(f, catalog)
    lookup = prints.lookup_for("99_test", locales=tmp_path)
    assert lookup == {'"memory:"': '"记忆："'}
    new, done, missing = prints.translate_code('n = 3\nprint(f"{n} facts", "memory:")', lookup)
    assert new == 'n = 3\nprint(f"{n} facts", "记忆：")' and (done, missing) == (1, 1)
