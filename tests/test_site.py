"""Tests on the built site (_build/html): run by .ci/run after `make site`."""
import html as html_lib
import re
from html.parser import HTMLParser

import nbformat
import pytest
import yaml

from _book import CHAPTERS, ROOT, predictions, reader_problems

from editions import bootstrap
from editions.export_reader import glue_values

import prose_audit


def page(site, chapter):
    return (site / "book" / f"{chapter.stem}.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_page_has_a_colab_launch_button(site, chapter):
    html = page(site, chapter)
    assert "colab.research.google.com" in html, f"{chapter.stem} has no Colab launch link"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_page_shows_executed_figures_and_no_errors(site, chapter):
    html = page(site, chapter)
    assert re.search(r"<img[^>]+src=\"[^\"]*\.png\"", html), f"{chapter.stem} shows no figure"
    assert "Traceback (most recent call last)" not in html
    assert "{glue:" not in html and "glue:text" not in html, "an unresolved glue role reached the page"
    assert "Show solution" in html, "solutions are in the book, folded as 'Show solution'"
    assert "BEGIN SOLUTION" not in html and "END SOLUTION" not in html, "a solution marker shows"


def test_index_links_to_the_first_chapter(site):
    assert "book/index.html" in (site / "index.html").read_text(encoding="utf-8")  # the root redirects
    assert "01_squished_memory.html" in (site / "book" / "index.html").read_text(encoding="utf-8")


ALL_PAGES = ["index"] + [f"book/{p.stem}" for p in CHAPTERS] + ["search", "genindex"]


@pytest.mark.parametrize("name", ALL_PAGES)
def test_no_page_loads_anything_from_another_host(site, name):
    html = (site / f"{name}.html").read_text(encoding="utf-8")
    remote = re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"((?:https?:)?//[^\"]+)\"", html)
    remote = [u for u in remote if "rel=\"canonical\"" not in u]
    assert not remote, f"{name} loads {remote}: serve it from the site (tools/vendor.py)"
    for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com", "require.min.js"):
        assert cdn not in html, f"{name} mentions {cdn}"


def test_mathjax_is_served_from_the_site_at_the_pinned_version(site):
    import vendor
    version, integrity, _ = vendor.PINS["mathjax"]
    stamp = site / "_static" / "mathjax" / "VERSION"
    assert (site / "_static" / "mathjax" / "es5" / "tex-mml-chtml.js").is_file()
    assert (site / "_static" / "mathjax" / "es5" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert stamp.read_text() == f"{version} {integrity}"
    assert '_static/mathjax/es5/tex-mml-chtml.js' in (site / "book" / "notation.html").read_text(encoding="utf-8")
    assert (site / "_static" / "favicon.svg").is_file()


def _served(site, edition) -> dict:
    """{"ort/NAME" or "live/NAME": the file the edition's pages fetch}: its own copy, or the
    first edition's where its bqkv-live.js says so (tools/editions/share_static.py)."""
    import json
    static = site / edition / "_static"
    table = re.search(r"var SHARED = (\{.*?\});", (static / "bqkv-live.js").read_text("utf-8")).group(1)
    shared = json.loads(table)
    out = {f"{d}/{p.name}": p for d in ("ort", "live") for p in (static / d).iterdir()}
    for name, up in shared.items():
        assert name not in out, f"{edition}: {name} is shared and kept"
        out[name] = (site / edition / up / "_static" / name).resolve()     # as the page resolves it
        assert out[name].is_file() and out[name].is_relative_to(site.resolve()), name
    return out


def test_the_chinese_edition_reads_the_english_copy_of_the_large_files_they_share(site):
    """One copy on the site of the runtime's WebAssembly and the models read from files
    (MiniLM, SmolLM2): the Chinese pages fetch the English edition's (tools/editions/share_static.py)."""
    import json
    table = re.search(r"var SHARED = (\{.*?\});", (site / "zh" / "_static" / "bqkv-live.js").read_text("utf-8"))
    assert set(json.loads(table.group(1))) >= {"ort/ort-wasm-simd-threaded.wasm", "live/ch10-minilm-int8.onnx",
                                               "live/ch11-smollm2.onnx", "live/ch11-smollm2-tokenizer.json"}
    assert "var SHARED = {};" in (site / "_static" / "bqkv-live.js").read_text("utf-8")


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_onnxruntime_web_is_served_from_the_site_with_its_licence(site, edition):
    """The live explorers' runtime: the pinned release, its licence and notice beside it, and
    the chapter's exported models; only the pages with a live explorer load the script."""
    import vendor
    version, integrity, _ = vendor.PINS["onnxruntime-web"]
    served = _served(site, edition)
    ort = site / edition / "_static" / "ort"
    assert (ort / "VERSION").read_text() == f"{version} {integrity}"
    for name in ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"):
        assert served[f"ort/{name}"].is_file(), name
    assert "MIT License" in (ort / "LICENSE").read_text() and "ThirdPartyNotices" in (ort / "NOTICE").read_text()
    assert f'var ORT_VERSION = "{version}"' in (site / edition / "_static" / "bqkv-live.js").read_text()
    live = {name[5:]: path for name, path in served.items() if name.startswith("live/")}
    assert sorted(live) == [
        "ch01-recall-n16.onnx", "ch01-recall-n2.onnx", "ch01-recall-n32.onnx", "ch01-recall-n4.onnx",
        "ch01-recall-n8.onnx", "ch01-recall.json", "ch02-crosstalk.json", "ch02-crosstalk.onnx",
        *(f"ch04-pointer-{k}.onnx" for k in range(3)), "ch04-pointer.json",  # the 3 mixers
        *(f"ch05-triads-{k}.onnx" for k in range(8)), "ch05-triads.json",   # the 8 scores
        *(f"ch06-ring-{k}.onnx" for k in range(3)), "ch06-ring.json",       # H = 1, 2, 4
        "ch07-softmax.json", "ch07-softmax.onnx",                           # the draws, stored
        "ch08-prompt.json", "ch08-prompt.onnx",
        *(f"ch09-slots-{k}.onnx" for k in range(2)), "ch09-slots.json",     # trained, by hand
        "ch10-minilm-int8.onnx", "ch10-minilm-vocab.txt", "ch10-minilm.json",
        "ch11-smollm2-tokenizer.json", "ch11-smollm2.json", "ch11-smollm2.onnx"]
    assert 110e6 < live["ch11-smollm2.onnx"].stat().st_size < 125e6      # the README: about 117 MB
    with_script = sorted(p.stem for p in (site / edition / "book").glob("*.html")
                         if "bqkv-live.js" in p.read_text("utf-8"))
    assert with_script == ["01_squished_memory", "02_keep_every_state", "04_dynamic_weights", "05_queries_keys",
                           "06_values_heads", "07_scaling", "08_transformer", "09_mlp_memory", "10_real_encoder",
                           "11_modern_llm"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_explorers_are_static_components_not_blank_widgets(site, chapter):
    html = page(site, chapter)
    assert "bqkv-explorer" in html, f"{chapter.stem}: no static explorer (was BEFOREQKV_EXPLORERS=static set?)"
    assert "application/vnd.jupyter.widget-view+json" not in html, f"{chapter.stem} has a blank widget"


class _Figures(HTMLParser):
    """Each content image (a cell's output, not a logo or an explorer frame), and whether it
    sits in a <figure> whose caption is numbered."""

    def __init__(self):
        super().__init__()
        self.depth, self.images, self.figures = 0, [], []  # figures: [has_number, [images]]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure":
            self.figures.append([False, []])
        elif tag == "span" and "caption-number" in (a.get("class") or "") and self.figures:
            self.figures[-1][0] = True
        elif tag == "img" and "/_images/" in "/" + (a.get("src") or "").lstrip("./"):
            entry = {"src": a.get("src"), "alt": a.get("alt") or "", "figure": None}
            self.images.append(entry)
            if self.figures:
                self.figures[-1][1].append(entry)

    def handle_endtag(self, tag):
        if tag == "figure" and self.figures:
            numbered, images = self.figures.pop()
            for entry in images:
                entry["figure"] = numbered


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_is_numbered_captioned_and_described(site, chapter):
    parser = _Figures()
    parser.feed(page(site, chapter))
    assert parser.images, f"{chapter.stem}: no figure"
    bare = [i["src"] for i in parser.images if not i["figure"]]
    assert not bare, (f"{chapter.stem}: {len(bare)} of {len(parser.images)} figures have no numbered "
                      "caption (give the cell mystnb figure metadata)")
    undescribed = [i["src"] for i in parser.images if i["alt"].startswith("../_images/") or not i["alt"]]
    assert not undescribed, f"{chapter.stem}: {len(undescribed)} figures without alt text"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_figures_are_numbered_by_chapter(site, chapter):
    n = int(chapter.stem.split("_")[0])
    numbers = re.findall(r'caption-number">Figure ([\d.]+)', page(site, chapter))
    assert numbers == [f"{n}.{i}" for i in range(1, len(numbers) + 1)], numbers


def test_the_public_site_holds_no_answer_of_the_key(site):
    """Every page and every file the site serves (HTML, notebooks, sources): no prediction
    answer line, no explanation that only a right answer unlocks, no check's "right." line."""
    from _book import answer_leaks, answer_markers
    markers = answer_markers()
    scanned = 0
    for path in site.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".ipynb", ".txt", ".md", ".js", ".json", ".py"):
            if "mathjax" in path.parts:
                continue
            scanned += 1
            leaks = answer_leaks(path.read_text(encoding="utf-8", errors="replace"), markers)
            assert not leaks, (str(path.relative_to(site)), leaks[:3])
    assert scanned > 20


# ---------------------------------------------------------------- every button opens the reader notebook
def expected_launch_urls(chapter):
    """The Colab and Binder URLs of a chapter, from _config.yml alone."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    org, repo = re.match(r"https://github\.com/([^/]+)/([^/]+)", config["repository"]["url"]).groups()
    branch = config["sphinx"]["config"]["bqkv_notebooks_branch"]
    ui = {"classic": "tree", "jupyterlab": "lab/tree"}[config["launch_buttons"]["notebook_interface"]]
    path = f"{config['sphinx']['config']['bqkv_notebooks_dir']}/{chapter.name}"
    return {"colab": f"https://colab.research.google.com/github/{org}/{repo}/blob/{branch}/{path}",
            "binder": f"https://mybinder.org/v2/gh/{org}/{repo}/{branch}?urlpath={ui}/{path}"}


def links(html):
    hrefs = [html_lib.unescape(h) for h in re.findall(r'<a [^>]*href="([^"]+)"', html)]
    return {"colab": [h for h in hrefs if "colab.research.google.com" in h],
            "binder": [h for h in hrefs if "mybinder.org" in h],
            "download": [h for h in hrefs if h.endswith(".ipynb") and "://" not in h]}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_colab_and_binder_open_the_notebooks_branch_as_config_says(site, chapter):
    found, want = links(page(site, chapter)), expected_launch_urls(chapter)
    assert found["colab"] == [want["colab"]] and found["binder"] == [want["binder"]], found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_launch_and_download_link_is_a_reader_notebook_the_build_wrote(site, chapter):
    found = links(page(site, chapter))
    assert len(found["download"]) == 1, found["download"]
    download = (site / "book" / found["download"][0]).resolve()
    assert download.is_relative_to(site.resolve()) and download.is_file(), found["download"]
    folder = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["bqkv_notebooks_dir"]
    for url in found["colab"] + found["binder"]:  # notebooks/NN.ipynb on the branch: the same file
        branch_path = re.search(rf"({re.escape(folder)}/[^/?]+\.ipynb)$", url).group(1)
        assert branch_path == f"{folder}/{chapter.name}"
        assert (site / "notebooks" / chapter.name).resolve() == download
    source = nbformat.read(chapter, as_version=4)
    served = nbformat.read(download, as_version=4)
    assert reader_problems(served, source) == []
    head = bootstrap.head_commit()
    assert head is None or bootstrap.pinned_ref(served) == head, "the notebook installs the commit of its page"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_prediction_answer_is_on_the_site(site, chapter):
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", page(site, chapter)))
    found = predictions(nbformat.read(chapter, as_version=4))
    assert found and ": right." not in text
    for name, line in found:
        assert line not in text and f"{name} = ...  # your prediction" in text, name


def test_no_file_of_the_site_holds_a_prediction_answer_or_a_solution_marker(site):
    """Not a page, nor _sources/, nor the search index, nor a notebook to download."""
    answers = {line for chapter in CHAPTERS for _, line in predictions(nbformat.read(chapter, as_version=4))}
    for path in site.rglob("*"):
        if path.suffix not in (".html", ".txt", ".ipynb", ".js", ".json") or "_static" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        assert "BEGIN SOLUTION" not in text, path
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", text)).replace('\\"', '"')  # HTML, JSON
        leaked = [a for a in answers if a in text]
        assert not leaked, (path, leaked)


@pytest.mark.parametrize("edition", ["_exec", "_exec_zh"])
def test_no_page_shows_a_warning_or_stderr_output(site, edition):
    """Every page is built from these executed notebooks: a warning printed by the book's own
    code (with the build machine's paths in it) would be on the page."""
    executed = sorted((ROOT / edition / "book").glob("[0-9]*.ipynb"))
    assert len(executed) == len(CHAPTERS), f"{edition}/book: run `make execute`"
    noise = []
    for path in executed:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for out in cell.get("outputs", []):
                text = out.get("text", "")
                if out.get("name") == "stderr" or "Warning:" in text:
                    noise.append(f"{path.name} cell {i}: {text[:100]!r}")
    assert noise == []


def test_the_glued_timings_are_exactly_the_numbers_the_two_executions_disagree_on(site):
    """The two editions run every chapter apart: what they glue differently is a measurement of
    the machine, a timing, whose paragraph must say whose machine it was (prose_audit.TIMINGS,
    tests/test_prose.py), or a word in the reader's language. A timing missing from TIMINGS,
    or a listed one that is in fact deterministic, fails here."""
    differ, words = set(), {}
    executed = sorted((ROOT / "_exec" / "book").glob("[0-9]*.ipynb"))
    assert len(executed) == len(CHAPTERS), "_exec/book: run `make execute`"
    for path in executed:
        en, cn = glue_values(path), glue_values(ROOT / "_exec_zh" / "book" / path.name)
        assert en.keys() == cn.keys(), path.name
        for name in en:
            if en[name] == cn[name]:
                continue
            if isinstance(cn[name], str) and re.search(r"[\u4e00-\u9fff]", cn[name]):
                words[name] = cn[name]  # a string glued in the reader's language
            else:
                differ.add(name)
    assert differ == prose_audit.TIMINGS, (sorted(differ - prose_audit.TIMINGS),
                                           sorted(prose_audit.TIMINGS - differ))
    assert set(words) == {"ch6_h1_won_name"}, words


@pytest.mark.parametrize("edition", ["", "zh/"])
@pytest.mark.parametrize("chapter", ["02_keep_every_state", "03_red_connections", "11_modern_llm"])
def test_an_explorer_that_runs_nothing_live_offers_every_setting(site, edition, chapter):
    """Chapter 3 draws a diagram from two short sliders and computes nothing in the browser;
    chapter 2's six scales and chapter 11's prompts are what a reader without WebAssembly gets
    under their live panels. These explorers must cover their whole range, every setting
    drawn, not a thinned grid."""
    from beforeqkv import i18n
    i18n.set_language("zh_CN" if edition else "en")
    try:
        template = i18n._("All {total} settings were drawn when the book was built; "
                          "in Jupyter or Colab this explorer redraws live.")
    finally:
        i18n.set_language(None)
    every = re.compile(re.escape(html_lib.escape(template)).replace(re.escape("{total}"), r"[\d,]+"))
    notes = re.findall(r'<p class="bqkv-note"[^>]*>(.*?)</p>', (site / edition / "book" / f"{chapter}.html")
                       .read_text("utf-8"), re.S)
    assert notes and all(every.fullmatch(n.strip()) for n in notes), notes
