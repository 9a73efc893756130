"""Static explorers for the published site: the controls as finite lists, drawn once.

Used by :func:`beforeqkv.widgets.explorer` when the book is built. The controls are
read the way ``ipywidgets.interactive`` reads them (without creating widgets, so no
widget state reaches the page), thinned to a bounded grid, and every setting's figure
is drawn once into a self-contained HTML component: inline PNGs and a few lines of
plain JavaScript that swap them. No kernel, no CDN.
"""
from __future__ import annotations

import base64
import hashlib
import html
import inspect
import io
import itertools
import json
import math
import os
import time
from dataclasses import dataclass
from numbers import Integral, Real

LOG_ENV = "BEFOREQKV_EXPLORER_LOG"    # optional file: one JSON line per static explorer


def _check(plot_fn, controls):
    if not callable(plot_fn):
        raise ValueError("plot_fn must be callable and return a matplotlib Figure")
    if not controls:
        raise ValueError("explorer() needs at least one control, e.g. n_pairs=(2, 32, 2)")


def _check_description(description):
    if description is not None and (not isinstance(description, str) or not description.strip()):
        raise ValueError("description must be a non-empty string saying what the figure shows")


def _describe(plot_fn, description):
    """The explorer's alt text: ``description``, else plot_fn's docstring summary, else its name."""
    if description:
        return " ".join(description.split())
    doc = (inspect.getdoc(plot_fn) or "").strip()
    if doc:
        return doc.split("\n\n")[0].replace("\n", " ").strip()
    return getattr(plot_fn, "__name__", "an explorer figure")


def _tr(text):
    """A word the explorer shows, in the language in force (_explorer_words.py lists the
    chapters' words for the catalog; any other word is shown as it is)."""
    from .i18n import tr
    return tr(text) if isinstance(text, str) and text.strip() else text


def _shown(control, text):
    """How a control's value is shown: translated, or quoted when it is a model's input (a
    sentence, a prompt: _explorer_words.DATA_CONTROLS), which stays as the model reads it."""
    from ._explorer_words import DATA_CONTROLS
    return f"“{text}”" if control.name in DATA_CONTROLS else _tr(text)


def _figure_or_raise(fig):
    if fig is None or not hasattr(fig, "savefig"):
        raise ValueError(f"plot_fn must return a matplotlib Figure, got {type(fig).__name__}")
    return fig



@dataclass
class _Control:
    name: str        # plot_fn's argument
    label: str       # what the reader sees
    kind: str        # "slider", "select", "checkbox" or "fixed"
    values: list     # every value the live control offers (in order)
    index: int       # the starting value's position in ``values``
    texts: list = None   # how each value is shown (default: formatted values)

    def __post_init__(self):
        if self.texts is None:
            self.texts = [_fmt(v) for v in self.values]


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _slider_values(lo, hi, step, value, log_base=None):
    if step is None or step <= 0:
        raise ValueError(f"slider step must be > 0, got {step!r}")
    n = int(math.floor((hi - lo) / step + 1e-9)) + 1
    ints = all(isinstance(x, Integral) for x in (lo, hi, step, value))
    values = [lo + i * step if ints else round(lo + i * step, 12) for i in range(n)]
    if log_base is not None:
        values = [round(log_base ** v, 12) for v in values]
        value = round(log_base ** value, 12) if not any(
            math.isclose(value, v) for v in values) else value
    near = [i for i, v in enumerate(values) if math.isclose(v, value, rel_tol=1e-9, abs_tol=1e-12)]
    if near:
        return values, near[0]
    values = sorted(values + [value])   # a starting value off the step grid stays offered
    return values, values.index(value)


def _from_tuple(abbrev, default):
    if len(abbrev) not in (2, 3) or not all(isinstance(x, Real) and not isinstance(x, bool)
                                            for x in abbrev):
        raise ValueError(f"a tuple control must be (lo, hi) or (lo, hi, step), got {abbrev!r}")
    lo, hi = abbrev[0], abbrev[1]
    ints = all(isinstance(x, Integral) for x in abbrev)
    step = abbrev[2] if len(abbrev) == 3 else (1 if ints else 0.1)
    if step <= 0 or hi < lo:
        raise ValueError(f"bad slider {abbrev!r}: need lo <= hi and step > 0")
    if default is inspect.Parameter.empty or not isinstance(default, Real):
        value = lo + int((hi - lo) / 2 / step) * step       # ipywidgets: mid-range, on a step
        value = value if ints else round(value, 12)
    else:
        value = min(max(default, lo), hi)                   # ipywidgets clamps the default
    return lo, hi, step, value


def _control(name, abbrev, default) -> _Control:
    """The values a live ipywidgets control would offer, without creating a widget."""
    empty = inspect.Parameter.empty
    if type(abbrev).__name__ == "fixed" and hasattr(abbrev, "value"):
        return _Control(name, name, "fixed", [abbrev.value], 0)
    if hasattr(abbrev, "value") and hasattr(abbrev, "description"):   # a widget instance
        label = abbrev.description or name
        if hasattr(abbrev, "_options_values"):
            values = list(abbrev._options_values)
            return _Control(name, label, "select", values, values.index(abbrev.value),
                            [str(t) for t in abbrev._options_labels])
        if isinstance(abbrev.value, bool):
            return _Control(name, label, "checkbox", [False, True], int(abbrev.value))
        if all(hasattr(abbrev, a) for a in ("min", "max", "step")) and isinstance(abbrev.value, Real):
            base = getattr(abbrev, "base", None) if "Log" in type(abbrev).__name__ else None
            lo, hi, step = abbrev.min, abbrev.max, abbrev.step
            value = math.log(abbrev.value, base) if base else abbrev.value
            values, index = _slider_values(lo, hi, step, value, base)
            return _Control(name, label, "slider", values, index)
        return _Control(name, label, "fixed", [abbrev.value], 0)
    if isinstance(abbrev, tuple):
        lo, hi, step, value = _from_tuple(abbrev, default)
        values, index = _slider_values(lo, hi, step, value)
        return _Control(name, name, "slider", values, index)
    if isinstance(abbrev, bool):
        return _Control(name, name, "checkbox", [False, True], int(abbrev))
    if isinstance(abbrev, Real):                             # ipywidgets: -v .. 3v around v
        v = abbrev
        lo, hi = (v, v + 1) if v == 0 else ((-v, 3 * v) if v > 0 else (3 * v, -v))
        step = 1 if isinstance(v, Integral) else 0.1
        values, index = _slider_values(lo, hi, step, v)
        return _Control(name, name, "slider", values, index)
    if isinstance(abbrev, str):
        return _Control(name, name, "fixed", [abbrev], 0)
    if isinstance(abbrev, dict):
        options = list(abbrev.items())
    elif hasattr(abbrev, "__iter__"):
        options = [o if isinstance(o, tuple) and len(o) == 2 else (str(o), o) for o in abbrev]
    else:
        raise ValueError(f"control {name}={abbrev!r}: use (lo, hi, step), a list, a bool or a widget")
    if not options:
        raise ValueError(f"control {name} has no options")
    values = [v for _, v in options]
    index = values.index(default) if default is not empty and default in values else 0
    return _Control(name, name, "select", values, index, [str(label) for label, _ in options])


def _pick(n, start, k):
    """k of n positions, evenly spread, always including ``start`` (and the ends if k >= 3)."""
    if k >= n:
        return list(range(n))
    if k == 1:
        return [start]
    chosen = {round(i * (n - 1) / (k - 1)) for i in range(k)}
    if start not in chosen:
        inner = [i for i in chosen if i not in (0, n - 1)] or sorted(chosen)
        chosen.discard(min(inner, key=lambda i: abs(i - start)))
        chosen.add(start)
    return sorted(chosen)


def _budget(controls, max_figures):
    """How many values each control keeps: sliders are thinned first, the longest first."""
    counts = [len(c.values) for c in controls]
    for kinds in (("slider",), ("select", "checkbox")):
        while math.prod(counts) > max_figures:
            options = [i for i, c in enumerate(controls) if c.kind in kinds and counts[i] > 1]
            if not options:
                break
            counts[max(options, key=lambda i: counts[i])] -= 1
    return counts


def _png(fig) -> bytes:
    """The figure as plot.enable_notebook_display shows it, as a 256-colour PNG (~3x smaller)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with matplotlib
        return buf.getvalue()
    image = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    out = io.BytesIO()
    image.quantize(256, method=Image.Quantize.FASTOCTREE).save(out, format="PNG")
    return out.getvalue()


class StaticExplorer:
    """A grid of precomputed figures with controls that swap them (``_repr_html_``)."""

    def __init__(self, plot_fn, controls, max_figures, description=None):
        _check(plot_fn, controls)
        _check_description(description)
        if not isinstance(max_figures, Integral) or max_figures < 1:
            raise ValueError(f"max_figures must be a positive int, got {max_figures!r}")
        params = inspect.signature(plot_fn).parameters
        unknown = [n for n in controls if n not in params and not any(
            p.kind == p.VAR_KEYWORD for p in params.values())]
        if unknown:
            raise ValueError(f"{getattr(plot_fn, '__name__', 'plot_fn')} has no argument {unknown}")
        full = [_control(n, a, params[n].default if n in params else inspect.Parameter.empty)
                for n, a in controls.items()]
        self.name = getattr(plot_fn, "__name__", "plot_fn")
        self.description = _tr(_describe(plot_fn, description))
        self.full_sizes = [len(c.values) for c in full]
        counts = _budget(full, max_figures)
        self.controls = []
        for c, k in zip(full, counts):
            keep = _pick(len(c.values), c.index, k)
            self.controls.append(_Control(c.name, _tr(c.label), c.kind if len(keep) > 1 else "fixed",
                                          [c.values[i] for i in keep], keep.index(c.index),
                                          [_shown(c, c.texts[i]) for i in keep]))
        t0 = time.perf_counter()
        self.images, self.frames, seen = [], [], {}
        for combo in itertools.product(*[c.values for c in self.controls]):
            png = _png(_figure_or_raise(plot_fn(**dict(zip(controls, combo)))))
            if png not in seen:
                seen[png] = len(self.images)
                self.images.append(png)
            self.frames.append(seen[png])
        self.seconds = time.perf_counter() - t0
        digest = hashlib.sha1(b"".join(self.images) + repr(self.frames).encode()).hexdigest()
        self.id = f"bqkv-explorer-{digest[:12]}"
        self._log()

    @property
    def sizes(self):
        return [len(c.values) for c in self.controls]

    @property
    def start(self):
        """The flat index of the starting setting (plot_fn's defaults)."""
        flat = 0
        for c in self.controls:
            flat = flat * len(c.values) + c.index
        return flat

    def frame(self, **values) -> bytes:
        """The PNG shown for one setting (each value must be one the controls offer)."""
        flat = 0
        for c in self.controls:
            v = values.get(c.name, c.values[c.index])
            if v not in c.values:
                raise ValueError(f"{c.name}={v!r} is not offered; offered: {c.values}")
            flat = flat * len(c.values) + c.values.index(v)
        return self.images[self.frames[flat]]

    def note(self):
        total = math.prod(self.full_sizes)
        drawn = math.prod(self.sizes)
        from .i18n import _
        if drawn == total:
            return _("All {total} settings were drawn when the book was built; "
                     "in Jupyter or Colab this explorer redraws live.").format(total=f"{total:,}")
        thinned = "; ".join(f"{c.label}: {', '.join(c.texts)}" for c, n in
                            zip(self.controls, self.full_sizes) if len(c.values) < n)
        return _("On this page: {drawn} of {total} settings, drawn when the book was "
                 "built ({thinned}). Open the notebook in Jupyter or Colab to try every value.").format(
                     drawn=f"{drawn:,}", total=f"{total:,}", thinned=thinned)

    def _controls_html(self):
        out = []
        for k, c in enumerate(self.controls):
            label = html.escape(c.label)
            texts = [html.escape(t) for t in c.texts]
            if c.kind == "fixed":
                out.append(f'<span class="bqkv-fixed">{label} = {texts[0]}</span>')
            elif c.kind == "checkbox":
                checked = " checked" if c.values[c.index] else ""
                out.append(f'<label><input type="checkbox" data-k="{k}"{checked} disabled> '
                           f'{label}</label>')
            elif c.kind == "select":
                opts = "".join(f'<option value="{i}"{" selected" if i == c.index else ""}>{t}'
                               f"</option>" for i, t in enumerate(texts))
                out.append(f'<label>{label} <select data-k="{k}" disabled>{opts}</select></label>')
            else:
                out.append(f'<label>{label} <input type="range" data-k="{k}" min="0" '
                           f'max="{len(texts) - 1}" step="1" value="{c.index}" disabled> '
                           f'<output data-out="{k}">{texts[c.index]}</output></label>')
        return "\n".join(out)

    def _repr_html_(self):
        uris = ["data:image/png;base64," + base64.b64encode(b).decode("ascii") for b in self.images]
        data = {"sizes": self.sizes, "frames": self.frames, "images": uris,
                "names": [c.label for c in self.controls],
                "labels": [c.texts for c in self.controls], "alt": self.description}
        payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
        start = self.frames[self.start]
        alt = ", ".join(f"{c.label} = {c.texts[c.index]}" for c in self.controls)
        return _TEMPLATE.format(
            id=self.id, controls=self._controls_html(), src=uris[start],
            alt=html.escape(f"{self.description} ({alt})"), note=html.escape(self.note()),
            data=payload, n=len(self.frames))

    def __repr__(self):
        return (f"<StaticExplorer {self.name}: {len(self.frames)} settings, "
                f"{len(self.images)} distinct figures>")

    def _log(self):
        path = os.environ.get(LOG_ENV)
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"plot_fn": self.name, "settings": len(self.frames),
                                    "full_grid": math.prod(self.full_sizes),
                                    "images": len(self.images), "seconds": round(self.seconds, 2),
                                    "png_bytes": sum(map(len, self.images))}) + "\n")


_TEMPLATE = """<div class="bqkv-explorer" id="{id}" data-settings="{n}" \
style="border:1px solid #ccc;border-radius:4px;padding:6px 8px;margin:0.5em 0;width:fit-content;\
max-width:100%;box-sizing:border-box">
<div class="bqkv-controls" style="display:flex;flex-wrap:wrap;gap:4px 18px;align-items:center;\
font-size:0.9em;margin-bottom:4px">
{controls}
</div>
<img class="bqkv-figure" src="{src}" alt="{alt}" style="max-width:100%;height:auto;display:block">
<p class="bqkv-note" style="font-size:0.8em;color:#555;margin:4px 0 0 0">{note}</p>
<script type="application/json" class="bqkv-data">{data}</script>
<script>
(function () {{
  var root = document.getElementById("{id}");
  if (!root) return;
  var d = JSON.parse(root.querySelector("script.bqkv-data").textContent);
  var img = root.querySelector("img.bqkv-figure");
  function update() {{
    var flat = 0, parts = [];
    for (var k = 0; k < d.sizes.length; k++) {{
      var el = root.querySelector('[data-k="' + k + '"]'), i = 0;
      if (el) i = el.type === "checkbox" ? (el.checked ? 1 : 0) : parseInt(el.value, 10);
      flat = flat * d.sizes[k] + i;
      var out = root.querySelector('[data-out="' + k + '"]');
      if (out) out.textContent = d.labels[k][i];
      parts.push(d.names[k] + " = " + d.labels[k][i]);
    }}
    img.src = d.images[d.frames[flat]];
    img.alt = d.alt + " (" + parts.join(", ") + ")";
    root.setAttribute("data-state", String(flat));
  }}
  var els = root.querySelectorAll("[data-k]");
  for (var j = 0; j < els.length; j++) {{
    els[j].disabled = false;
    els[j].addEventListener("input", update);
    els[j].addEventListener("change", update);
  }}
  update();
}})();
</script>
</div>"""
