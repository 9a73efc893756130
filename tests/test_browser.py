"""The built site in headless Chromium, offline, as a reader meets it (`make test-site`).

Every page is opened at 1280 px and at 390 px with every request for a host other than
127.0.0.1 blocked (tools/browser.py: Playwright driving Debian's Chromium). Screenshots go
to _build/screenshots/. Runs with --require-site.

Code cells wider than their box are counted; the count may not exceed
BEFOREQKV_MAX_WIDE_CODE (unset: the test is an expected failure that reports the
offenders, until the notebooks' long lines are fixed).
"""

import functools

import pytest

from _book import ROOT, toc_files

pytest.importorskip("playwright", reason="the browser tests drive Chromium with Playwright (requirements.txt)")
import browser  # noqa: E402

HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
PAGES = [f"{f}.html" for f in toc_files()] + ["search.html", "genindex.html"]


@pytest.fixture(scope="module")
def report(site):
    if not browser.find_chromium():
        pytest.fail("no Chromium: apt-get install -y chromium (.ci/run installs it)")
    return browser.check_site(site, SHOTS, PAGES)


def test_every_page_of_the_table_of_contents_was_built():
    missing = [p for p in PAGES if not (HTML / p).exists()]
    if (HTML / "index.html").exists():
        assert not missing


@pytest.mark.parametrize("page", PAGES)
def test_maths_is_typeset_and_no_raw_tex_is_left(report, page):
    r = report[page]
    if r["math_elements"]:
        assert r["mathjax"] >= r["math_elements"] * 0.9, f"{page}: MathJax did not typeset the maths"
    assert r["math_errors"] == 0, f"{page}: {r['math_errors']} TeX errors"
    assert not r["raw_tex"], f"{page}: raw TeX on the page: {r['raw_tex'][:3]}"


@pytest.mark.parametrize("page", PAGES)
def test_every_image_loads(report, page):
    broken = [i["src"] for i in report[page]["images"] if not i["ok"]]
    assert not broken, f"{page}: images that did not load: {broken}"


@pytest.mark.parametrize("page", PAGES)
def test_no_console_error_no_failed_request_and_nothing_from_a_cdn(report, page):
    assert not report[page]["problems"], f"{page}: " + "\n".join(report[page]["problems"])


@pytest.mark.parametrize("page", PAGES)
def test_no_traceback_and_no_blank_widget(report, page):
    r = report[page]
    assert not r["traceback"], f"{page} shows a traceback"
    assert r["widget_views"] == 0, f"{page} has ipywidgets views, which are blank without a kernel"


@pytest.mark.parametrize("page", PAGES)
def test_one_search_box_and_no_sideways_scroll_on_a_phone(report, page):
    r = report[page]
    assert r["search_inputs"] <= 1, f"{page}: {r['search_inputs']} visible search boxes"
    assert r["phone_page_width"] <= browser.PHONE + 1, \
        f"{page}: the page is {r['phone_page_width']} px wide on a {browser.PHONE} px phone"
    assert not r["phone_clipped_links"], \
        f"{page}: on a {browser.PHONE} px phone the {r['phone_clipped_links']} link at the foot is cut off (book.css)"


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("book/0") or p.startswith("book/1")])
def test_each_explorer_responds_without_a_kernel(report, page):
    explorers = report[page]["explore"]
    for ex in explorers:
        assert ex["enabled"], f"{page}: {ex['id']} controls stayed disabled (script did not run)"
        for c in ex["controls"]:
            assert c["changed"] >= 1, f"{page}: moving {c['name']} never changed the figure"
            assert c["consistent"], f"{page}: {c['name']} shows a value its figure was not drawn for"
            assert c["back"], f"{page}: moving {c['name']} back did not restore the figure"


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("book/0") or p.startswith("book/1")])
def test_explorer_labels_and_controls_are_legible_in_light_and_dark_mode(report, page):
    """WCAG AA for text: a contrast ratio of at least 4.5 between the computed colour of each
    label, shown value, dropdown and note and the background it is painted on."""
    contrast = report[page]["contrast"]
    if report[page]["explorers"]:
        assert contrast["dark"] and contrast["light"], f"{page}: explorer text was not measured"
    for theme, items in contrast.items():
        low = [f"{x['tag']} {x['text']!r}: {x['ratio']} ({x['color']} on {x['background']})"
               for x in items if x["ratio"] < 4.5]
        assert not low, f"{page}, {theme} theme: " + "; ".join(low[:4])


def test_every_chapter_has_an_explorer(report):
    chapters = [p for p in PAGES if p.split("/")[-1][:2].isdigit()]
    without = [p for p in chapters if report[p]["explorers"] == 0]
    assert not without, f"chapters without a working explorer on the site: {without}"


def test_screenshots_of_every_page_at_both_widths(report):
    for page in PAGES:
        stem = page[:-5].replace("/", "_")
        for width in ("desktop", "phone"):
            assert (SHOTS / f"{stem}-{width}.png").stat().st_size > 1000


def test_code_cells_fit_the_column_at_1280_px(report):
    wide = {p: r["overflowing_code"] for p, r in report.items() if r["overflowing_code"]}
    count = sum(map(len, wide.values()))
    summary = "; ".join(f"{p.split('/')[-1]}: {len(w)} (longest {max(x['longest'] for x in w)})"
                        for p, w in wide.items())
    assert count == 0, f"{count} code cells wider than the column at 1280 px: {summary}"


def test_the_browser_check_catches_what_it_is_for(tmp_path, request):
    """A page with a frozen explorer, raw TeX, a broken image, a CDN script, a console error, an
    uncaught exception and an overflowing code cell: the check must report every one of them
    (and a good explorer as good)."""
    if not browser.find_chromium():
        if request.config.getoption("--require-site"):
            pytest.fail("no Chromium: apt-get install -y chromium")
        pytest.skip("no Chromium")
    from beforeqkv import plot, widgets

    def draw(n=1):
        return plot.lines([0, 1], {"y": [0, n]}, title=f"n = {n}", figsize=(3, 2))

    good = widgets.static_explorer(draw, dict(n=(1, 3, 1)), 10)._repr_html_()
    explorer_id = good[good.index("bqkv-explorer-"):][:26]
    frozen = good.replace("img.src = d.images", "void d.images").replace(explorer_id, "bqkv-explorer-frozen")
    (tmp_path / "page.html").write_text(
        "<html><head><script src='https://cdn.example.org/x.js'></script></head><body>"
        "<p>raw $$x^2$$ here</p><img src='missing.png'>"
        "<script>console.error('boom'); notDefined()</script>"
        "<div class='cell'><div class='cell_input'><pre style='width:200px;overflow:auto'>"
        + "x = 1  # " + "long " * 40 + "</pre></div></div>" + good + frozen
        + "<style>html[data-theme=dark] #bqkv-explorer-frozen { background: #121212 }"
        " html[data-theme=dark] #bqkv-explorer-frozen label { color: #222832 }</style>"
        "</body></html>")
    r = browser.check_site(tmp_path, None, ["page.html"])["page.html"]
    problems = "\n".join(r["problems"])
    assert "other host (blocked): https://cdn.example.org/x.js" in problems
    assert "http 404: /missing.png" in problems and "console: boom" in problems
    assert "exception: ReferenceError: notDefined is not defined" in problems
    assert r["raw_tex"] and any(not i["ok"] for i in r["images"])
    assert len(r["overflowing_code"]) == 1
    good_report, frozen_report = r["explore"]
    assert good_report["controls"][0]["changed"] == 2 and good_report["controls"][0]["consistent"]
    assert frozen_report["controls"][0]["changed"] == 0
    dark = {x["id"]: x["ratio"] for x in reversed(r["contrast"]["dark"])}   # the lowest per explorer
    assert dark["bqkv-explorer-frozen"] < 1.5 and min(x["ratio"] for x in r["contrast"]["light"]) >= 4.5


# --- live explorers (src/beforeqkv/live.py, book/_static/bqkv-live.js) -------------------------
LIVE_PAGES = [f"{edition}book/{chapter}.html" for edition in ("", "zh/")
              for chapter in ("01_squished_memory", "02_keep_every_state", "04_dynamic_weights", "05_queries_keys",
                              "06_values_heads", "07_scaling", "08_transformer", "09_mlp_memory", "10_real_encoder",
                              "11_modern_llm")]
BAD_INPUT = {"recall": ["12:3 12:4", "12-3", "64:1", " "], "prompt": ["", "héllo wörld"],
             "rows": ["1 2 3", "3 9 14 0 9 5 1 12 7 7 2 15 4 0 11 16", "1.5", "-1", " "],
             "heads": ["0:1 0:2", "R0:1 R0:2", "R0-3", "9:9", "R0:9", "P7:3 R0:", " "], "slots": [],
             "softmax": [], "sentences": [], "nexttoken": ["", " word" * 80], "crosstalk": []}
EIGHT_BITS = 0.06    # chapter 10's 8-bit MiniLM: |embedding - PyTorch's float32| (unit vectors)
# chapter 11: SmolLM2's next-token probabilities in the browser against PyTorch's. The same
# numbers (the GGUF file's grids), but float32 through 30 blocks on other kernels; measured:
# at most 3e-5 apart on this machine's Chromium (onnxruntime in Python: 3e-6)
NEXT_TOKEN = 1e-4


@pytest.fixture(scope="module")
def live_report(site):
    if not browser.find_chromium():
        pytest.fail("no Chromium: apt-get install -y chromium (.ci/run installs it)")
    return browser.check_live_pages(site, LIVE_PAGES, BAD_INPUT, SHOTS)


def _close(got, want):
    """Within 1e-5, relative to the number where it is over 1 (float32 keeps ~7 digits: chapter
    6's logits reach 30, where two correct float32 computations differ by a few 1e-6)."""
    return len(got) == len(want) and all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(got, want))


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_live_explorer_gives_pytorchs_numbers_in_the_browser(live_report, page):
    """The chapter's trained model, exported when the book was executed, run by onnxruntime-web
    on fixed inputs typed as a reader would: PyTorch's weights and logits within 1e-5, and for a
    prompt PyTorch's greedy continuation."""
    explorers = live_report[page]["explorers"]
    assert len(explorers) == 1, f"{page}: {len(explorers)} live explorers"
    for ex in explorers:
        assert len(ex["fixtures"]) >= 3
        for fixture, got in ex["fixtures"]:
            assert got["state"] == "ready", f"{page}: {fixture}: {got['status']}"
            r = got["result"]
            if ex["kind"] == "sentences":
                _same_as_the_8_bit_model(page, fixture, r)
                continue
            if ex["kind"] == "softmax":
                _same_row_and_title(page, fixture, r)
                continue
            if ex["kind"] == "nexttoken":
                _same_next_tokens(page, fixture, r)
                continue
            if ex["kind"] == "crosstalk":     # the chapter's fractions (multiples of 1/2000): exactly
                assert r["soft"] == fixture["soft"] and r["fixed"] == fixture["fixed"], f"{page}: {fixture['d_k']}"
                assert r["scale"] == pytest.approx(fixture["scale"], rel=1e-12), page
                continue
            assert _close(r["logits"], fixture["logits"]), f"{page}: logits"
            if ex["kind"] in ("recall", "rows", "heads", "slots"):
                assert _close(r["weights"], fixture["weights"]), f"{page}: weights"
                if ex["kind"] == "slots":
                    assert _close(r["votes"], fixture["votes"]), f"{page}: votes"
            else:
                assert len(r["weights"]) == len(fixture["weights"]) >= 2
                assert all(_close(a, b) for a, b in zip(r["weights"], fixture["weights"])), page
                assert r["sample"] == fixture["greedy"], f"{page}: {fixture['prompt']!r}"


def _same_row_and_title(page, fixture, r):
    """Chapter 7: the chapter's weights and gradient within 1e-5, and above them the title its
    figure draws, formatted as Python formats it (max weight to 4 places, the gradient as 7.3e-05)."""
    from beforeqkv import i18n, live
    assert _close(r["weights"], fixture["weights"]) and _close([r["grad"]], [fixture["grad"]]), f"{page}: {fixture}"
    i18n.set_language("zh_CN" if page.startswith("zh/") else "en")
    try:
        title = live.SoftmaxRow.titles()["scaled_title" if fixture["scaled"] else "unscaled_title"]
    finally:
        i18n.set_language(None)
    want = title.replace("{w}", "{w:.4f}").replace("{g}", "{g:.1e}").format(
        d=2 ** fixture["log2_d"], w=max(r["weights"]), g=r["grad"])
    assert r["title"] == want, f"{page}: {r['title']!r} is not {want!r}"


def _same_next_tokens(page, fixture, r):
    """Chapter 11: the page's byte-level BPE gives Python's ids; the likeliest next tokens are
    PyTorch's, each within NEXT_TOKEN, labelled as Python's repr() labels them (a token swaps
    places or leaves the list only in a tie within NEXT_TOKEN)."""
    assert r["ids"] == fixture["ids"], f"{page}: {fixture['prompt']!r}: BPE ids differ"
    got, want = dict(zip(r["top"], r["probs"])), dict(zip(fixture["top"], fixture["probs"]))
    labels = dict(zip(fixture["top"], fixture["labels"]))
    for i in set(got) & set(want):
        assert abs(got[i] - want[i]) <= NEXT_TOKEN, f"{page}: {fixture['prompt']!r}: token {i}"
        assert dict(zip(r["top"], r["labels"]))[i] == labels[i], f"{page}: token {i}'s label"
    for i in set(got) ^ set(want):
        edge = min(want.values()) if i in want else min(got.values())
        assert abs(got.get(i, want.get(i)) - edge) <= NEXT_TOKEN, f"{page}: token {i} at the edge"
    assert r["probs"] == sorted(r["probs"], reverse=True) and len(r["top"]) == len(fixture["top"])


@pytest.mark.parametrize("page", [p for p in LIVE_PAGES if "11_modern_llm" in p])
def test_a_click_on_a_next_token_appends_it_and_the_model_reads_on(live_report, page):
    """Chapter 11: after the first prompt, a click on the likeliest token's bar appends that
    token's text to the prompt, and the explorer runs again on the longer prompt."""
    (ex,) = live_report[page]["explorers"]
    first = ex["fixtures"][0][0]
    clicked = ex["clicked"]
    assert clicked["state"] == "ready", clicked["status"]
    longer = first["prompt"] + _smollm2().decode([first["top"][0]])
    assert clicked["result"]["prompt"] == longer and clicked["result"]["ids"] == _smollm2().tokenize(longer)


def _same_as_the_8_bit_model(page, fixture, r):
    """Chapter 10: the page's WordPiece gives Python's ids; onnxruntime-web gives what
    onnxruntime gives for the same 8-bit model (1e-5); the 8-bit embeddings stay within
    EIGHT_BITS of PyTorch's float32 ones, and their cosine within a tenth of that."""
    import math
    first, second = fixture["first"], fixture["second"]
    assert r["ids1"] == first["ids"] and r["ids2"] == second["ids"], f"{page}: WordPiece ids differ"
    assert _close(r["embedding1"], first["embedding_int8"]), page
    assert _close(r["embedding2"], second["embedding_int8"]), page
    assert _close(r["weights"], first["weights_int8"]), page
    for got, want in ((r["embedding1"], first["embedding"]), (r["embedding2"], second["embedding"])):
        assert math.dist(got, want) <= EIGHT_BITS, f"{page}: 8 bits moved the embedding by {math.dist(got, want):.3f}"
    cos32 = sum(a * b for a, b in zip(first["embedding"], second["embedding"]))
    assert abs(r["cosine"] - cos32) <= EIGHT_BITS / 10, f"{page}: cosine {r['cosine']:.4f} vs {cos32:.4f}"


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_live_explorer_fetches_nothing_before_a_touch_and_answers_within_a_second(live_report, page):
    r = live_report[page]
    assert r["before"] == [], f"{page} fetched the runtime or a model before any touch: {r['before']}"
    assert r["bytes_after"] > r["bytes_before"] + 10_000_000     # the runtime came when used
    for ex in r["explorers"]:
        later = [got["result"]["ms"] for _, got in ex["fixtures"][1:]]   # the model is loaded
        assert max(later) <= 1000, f"{page}: {later} ms"
    assert not r["problems"], f"{page}: " + "\n".join(r["problems"])


@functools.cache
def _smollm2():
    from beforeqkv.pretrained import load_smollm2
    return load_smollm2()


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_live_explorer_refuses_bad_input_in_the_words_python_uses(live_report, page):
    from beforeqkv import i18n, live
    i18n.set_language("zh_CN" if page.startswith("zh/") else "en")
    try:
        for ex in live_report[page]["explorers"]:
            assert len(ex["bad"]) == len(BAD_INPUT[ex["kind"]])
            for text, status in ex["bad"]:
                with pytest.raises(ValueError) as err:
                    if ex["kind"] == "recall":
                        live.parse_pairs(text)
                    elif ex["kind"] == "rows":
                        live.parse_tokens(text, ex["spec"]["n_ctx"], ex["spec"]["d_vocab"])
                    elif ex["kind"] == "heads":
                        live.parse_sequence(text, ex["spec"]["names"], ex["spec"]["n_payloads"])
                    elif ex["kind"] == "nexttoken":
                        live.NextToken(_smollm2(), max_tokens=ex["spec"]["max_tokens"]).encode(text)
                    else:
                        live.encode_prompt(text, ex["spec"]["chars"], ex["spec"]["n_ctx"])
                assert status == str(err.value), f"{page}: {text!r}"
    finally:
        i18n.set_language(None)


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_live_explorer_works_by_touch_on_a_phone_and_by_keyboard(live_report, page):
    for ex in live_report[page]["explorers"]:
        phone = ex["phone"]
        assert phone["state"] == "ready", phone["status"]
        assert phone["width"] <= browser.PHONE, f"{page}: {phone['width']} px wide on a phone"
        keys = ex["keyboard"]
        assert keys["focused"] in ("SELECT", "TEXTAREA", "INPUT"), "Tab does not reach the explorer's first control"
        assert keys["state"] == "ready", keys["status"]


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_without_webassembly_the_live_explorer_says_so_and_the_figures_stay(live_report, page):
    from beforeqkv import i18n, live
    r = live_report[page]
    i18n.set_language("zh_CN" if page.startswith("zh/") else "en")
    try:
        said = live.Recall.words()["no_wasm"]
    finally:
        i18n.set_language(None)
    assert [s["state"] for s in r["no_wasm"]] == ["off"] and r["no_wasm"][0]["status"] == said
    assert r["no_wasm_static_figures"] >= 1
