"""Open every page of the built site in headless Chromium, offline, and report what a reader meets.

    python tools/browser.py _build/html [_build/screenshots]

Drives Debian's Chromium (find_chromium) with Playwright's sync API; Playwright's own browser
builds are not used. The site is served from 127.0.0.1 and every request for another host is
aborted (a route) and reported, as are console errors, uncaught exceptions, failed requests
and HTTP errors. For each page it records: maths (MathJax output, raw TeX left over), images
that did not load, code cells wider than their box at 1280 px, whether each explorer's
figure changes when a control moves, the contrast of the explorers' labels and controls in
the light and the dark theme, tracebacks; and saves desktop (1280) and phone (390)
screenshots. tests/test_browser.py asserts on this report; `make test-site` runs it.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urljoin

from playwright.sync_api import sync_playwright

DESKTOP, PHONE = 1280, 390
MAX_SHOT_HEIGHT = 16000          # px; longer pages are cut (Chromium's texture limit)
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Any http(s) URL whose host is not 127.0.0.1 (matched inside Playwright's driver, so local
# requests never wait on Python; data: URLs, which the explorers use, are not requests). A
# route turns Chromium's cache off: every page loads in full, ~0.3 s more than with a cache.
ELSEWHERE = re.compile(r"^https?://(?!127\.0\.0\.1(?:[:/]|$))")


def find_chromium():
    env = os.environ.get("CHROMIUM")
    if env:
        return env
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    """Serve ``root`` on 127.0.0.1 (a free port) from a daemon thread; return (server, base URL)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# What a reader's browser is asked, once the page has loaded.
_SETTLE = """(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await document.fonts.ready;
  await new Promise(r => setTimeout(r, 200));
  return true;
})()"""

_INSPECT = r"""(() => {
  const skip = el => el.closest('pre, code, script, style, .highlight, mjx-container, textarea');
  const raw = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const n = walker.currentNode, t = n.nodeValue;
    if (!n.parentElement || skip(n.parentElement)) continue;
    if (/\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\frac|\\mathrm/.test(t)) raw.push(t.trim().slice(0, 80));
  }
  const images = [...document.images].map(i => ({src: i.getAttribute('src').slice(0, 80),
      ok: i.complete && i.naturalWidth > 0}));
  const code = [...document.querySelectorAll('div.cell_input pre, div.cell .highlight pre')];
  const seen = new Set(), wide = [];
  for (const pre of code) {
    if (seen.has(pre)) continue; seen.add(pre);
    if (!pre.offsetParent) continue;                    // hidden (folded) cells do not count
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const longest = Math.max(...pre.textContent.split('\n').map(l => l.length));
      wide.push({longest, first: pre.textContent.split('\n')[0].slice(0, 60)});
    }
  }
  const text = document.body.innerText;
  return {
    title: document.title,
    math_elements: document.querySelectorAll('.math, span.math, div.math').length,
    mathjax: document.querySelectorAll('mjx-container').length,
    math_errors: document.querySelectorAll('mjx-merror').length,
    raw_tex: raw,
    images: images,
    code_cells: code.length,
    overflowing_code: wide,
    page_width: document.documentElement.scrollWidth,
    view_width: document.documentElement.clientWidth,
    traceback: /Traceback \(most recent call last\)/.test(text),
    widget_views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    explorers: document.querySelectorAll('.bqkv-explorer').length,
    search_inputs: [...document.querySelectorAll('input[type="search"], input[name="q"]')]
        .filter(e => e.offsetParent).length,
  };
})()"""

# Move every control of every explorer to each other value; record whether the figure changes
# and whether the shown value text matches the state the figure was drawn for.
_EXPLORE = r"""(() => {
  const out = [];
  for (const root of document.querySelectorAll('.bqkv-explorer')) {
    const img = root.querySelector('img.bqkv-figure');
    const d = JSON.parse(root.querySelector('script.bqkv-data').textContent);
    const controls = [...root.querySelectorAll('[data-k]')];
    const res = {id: root.id, controls: [], enabled: controls.every(c => !c.disabled),
                 settings: d.frames.length};
    for (const el of controls) {
      const k = +el.dataset.k, before = img.src, start = el.type === 'checkbox' ? el.checked : el.value;
      const values = el.type === 'checkbox' ? [!el.checked]
          : [...Array(d.sizes[k]).keys()].map(String).filter(v => v !== el.value);
      let changed = 0, consistent = true;
      for (const v of values) {
        if (el.type === 'checkbox') el.checked = v; else el.value = v;
        el.dispatchEvent(new Event(el.tagName === 'SELECT' ? 'change' : 'input', {bubbles: true}));
        if (img.src !== before) changed += 1;
        const i = el.type === 'checkbox' ? (el.checked ? 1 : 0) : +el.value;
        const shown = root.querySelector('[data-out="' + k + '"]');
        if (shown && shown.textContent !== d.labels[k][i]) consistent = false;
        if (!img.alt.includes(d.names[k] + ' = ' + d.labels[k][i])) consistent = false;
      }
      if (el.type === 'checkbox') el.checked = start; else el.value = start;
      el.dispatchEvent(new Event('change', {bubbles: true}));
      res.controls.push({name: d.names[k], tried: values.length, changed, consistent,
                         back: img.src === before});
    }
    out.push(res);
  }
  return out;
})()"""


# The lowest WCAG contrast ratio of the explorers' text (labels, shown values, the note) and
# controls (dropdowns) in one colour theme. The caller emulates the system setting
# (prefers-color-scheme), which the theme follows in its "auto" mode; <html data-theme> is also
# set here, as the theme's own button sets it (and for a page without the theme's script).
# Colours are the computed ones.
_CONTRAST = r"""((theme) => {
  const html = document.documentElement, before = html.dataset.theme;
  html.dataset.theme = theme;
  const rgba = c => { const m = c.match(/[\d.]+/g).map(Number); return m.length > 3 ? m : [...m, 1]; };
  const lum = ([r, g, b]) => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = el => {          // the first ancestor (or itself) that paints a background
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0.5) return c;
    }
    return theme === 'dark' ? [0, 0, 0, 1] : [255, 255, 255, 1];
  };
  const out = [];
  for (const root of document.querySelectorAll('.bqkv-explorer')) {
    const els = root.querySelectorAll('.bqkv-controls label, .bqkv-controls output, ' +
        '.bqkv-controls select, .bqkv-controls option, .bqkv-fixed, .bqkv-note');
    for (const el of els) {
      const fg = rgba(getComputedStyle(el).color), bg = background(el);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      out.push({id: root.id, tag: el.tagName.toLowerCase(), text: el.textContent.trim().slice(0, 30),
                color: getComputedStyle(el).color, background: `rgb(${bg.slice(0, 3)})`,
                ratio: Math.round((a + 0.05) / (b + 0.05) * 100) / 100});
    }
  }
  if (before === undefined) delete html.dataset.theme; else html.dataset.theme = before;
  out.sort((x, y) => x.ratio - y.ratio);
  return out;
})"""

# The Previous / Next links at a page's foot: each hides what overflows it, so a title wider
# than the link cut its chevron off on a phone. Their class when their content overflows.
_CLIPPED = """() => [...document.querySelectorAll('.prev-next-area a')]
  .filter(a => a.scrollWidth > a.clientWidth + 1).map(a => a.className)"""


def _tab(context, base):
    """A page of ``context`` and the list that collects what goes wrong on it: console errors,
    uncaught exceptions, failed requests, HTTP errors and requests for any other host
    (aborted). One tab per context visits every page."""
    page = context.new_page()
    problems = []

    def block(route):
        problems.append(f"other host (blocked): {route.request.url}")
        route.abort("blockedbyclient")

    def console(msg):
        if msg.type in ("error", "assert"):
            where = msg.location.get("url", "").replace(base, "")
            problems.append(f"console: {msg.text}" + (f" ({where})" if where else ""))

    def failed(request):
        if request.failure != "net::ERR_ABORTED":          # cancelled, not failed
            problems.append(f"network: {request.failure} ({request.url.replace(base, '')})")

    def response(r):
        if r.status >= 400:
            problems.append(f"http {r.status}: {r.url.replace(base, '')}")

    page.route(ELSEWHERE, block)
    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(f"exception: {error.stack or error.message}"))
    page.on("requestfailed", failed)
    page.on("response", response)
    return page, problems


def _visit(tab, url):
    """Load ``url`` in ``tab`` = (page, problems) afresh and wait for it to settle (maths
    typeset, fonts in)."""
    page, problems = tab
    problems.clear()
    page.goto(url)
    page.evaluate(_SETTLE)
    return page


def _prefer(page, theme):
    """Emulate a system set to ``theme``; where the theme's script follows the system (its
    "auto" mode), wait until it has switched <html data-theme>."""
    page.emulate_media(color_scheme=theme)
    page.wait_for_function("t => document.documentElement.dataset.mode !== 'auto'"
                           " || document.documentElement.dataset.theme === t", arg=theme, timeout=10_000)


def _shoot(page, path, width):
    """The whole page, ``width`` px wide, cut at MAX_SHOT_HEIGHT."""
    page.screenshot(path=path, full_page=True,
                    clip={"x": 0, "y": 0, "width": width, "height": MAX_SHOT_HEIGHT})


def check_site(html_dir, shots_dir=None, pages=None):
    """Visit every page (or ``pages``, paths relative to html_dir); return {page: report}."""
    html_dir = Path(html_dir)
    pages = pages or sorted(  # every page but redirects (the root index.html)
        str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
        if not p.relative_to(html_dir).parts[0].startswith("_")
        and "http-equiv=\"refresh\"" not in p.read_text(encoding="utf-8", errors="replace")[:2000].lower())
    if shots_dir:
        Path(shots_dir).mkdir(parents=True, exist_ok=True)
    binary = find_chromium()
    if not binary:
        raise RuntimeError("no chromium found: apt-get install -y chromium")
    server, base = serve(html_dir)
    report = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=binary, headless=True)
            common = dict(device_scale_factor=1, color_scheme="light", service_workers="block")
            desktop = browser.new_context(viewport={"width": DESKTOP, "height": 900}, **common)
            phone = browser.new_context(viewport={"width": PHONE, "height": 800}, is_mobile=True,
                                        has_touch=True, **common)
            for context in (desktop, phone):
                context.set_default_timeout(60_000)
            desktop_tab, phone_tab = _tab(desktop, base), _tab(phone, base)
            for page in pages:
                stem = page[:-5].replace("/", "_")
                print(f"browser: {page}", file=sys.stderr, flush=True)
                t0 = time.monotonic()
                tab = _visit(desktop_tab, f"{base}/{page}")
                r = tab.evaluate(_INSPECT)
                r["explore"] = tab.evaluate(_EXPLORE) if r["explorers"] else []
                r["contrast"] = {"light": [], "dark": []}
                if r["explorers"]:                  # a light, then a dark system setting
                    r["contrast"]["light"] = tab.evaluate(_CONTRAST, "light")
                    _prefer(tab, "dark")
                    r["contrast"]["dark"] = tab.evaluate(_CONTRAST, "dark")
                    _prefer(tab, "light")
                if shots_dir:
                    _shoot(tab, Path(shots_dir) / f"{stem}-desktop.png", DESKTOP)
                    explorers = tab.locator(".bqkv-explorer")
                    for i in range(len(r["explore"])):
                        explorers.nth(i).screenshot(path=Path(shots_dir) / f"{stem}-explorer{i + 1}.png")
                tab = _visit(phone_tab, f"{base}/{page}")
                r["phone_page_width"] = tab.evaluate("document.documentElement.scrollWidth")
                r["phone_clipped_links"] = tab.evaluate(_CLIPPED)
                if shots_dir:
                    _shoot(tab, Path(shots_dir) / f"{stem}-phone.png", PHONE)
                r["problems"] = sorted(set(desktop_tab[1] + phone_tab[1]))
                r["seconds"] = round(time.monotonic() - t0, 1)
                report[page] = r
            browser.close()
    finally:
        server.shutdown()
    return report


# A live explorer (book/_static/bqkv-live.js): wait until the input just given has been run
# (every key of ``want`` is in its result), or refused.
_LIVE_DONE = """([i, want]) => {
  const box = document.querySelectorAll('.bqkv-live')[i], r = box.bqkvResult;
  if (box.dataset.state === 'error' || box.dataset.state === 'off') return true;
  return box.dataset.state === 'ready' && !!r && Object.keys(want).every(k => r[k] === want[k]);
}"""
_LIVE_STATE = """i => { const box = document.querySelectorAll('.bqkv-live')[i];
  return {state: box.dataset.state, result: box.bqkvResult || null,
          status: (box.querySelector('.bqkv-live-status') || {}).textContent || ''}; }"""
_LIVE_SETTLED = """i => ['ready', 'error'].includes(document.querySelectorAll('.bqkv-live')[i].dataset.state)"""
_SLIDE = """(el, value) => { el.value = String(value); el.dispatchEvent(new Event('input')); }"""
_LIVE_ASSETS = re.compile(r"/_static/(ort|live)/")
# Where the reader types: the pairs (chapter 1), the sequence (5, 6), the prompt (8, 11), the sentences (10)
TYPED = "input[type=text], textarea"


def _live_input(page, i, fixture):
    """Give live explorer ``i`` a fixture's input as a reader would (choose, slide, type), and
    read back what it computed: {state, result, status}. A prompt runs at temperature 0 for
    the fixture's greedy continuation."""
    box = page.locator(".bqkv-live").nth(i)
    if "pairs" in fixture:                            # chapter 1: a model, a query, the pairs
        box.locator("select").select_option(str(fixture["n"]))
        box.locator("input[type=number]").fill(str(fixture["query"]))
        box.locator("input[type=text]").fill(fixture["pairs"])
        want = {k: fixture[k] for k in ("n", "pairs", "query")}
    elif "tokens" in fixture:                         # chapter 4: a query position, the tokens
        box.locator("input[type=range]").evaluate(_SLIDE, fixture["query"])
        box.locator("input[type=text]").fill(fixture["tokens"])
        want = {k: fixture[k] for k in ("tokens", "query")}
    elif "sequence" in fixture:                       # chapters 5 and 6: a model, a sequence
        box.locator("select").select_option(fixture["model"])
        box.locator("input[type=text]").fill(fixture["sequence"])
        want = {k: fixture[k] for k in ("model", "sequence")}
    elif "position" in fixture:                       # chapter 2: a width, the scale's slider
        box.locator("select").select_option(str(fixture["d_k"]))
        box.locator("input[type=range]").evaluate(_SLIDE, fixture["position"])
        want = {k: fixture[k] for k in ("d_k", "position")}
    elif "log2_d" in fixture:                         # chapter 7: a width, the scale, a draw
        sliders = box.locator("input[type=range]")
        sliders.nth(0).evaluate(_SLIDE, fixture["log2_d"])
        sliders.nth(1).evaluate(_SLIDE, fixture["seed"])
        box.locator("input[type=checkbox]").set_checked(fixture["scaled"])
        want = {k: fixture[k] for k in ("log2_d", "scaled", "seed")}
    elif "memory" in fixture:                         # chapter 9: a memory, two facts, a blend
        box.locator("select").select_option(fixture["memory"])
        sliders = box.locator("input[type=range]")
        for k, key in enumerate(("a", "b", "t")):
            sliders.nth(k).evaluate(_SLIDE, fixture[key])
        want = {k: fixture[k] for k in ("memory", "a", "b", "t")}
    elif "first" in fixture:                          # chapter 10: two sentences, a layer
        box.locator("select").first.select_option(str(spec_layer(page, i)))
        texts = box.locator("input[type=text]")
        texts.nth(0).fill(fixture["first"]["text"])
        texts.nth(1).fill(fixture["second"]["text"])
        want = {"first": fixture["first"]["text"], "second": fixture["second"]["text"]}
    elif "top" in fixture:                            # chapter 11: a prompt
        box.locator("textarea").fill(fixture["prompt"])
        want = {"prompt": fixture["prompt"]}
    else:                                             # chapter 8: temperature, length, prompt
        sliders = box.locator("input[type=range]")
        sliders.nth(0).evaluate(_SLIDE, 0)
        sliders.nth(1).evaluate(_SLIDE, len(fixture["greedy"]))
        box.locator("textarea").fill(fixture["prompt"])
        want = {"prompt": fixture["prompt"], "temperature": 0, "n_chars": len(fixture["greedy"])}
    page.wait_for_function(_LIVE_DONE, arg=[i, want], timeout=60_000)
    return page.evaluate(_LIVE_STATE, i)


def spec_layer(page, i):
    """The layer a chapter 10 explorer starts at (its fixtures hold that layer's weights)."""
    return page.evaluate("i => JSON.parse(document.querySelectorAll('.bqkv-live')[i]"
                         ".querySelector('script.bqkv-live-spec').textContent).layer", i)


def _stem(page):
    return page[:-5].replace("/", "_")


def check_live(html_dir, page, bad_inputs=None, shots_dir=None):
    """Every live explorer on ``page``, in headless Chromium as a reader uses it.

    ``bad_inputs``: {kind: [typed texts the explorer must refuse]}. Returns {"before":
    requests for the runtime or a model before any touch, "bytes_before", "bytes_after":
    what the page fetched before and after using the explorers, "first_touch_s": [seconds
    from the first touch (by the keyboard: Tab into the explorer, then a key) to the first
    answer, per explorer], "seconds": {phase: seconds}, "explorers": [{"kind",
    "fixtures": [(fixture, {state, result, status})], "bad": [(input, status)], "phone":
    {state, result, status, width}, "keyboard": {..., focused}}], "no_wasm": [state per
    explorer], "no_wasm_static_figures", "problems": [...]}. The fixtures are the PyTorch
    outputs the execution wrote beside each model (_static/live/NAME.json). Screenshots of
    each explorer in use (1280 and 390 px) go to ``shots_dir``.
    """
    return check_live_pages(html_dir, [page], bad_inputs, shots_dir)[page]


def check_live_pages(html_dir, pages, bad_inputs=None, shots_dir=None) -> dict:
    """:func:`check_live` for every page of ``pages``, in one browser: {page: report}."""
    html_dir, bad_inputs = Path(html_dir), bad_inputs or {}
    binary = find_chromium()
    if not binary:
        raise RuntimeError("no chromium found: apt-get install -y chromium")
    if shots_dir:
        Path(shots_dir).mkdir(parents=True, exist_ok=True)
    server, base = serve(html_dir)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=binary, headless=True)
            reports = {page: _live_page(browser, base, html_dir, page, bad_inputs, shots_dir) for page in pages}
            browser.close()
    finally:
        server.shutdown()
    return reports


def _live_page(browser, base, html_dir, page, bad_inputs, shots_dir) -> dict:
    """One page's live explorers, each phase (desktop, phone, keyboard, no WebAssembly) in a
    fresh browser context of its own, closed when the page is done."""
    import json
    out = {"explorers": [], "problems": [], "first_touch_s": [], "seconds": {}}
    t0, contexts = time.monotonic(), []

    def context(**options):
        made = browser.new_context(**options)
        contexts.append(made)
        return made
    tab = _tab(context(viewport={"width": DESKTOP, "height": 900}), base)
    fetched = []
    tab[0].on("requestfinished", lambda r: fetched.append((r.url, r.sizes()["responseBodySize"])))
    page_ = _visit(tab, f"{base}/{page}")
    out["before"] = [u for u, _ in fetched if _LIVE_ASSETS.search(u)]
    out["bytes_before"] = sum(n for _, n in fetched)
    boxes = page_.locator(".bqkv-live")
    # the first touch, by the keyboard alone: Tab into the explorer's first control (the runtime
    # and the model load), then change it by key
    for i in range(boxes.count()):
        page_.evaluate("i => { const b = document.querySelectorAll('.bqkv-live')[i];"
                       " const t = document.createElement('a'); t.href = '#';"
                       " b.parentNode.insertBefore(t, b); t.focus(); }", i)
        touched = time.monotonic()
        page_.keyboard.press("Tab")
        focused = page_.evaluate("document.activeElement.tagName")
        page_.keyboard.press("ArrowUp" if focused == "SELECT" else "End")
        if focused != "SELECT":
            page_.keyboard.type(" ")     # a space: valid in every typed input
        page_.wait_for_function(_LIVE_SETTLED, arg=i, timeout=60_000)
        out["first_touch_s"].append(round(time.monotonic() - touched, 2))
        keyboard = page_.evaluate(_LIVE_STATE, i)
        keyboard["focused"] = focused
        out["explorers"].append({"keyboard": keyboard})
    here = page_.evaluate("document.documentElement.dataset.content_root")
    for i in range(boxes.count()):
        kind = boxes.nth(i).get_attribute("data-kind")
        spec = json.loads(boxes.nth(i).locator("script.bqkv-live-spec").text_content())
        where = urljoin(page, f"{here}_static/live/{spec['name']}.json")
        fixtures = json.loads((html_dir / where).read_text("utf-8"))["fixtures"]
        ran = [(f, _live_input(page_, i, f)) for f in fixtures]
        bad = []
        for text in bad_inputs.get(kind, ()):
            boxes.nth(i).locator(TYPED).first.fill(text)
            page_.wait_for_function("i => document.querySelectorAll('.bqkv-live')[i]"
                                    ".dataset.state === 'error'", arg=i, timeout=10_000)
            bad.append((text, page_.evaluate(_LIVE_STATE, i)["status"]))
        out["explorers"][i].update(kind=kind, spec=spec, fixtures=ran, bad=bad)
        _live_input(page_, i, fixtures[0])
        if shots_dir:
            boxes.nth(i).screenshot(path=Path(shots_dir) / f"{_stem(page)}-live{i + 1}-desktop.png")
        if kind == "nexttoken":         # a click on the likeliest token appends it; the model reads on
            boxes.nth(i).locator(".bqkv-live-next button").first.click()
            page_.wait_for_function("([i, p]) => { const b = document.querySelectorAll('.bqkv-live')[i];"
                                    " return b.dataset.state === 'ready' && b.bqkvResult.prompt !== p; }",
                                    arg=[i, fixtures[0]["prompt"]], timeout=60_000)
            out["explorers"][i]["clicked"] = page_.evaluate(_LIVE_STATE, i)
    out["bytes_after"] = sum(n for _, n in fetched)
    out["problems"] += tab[1]
    out["seconds"]["desktop"], t0 = round(time.monotonic() - t0, 1), time.monotonic()
    # a phone: touch where the reader types, then type; the page stays as wide as the screen
    ptab = _tab(context(viewport={"width": PHONE, "height": 800}, is_mobile=True,
                                    has_touch=True), base)
    pp = _visit(ptab, f"{base}/{page}")
    for i in range(boxes.count()):
        pp.locator(".bqkv-live").nth(i).locator(f"{TYPED}, input[type=range]").first.tap()
        r = _live_input(pp, i, out["explorers"][i]["fixtures"][0][0])
        r["width"] = pp.evaluate("document.documentElement.scrollWidth")
        out["explorers"][i]["phone"] = r
        if shots_dir:
            pp.locator(".bqkv-live").nth(i).screenshot(
                path=Path(shots_dir) / f"{_stem(page)}-live{i + 1}-phone.png")
    out["problems"] += ptab[1]
    out["seconds"]["phone"], t0 = round(time.monotonic() - t0, 1), time.monotonic()
    # no WebAssembly: the explorer says so, and the precomputed figures stay
    off = context(viewport={"width": DESKTOP, "height": 900})
    off.add_init_script("delete window.WebAssembly;")
    otab = _tab(off, base)
    op = _visit(otab, f"{base}/{page}")
    out["no_wasm"] = [op.evaluate(_LIVE_STATE, i) for i in range(boxes.count())]
    out["no_wasm_static_figures"] = op.locator(".bqkv-explorer img.bqkv-figure").count()
    out["problems"] += otab[1]
    out["seconds"]["no_wasm"] = round(time.monotonic() - t0, 1)
    for made in contexts:
        made.close()
    return out


def main(argv):
    html = argv[1] if len(argv) > 1 else "_build/html"
    shots = argv[2] if len(argv) > 2 else None
    report = check_site(html, shots)
    for page, r in report.items():
        print(f"{page}: {r['mathjax']} maths, {len(r['raw_tex'])} raw TeX, "
              f"{sum(not i['ok'] for i in r['images'])}/{len(r['images'])} broken images, "
              f"{len(r['overflowing_code'])}/{r['code_cells']} wide code cells, "
              f"{r['explorers']} explorers, {len(r['problems'])} problems ({r['seconds']} s)")
        for p in r["problems"]:
            print("   ", p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
