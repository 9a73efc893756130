"""Open every page of the built site in headless Chromium, offline, and report what a reader meets.

    python tools/browser.py _build/html [_build/screenshots]

Talks the Chrome DevTools Protocol over a pipe (--remote-debugging-pipe: stdlib only, no
websocket client). The site is served from 127.0.0.1 and every other host is unresolvable
(--host-resolver-rules), so anything still fetched from a CDN fails and shows up as a
console/network error. For each page it records: maths (MathJax output, raw TeX left
over), images that did not load, console errors, exceptions and failed requests, code
cells wider than their box at 1280 px, whether each explorer's figure changes when a
control moves, the contrast of the explorers' labels and controls in the light and the dark
theme, tracebacks; and saves desktop (1280) and phone (390) screenshots.
tests/test_browser.py asserts on this report; `make test-site` runs it.
"""
from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DESKTOP, PHONE = 1280, 390
MAX_SHOT_HEIGHT = 16000          # px; longer pages are cut (Chromium's texture limit)
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium():
    env = os.environ.get("CHROMIUM")
    if env:
        return env
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Chromium:
    """A headless Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, binary=None, allow_host="127.0.0.1", timeout=60):
        binary = binary or find_chromium()
        if not binary:
            raise CDPError("no chromium found: apt-get install -y chromium")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="bqkv-chromium-")
        to_r, self._to_w = os.pipe()          # we write commands, Chromium reads fd 3
        self._from_r, from_w = os.pipe()      # Chromium writes fd 4, we read
        args = [binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
                "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--disable-background-networking", "--mute-audio",
                "--hide-scrollbars", "--disable-features=Translate,MediaRouter",
                f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {allow_host}",
                f"--user-data-dir={self.profile}", "about:blank"]
        # bash puts the pipes on fds 3 and 4 where Chromium expects them
        cmd = ["bash", "-c", f'exec "$@" 3<&{to_r} 4>&{from_w}', "chromium", *args]
        self.proc = subprocess.Popen(cmd, pass_fds=(to_r, from_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_r], [], [], left)
            if ready:
                chunk = os.read(self._from_r, 1 << 20)
                if not chunk:
                    raise CDPError("Chromium closed the pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, session=False, timeout=None, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._to_w, data):]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = len(self.events)
        while True:
            for m in self.events[seen:]:
                if m.get("method") == method:
                    return m
            seen = len(self.events)
            m = self._read_message(deadline)
            if "method" in m:
                self.events.append(m)

    def js(self, expression, timeout=None):
        r = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                      awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise CDPError(f"script failed: {r['exceptionDetails'].get('text')} "
                           f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def viewport(self, width, height=900, mobile=False):
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=mobile)

    def goto(self, url, timeout=None):
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def screenshot(self, path, clip=None):
        beyond = clip is None                 # a whole page; an element is scrolled into view
        if clip is None:
            h = min(int(self.js("document.documentElement.scrollHeight")), MAX_SHOT_HEIGHT)
            w = int(self.js("document.documentElement.clientWidth"))
            clip = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        shot = self.call("Page.captureScreenshot", session=True, timeout=120, format="png",
                         captureBeyondViewport=beyond, clip=clip)
        Path(path).write_bytes(base64.b64decode(shot["data"]))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_w, self._from_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


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
# controls (dropdowns) in one colour theme: the page's own theme switch, <html data-theme>, is
# set as the theme's button (or a dark system setting) sets it; colours are the computed ones.
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


def _problems(events, base):
    """Console errors, uncaught exceptions, failed requests (404s, blocked hosts)."""
    found = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append("console: " + " ".join(str(a.get("value", a.get("description", "")))
                                                for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            found.append("exception: " + (d.get("exception", {}).get("description") or d.get("text", "")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            found.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            found.append(f"network: {p.get('errorText')} ({p.get('type')})")
        elif m == "Network.responseReceived" and p.get("response", {}).get("status", 200) >= 400:
            found.append(f"http {p['response']['status']}: {p['response']['url'].replace(base, '')}")
    return sorted(set(found))


def check_site(html_dir, shots_dir=None, pages=None):
    """Visit every page (or ``pages``, paths relative to html_dir); return {page: report}."""
    html_dir = Path(html_dir)
    pages = pages or sorted(  # every page but redirects (the root index.html)
        str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
        if not p.relative_to(html_dir).parts[0].startswith("_")
        and "http-equiv=\"refresh\"" not in p.read_text(encoding="utf-8", errors="replace")[:2000].lower())
    if shots_dir:
        Path(shots_dir).mkdir(parents=True, exist_ok=True)
    server, base = serve(html_dir)
    browser = Chromium()
    report = {}
    try:
        for page in pages:
            stem = page[:-5].replace("/", "_")
            print(f"browser: {page}", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            browser.viewport(DESKTOP)
            browser.goto(f"{base}/{page}")
            browser.js(_SETTLE, timeout=60)
            r = browser.js(_INSPECT)
            r["explore"] = browser.js(_EXPLORE, timeout=60) if r["explorers"] else []
            r["contrast"] = {theme: browser.js(f"{_CONTRAST}({theme!r})") if r["explorers"] else []
                             for theme in ("light", "dark")}
            if shots_dir:
                browser.screenshot(Path(shots_dir) / f"{stem}-desktop.png")
                for i, _ in enumerate(r["explore"]):
                    rect = browser.js(f"(() => {{const e = document.querySelectorAll('.bqkv-explorer')"
                                      f"[{i}]; e.scrollIntoView(); const b = e.getBoundingClientRect();"
                                      f" return [b.x, b.y + scrollY, b.width, b.height]}})()")
                    browser.screenshot(Path(shots_dir) / f"{stem}-explorer{i + 1}.png",
                                       clip=dict(zip(("x", "y", "width", "height"), rect), scale=1))
            problems = _problems(browser.events, base)
            browser.viewport(PHONE, height=800, mobile=True)
            browser.goto(f"{base}/{page}")
            browser.js(_SETTLE, timeout=60)
            r["phone_page_width"] = browser.js("document.documentElement.scrollWidth")
            if shots_dir:
                browser.screenshot(Path(shots_dir) / f"{stem}-phone.png")
            r["problems"] = sorted(set(problems + _problems(browser.events, base)))
            r["seconds"] = round(time.monotonic() - t0, 1)
            report[page] = r
    finally:
        browser.close()
        server.shutdown()
    return report


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
