/* Live explorers (beforeqkv.live): a chapter's own trained model, run in the reader's browser.
 *
 * Each <div class="bqkv-live"> holds a JSON spec written when the book was executed. Nothing
 * is fetched until the reader touches the explorer; then onnxruntime-web (served by the site,
 * _static/ort/, single-threaded WebAssembly) and the chapter's ONNX model (_static/live/) load
 * once, and every change of input runs the model again. The last result is kept on the element
 * (el.bqkvResult) and its state in data-state: idle, loading, ready, error, off.
 * Nine kinds: "recall" (chapter 1: typed key:value pairs and a query), "crosstalk" (chapter 2:
 * recall against N at any softmax scale, from the chapter's stored random keys), "rows" (chapter 4: typed
 * tokens and a query position, each mixer's weights), "heads" (chapters 5
 * and 6: a typed sequence of item:payload tokens, every head's weights over it), "softmax"
 * (chapter 7: one random row's softmax at any width and draw, scaled or not), "slots"
 * (chapter 9: any fact's key, or a blend of two, read by a slot memory), "prompt"
 * (chapter 8: a typed prompt, continued by the character GPT) and "sentences" (chapter 10:
 * two typed sentences, read by an 8-bit MiniLM) and "nexttoken" (chapter 11: a typed prompt,
 * SmolLM2's likeliest next tokens). The input rules mirror beforeqkv.live;
 * tests/test_browser.py holds the numbers to PyTorch's.
 */
(function () {
  "use strict";
  var ORT_VERSION = "1.30.0";
  // the site's root as an absolute URL (onnxruntime resolves its paths from its own script)
  var root = new URL(document.documentElement.dataset.content_root ||
                     (window.DOCUMENTATION_OPTIONS && DOCUMENTATION_OPTIONS.URL_ROOT) || "./",
                     document.baseURI).href;
  // Files the Chinese edition reads from the English edition's copy, so that the site carries
  // one: tools/editions/share_static.py fills this table in the second edition's copy of the script.
  var SHARED = {};
  function asset(path) { return new URL((SHARED[path] || "") + "_static/" + path, root).href; }
  var runtime = null;         // a promise of the ort global
  var sessions = {};          // file -> promise of an InferenceSession

  function fill(text, values) {
    return text.replace(/\{(\w+)(!r)?\}/g, function (m, key, quoted) {
      if (!(key in values)) return m;
      return quoted ? "'" + values[key] + "'" : String(values[key]);
    });
  }

  function loadRuntime() {
    if (runtime) return runtime;
    runtime = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = asset("ort/ort.wasm.min.js");
      s.onload = function () {
        var ort = window.ort;
        if (!ort || ort.env.versions.common !== ORT_VERSION) {
          reject(new Error("onnxruntime-web " + ORT_VERSION + " did not load"));
          return;
        }
        ort.env.wasm.wasmPaths = {mjs: asset("ort/ort-wasm-simd-threaded.mjs"),
                                  wasm: asset("ort/ort-wasm-simd-threaded.wasm")};
        ort.env.wasm.numThreads = 1;   // no cross-origin isolation on a static host
        ort.env.wasm.proxy = false;
        resolve(ort);
      };
      s.onerror = function () { reject(new Error("could not fetch " + s.src)); };
      document.head.appendChild(s);
    });
    return runtime;
  }

  // run(file, function (ort) { return feeds; }): a promise of the outputs
  function run(file, feeds) {
    return loadRuntime().then(function (ort) {
      if (!sessions[file]) {
        sessions[file] = ort.InferenceSession.create(asset("live/" + file),
                                                     {executionProviders: ["wasm"]});
      }
      return sessions[file].then(function (s) { return s.run(feeds(ort)); });
    });
  }

  // A file of _static/live/ fetched once per page: read(response) gives its text or JSON,
  // make(that) what the explorer keeps (a vocabulary, a tokenizer).
  var files = {};
  function fetched(file, read, make) {
    if (!files[file]) {
      files[file] = fetch(asset("live/" + file)).then(function (r) {
        if (!r.ok) throw new Error("could not fetch " + file);
        return read(r);
      }).then(make);
    }
    return files[file];
  }

  function int64(list, dims, ort) {
    return new ort.Tensor("int64", BigInt64Array.from(list.map(function (x) { return BigInt(x); })), dims);
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var a in attrs) node.setAttribute(a, attrs[a]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    for (var a in attrs) node.setAttribute(a, attrs[a]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function labelled(text, control) {
    var label = el("label", {}, text + " ");
    label.appendChild(control);
    return label;
  }

  // A drop-down of values (shown as labels, or as the values), ``start`` chosen.
  function choose(values, labels, start, aria) {
    var s = el("select", {"aria-label": aria});
    values.forEach(function (v, k) {
      var o = el("option", {value: v}, String(labels ? labels[k] : v));
      if (v === start) o.selected = true;
      s.appendChild(o);
    });
    return s;
  }

  // A slider with its value shown beside it; onInput() after each move. {input, wrap}
  function slider(label, min, max, step, value, onInput) {
    var input = el("input", {type: "range", min: min, max: max, step: step, value: value, "aria-label": label});
    var shown = el("output", {}, String(value)), wrap = labelled(label, input);
    wrap.appendChild(shown);
    input.addEventListener("input", function () { shown.textContent = input.value; if (onInput) onInput(); });
    return {input: input, wrap: wrap};
  }

  // viridis at a few stops, linearly mixed: the colour map of the book's heatmaps
  var VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function colour(x) {
    var t = Math.max(0, Math.min(1, x)) * (VIRIDIS.length - 1), i = Math.min(Math.floor(t), VIRIDIS.length - 2);
    var f = t - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return "rgb(" + [0, 1, 2].map(function (c) { return Math.round(a[c] + f * (b[c] - a[c])); }).join(",") + ")";
  }

  function softmax(xs, temperature) {
    var t = temperature > 0 ? temperature : 1e-6;
    var m = Math.max.apply(null, xs), e = xs.map(function (x) { return Math.exp((x - m) / t); });
    var z = e.reduce(function (a, b) { return a + b; }, 0);
    return e.map(function (x) { return x / z; });
  }

  function argmax(xs) {
    var best = 0;
    for (var i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
    return best;
  }

  // mulberry32: a small seeded generator, so "seed" gives the same sample twice on a page
  function generator(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  /* ---------------------------------------------------------------- chapter 1: recall */

  // The rules of beforeqkv.live.parse_pairs; an Error whose message is in the page's words.
  function parsePairs(text, spec) {
    var e = spec.words.errors, keys = [], values = [];
    var items = text.replace(/,/g, " ").split(/\s+/).filter(Boolean);
    for (var i = 0; i < items.length; i++) {
      var m = /^(\d+):(\d+)$/.exec(items[i]);
      if (!m) throw new Error(fill(e.pair, {item: items[i]}));
      var k = parseInt(m[1], 10), v = parseInt(m[2], 10);
      if (k >= spec.n_keys || v >= spec.n_values) {
        throw new Error(fill(e.range, {item: items[i], k: spec.n_keys - 1, v: spec.n_values - 1}));
      }
      if (keys.indexOf(k) >= 0) throw new Error(fill(e.twice, {k: k}));
      keys.push(k); values.push(v);
    }
    if (!keys.length) throw new Error(e.empty);
    return {keys: keys, values: values};
  }

  // One row of cells, one per stored pair, its weight as colour and (when it fits) as a number.
  function drawRow(figure, spec, input, query, weights, logits) {
    var n = input.keys.length, cell = Math.max(9, Math.min(48, Math.floor(560 / n)));
    var width = n * cell + 2, height = cell + 20, small = cell < 30;
    var s = svg("svg", {viewBox: "0 0 " + width + " " + height, width: "100%", role: "img",
                        style: "max-width:" + width + "px;display:block"});
    s.appendChild(svg("title", {}, spec.words.weights + ": " +
                      weights.map(function (w) { return w.toFixed(2); }).join(", ")));
    for (var j = 0; j < n; j++) {
      var x = 1 + j * cell;
      s.appendChild(svg("rect", {x: x, y: 1, width: cell, height: cell, fill: colour(weights[j])}));
      if (!small) {
        s.appendChild(svg("text", {x: x + cell / 2, y: cell / 2 + 5, "text-anchor": "middle", "font-size": 11,
                                   fill: weights[j] > 0.6 ? "#000" : "#fff"}, weights[j].toFixed(2)));
        s.appendChild(svg("text", {x: x + cell / 2, y: cell + 14, "text-anchor": "middle", "font-size": 10,
                                   fill: "currentColor"}, input.keys[j] + ":" + input.values[j]));
      }
      if (input.keys[j] === query) {
        s.appendChild(svg("rect", {x: x + 1, y: 2, width: cell - 2, height: cell - 2, fill: "none",
                                   stroke: "red", "stroke-width": 2.5}));
      }
    }
    var probs = softmax(logits, 1), best = argmax(probs), at = input.keys.indexOf(query);
    var said = fill(spec.words.answer, {v: best, p: probs[best].toFixed(2),
                                        truth: at >= 0 ? fill(spec.words.truth, {v: input.values[at]})
                                                       : spec.words.absent});
    figure.replaceChildren(el("p", {"class": "bqkv-live-caption"}, spec.words.weights), s,
                           el("p", {"class": "bqkv-live-answer"}, said));
  }

  function recall(box, spec, panel, go) {
    var w = spec.words;
    var model = choose(spec.models, null, spec.start, w.model);
    var pairs = el("input", {type: "text", value: spec.pairs, size: 28, spellcheck: "false",
                             autocomplete: "off", "aria-label": w.pairs});
    var query = el("input", {type: "number", min: 0, max: spec.n_keys - 1, value: spec.query,
                             "aria-label": w.query, style: "width:4.5em"});
    var count = slider(w.count, 1, spec.n_keys, 1, 8).input;
    var random = el("button", {type: "button"}, w.random);
    panel.controls.append(labelled(w.model, model), labelled(w.pairs, pairs), labelled(w.query, query),
                          count.parentNode, random);
    function compute() {
      var input = parsePairs(pairs.value, spec), q = parseInt(query.value, 10);
      if (!(q >= 0 && q < spec.n_keys)) throw new Error(fill(w.errors.query, {k: spec.n_keys - 1}));
      var n = parseInt(model.value, 10), text = pairs.value;
      return run(spec.files[model.value], function (ort) {
        return {keys: int64(input.keys, [1, input.keys.length], ort),
                values: int64(input.values, [1, input.values.length], ort), query: int64([q], [1], ort)};
      }).then(function (out) {
        var weights = Array.from(out.weights.data), logits = Array.from(out.logits.data);
        return {draw: function () { drawRow(panel.figure, spec, input, q, weights, logits); },
                result: {n: n, pairs: text, query: q, weights: weights, logits: logits}};
      });
    }
    model.addEventListener("change", function () { go(compute); });
    pairs.addEventListener("input", function () { go(compute); });
    query.addEventListener("input", function () { go(compute); });
    random.addEventListener("click", function () {
      var keys = [], out = [], k;
      while (keys.length < parseInt(count.value, 10)) {
        k = Math.floor(Math.random() * spec.n_keys);
        if (keys.indexOf(k) < 0) keys.push(k);
      }
      keys.forEach(function (key) { out.push(key + ":" + Math.floor(Math.random() * spec.n_values)); });
      pairs.value = out.join(" ");
      query.value = keys[Math.floor(Math.random() * keys.length)];
      go(compute);
    });
    return {controls: [model, pairs, query, count, random], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 4: rows */

  // The rules of beforeqkv.live.parse_tokens; an Error whose message is in the page's words.
  function parseTokens(text, spec) {
    var e = spec.words.errors, tokens = [];
    text.replace(/,/g, " ").split(/\s+/).filter(Boolean).forEach(function (item) {
      if (!/^[0-9]+$/.test(item) || parseInt(item, 10) >= spec.d_vocab) {
        throw new Error(fill(e.token, {item: item, v: spec.d_vocab - 1}));
      }
      tokens.push(parseInt(item, 10));
    });
    if (tokens.length !== spec.n_ctx) throw new Error(fill(e.count, {t: spec.n_ctx, n: tokens.length}));
    return tokens;
  }

  var LINES = ["#1f77b4", "#d62728", "#2ca02c"];
  function drawRows(figure, spec, tokens, query, weights, logits) {
    var w = spec.words, t = spec.n_ctx, dx = 30, left = 30, top = 8, height = 150, width = left + t * dx + 6;
    var s = svg("svg", {viewBox: "0 0 " + width + " " + (height + 36), width: "100%", role: "img",
                        style: "max-width:" + width + "px;display:block"});
    s.appendChild(svg("title", {}, fill(w.row, {p: query, t: tokens[query]})));
    function y(v) { return top + (height - top) * (1 - v); }
    s.appendChild(svg("rect", {x: left + (query - 0.5) * dx + dx / 2, y: top, width: dx, height: height - top,
                               fill: "gold", "fill-opacity": 0.3}));
    [0, 0.5, 1].forEach(function (v) {
      s.appendChild(svg("line", {x1: left, x2: width - 6, y1: y(v), y2: y(v), stroke: "gray", "stroke-width": 0.4}));
      s.appendChild(svg("text", {x: left - 4, y: y(v) + 4, "text-anchor": "end", "font-size": 10, fill: "currentColor"},
                        String(v)));
    });
    tokens.forEach(function (tok, j) {
      s.appendChild(svg("text", {x: left + j * dx + dx / 2, y: height + 14, "text-anchor": "middle", "font-size": 11,
                                 fill: "currentColor"}, String(tok)));
    });
    var said = [];
    spec.mixers.forEach(function (m, k) {
      var row = weights.slice(k * t, (k + 1) * t), colour_ = LINES[k % LINES.length];
      s.appendChild(svg("polyline", {points: row.map(function (v, j) { return (left + j * dx + dx / 2) + "," + y(v); }).join(" "),
                                     fill: "none", stroke: colour_, "stroke-width": 2}));
      row.forEach(function (v, j) {
        s.appendChild(svg("circle", {cx: left + j * dx + dx / 2, cy: y(v), r: 2.5, fill: colour_}));
      });
      var a = argmax(logits.slice(k * spec.d_vocab, (k + 1) * spec.d_vocab));
      var item = el("span", {"class": "bqkv-live-key", style: "color:" + colour_}, "\u25cf ");
      var line = el("span", {}, fill(w.answer, {mixer: spec.labels[k], a: a}));
      said.push(item, line, document.createTextNode("  "));
    });
    var legend = el("p", {"class": "bqkv-live-answer"});
    legend.append.apply(legend, said);
    figure.replaceChildren(el("p", {"class": "bqkv-live-caption"}, fill(w.row, {p: query, t: tokens[query]})), s, legend);
  }

  function rows(box, spec, panel, go) {
    var w = spec.words;
    var text = el("input", {type: "text", value: spec.tokens, size: 40, spellcheck: "false", autocomplete: "off",
                            "aria-label": w.tokens});
    var q = slider(w.query, 0, spec.n_ctx - 1, 1, spec.query, function () { go(compute); }), query = q.input;
    var random = el("button", {type: "button"}, w.random);
    panel.controls.append(labelled(w.tokens, text), q.wrap, random);
    function compute() {
      var tokens = parseTokens(text.value, spec), p = parseInt(query.value, 10), typed = text.value;
      var weights = [], logits = [];
      var chain = Promise.resolve();
      spec.mixers.forEach(function (m) {
        chain = chain.then(function () {
          return run(spec.files[m], function (ort) {
            return {tokens: int64(tokens, [1, spec.n_ctx], ort), query: int64([p], [1], ort)};
          }).then(function (out) {
            weights = weights.concat(Array.from(out.weights.data));
            logits = logits.concat(Array.from(out.logits.data));
          });
        });
      });
      return chain.then(function () {
        return {draw: function () { drawRows(panel.figure, spec, tokens, p, weights, logits); },
                result: {tokens: typed, query: p, weights: weights, logits: logits}};
      });
    }
    text.addEventListener("input", function () { go(compute); });
    random.addEventListener("click", function () {
      var out = [];
      for (var j = 0; j < spec.n_ctx; j++) out.push(Math.floor(Math.random() * spec.d_vocab));
      text.value = out.join(" ");
      go(compute);
    });
    return {controls: [text, query, random], compute: compute};
  }

  /* ------------------------------------------------- chapters 5 and 6: heads over a sequence */

  // The rules of beforeqkv.live.parse_sequence; an Error whose message is in the page's words.
  function parseSequence(text, spec) {
    var e = spec.words.errors, names = spec.names, items = [], payloads = [];
    var a = names[0], z = names[names.length - 1];
    text.replace(/,/g, " ").split(/\s+/).filter(Boolean).forEach(function (token) {
      var at = token.lastIndexOf(":"), name = token.slice(0, Math.max(at, 0)), p = token.slice(at + 1);
      var id = names.indexOf(name);
      if (at < 0 || id < 0 || !/^[0-9]+$/.test(p)) throw new Error(fill(e.token, {token: token, a: a, z: z}));
      if (parseInt(p, 10) >= spec.n_payloads) throw new Error(fill(e.payload, {token: token, p: spec.n_payloads - 1}));
      if (items.indexOf(id) >= 0) throw new Error(fill(e.twice, {name: name}));
      items.push(id); payloads.push(parseInt(p, 10));
    });
    if (!items.length) throw new Error(fill(e.empty, {a: a}));
    return {items: items, payloads: payloads};
  }

  function drawHeads(figure, spec, label, input, r) {
    var w = spec.words, t = input.items.length, k = spec.marks.length, p = spec.n_payloads;
    var labels = input.items.map(function (id, i) { return spec.names[id] + ":" + input.payloads[i]; });
    var where = {}, right = 0, asked = 0;
    input.items.forEach(function (id, i) { where[id] = i; });
    // targets[i][m]: the position of the item query i must read for mark m (undefined: absent)
    var targets = input.items.map(function (id) { return spec.marks.map(function (m) { return where[m.target[id]]; }); });
    var guesses = input.items.map(function (id, i) {
      return spec.marks.map(function (m, j) {
        var g = argmax(r.logits.slice((i * k + j) * p, (i * k + j + 1) * p)), at = targets[i][j];
        if (at !== undefined) { asked += 1; if (g === input.payloads[at]) right += 1; }
        return {g: g, ok: at === undefined ? null : g === input.payloads[at]};
      });
    });
    var cell = Math.max(12, Math.min(34, Math.floor(300 / t))), pad = 34, font = Math.min(11, cell - 2);
    var maps = el("div", {"class": "bqkv-live-heads"});
    for (var h = 0; h < r.heads; h++) {
      var extra = h === 0 ? 16 + 22 * k : 0, width = pad + t * cell + extra, height = pad + t * cell;
      var map = svg("svg", {viewBox: "0 0 " + width + " " + height, width: "100%", role: "img",
                            style: "max-width:" + width + "px;display:block"});
      map.appendChild(svg("title", {}, fill(w.head, {label: label, h: h + 1})));
      for (var i = 0; i < t; i++) {
        map.appendChild(svg("text", {x: pad - 3, y: pad + i * cell + cell / 2 + 4, "text-anchor": "end",
                                     "font-size": font, fill: "currentColor"}, labels[i]));
        map.appendChild(svg("text", {"font-size": font, fill: "currentColor", "text-anchor": "start",
                                     transform: "translate(" + (pad + i * cell + cell / 2 + 4) + "," + (pad - 3) + ") rotate(-90)"},
                            labels[i]));
        for (var j = 0; j < t; j++) {
          map.appendChild(svg("rect", {x: pad + j * cell, y: pad + i * cell, width: cell, height: cell,
                                       fill: colour(r.weights[(h * t + i) * t + j])}));
        }
        targets[i].forEach(function (at, m) {
          if (at === undefined) return;
          var x = pad + at * cell, y = pad + i * cell;
          map.appendChild(svg("rect", {x: x + 1, y: y + 1, width: cell - 2, height: cell - 2, fill: "none",
                                       stroke: "red", "stroke-width": 2}));
          if (spec.marks[m].letter) {
            map.appendChild(svg("text", {x: x + cell / 2, y: y + cell / 2 + 4, "text-anchor": "middle",
                                         "font-size": font, fill: "red"}, spec.marks[m].letter));
          }
        });
        if (extra) {              // what the model predicts at this position, per mark
          guesses[i].forEach(function (g, m) {
            map.appendChild(svg("text", {x: pad + t * cell + 8 + 22 * m, y: pad + i * cell + cell / 2 + 4,
                                         "font-size": font, fill: g.ok === null ? "currentColor" : g.ok ? "#2a7d2a" : "#c62828"},
                                (spec.marks[m].letter ? spec.marks[m].letter : "") + g.g));
          });
        }
      }
      var fig = el("figure", {});
      fig.append(map, el("figcaption", {}, fill(w.head, {label: label, h: h + 1})));
      maps.appendChild(fig);
    }
    figure.replaceChildren(el("p", {"class": "bqkv-live-answer"}, fill(w.right, {r: right, n: asked})),
                           el("p", {"class": "bqkv-live-caption"}, w.heads), maps);
    return {right: right, asked: asked};
  }

  function heads(box, spec, panel, go) {
    var w = spec.words;
    var model = choose(spec.models, spec.labels, spec.start, w.model);
    var text = el("input", {type: "text", value: spec.sequence, size: 36, spellcheck: "false",
                            autocomplete: "off", "aria-label": w.sequence});
    var shuffle = el("button", {type: "button"}, w.shuffle);
    panel.controls.append(labelled(w.model, model), labelled(w.sequence, text), shuffle);
    function compute() {
      var input = parseSequence(text.value, spec), label = model.value, typed = text.value, t = input.items.length;
      return run(spec.files[label], function (ort) {
        return {items: int64(input.items, [1, t], ort), payloads: int64(input.payloads, [1, t], ort)};
      }).then(function (out) {
        var r = {logits: Array.from(out.logits.data), weights: Array.from(out.weights.data)};
        r.heads = r.weights.length / (t * t);
        var result = {model: label, sequence: typed, logits: r.logits, weights: r.weights};
        return {draw: function () {
          var said = drawHeads(panel.figure, spec, spec.labels[spec.models.indexOf(label)], input, r);
          result.right = said.right; result.asked = said.asked;
        }, result: result};
      });
    }
    model.addEventListener("change", function () { go(compute); });
    text.addEventListener("input", function () { go(compute); });
    shuffle.addEventListener("click", function () {   // the same tokens in a new order
      var tokens = text.value.replace(/,/g, " ").split(/\s+/).filter(Boolean);
      for (var i = tokens.length - 1; i > 0; i--) {
        var j = Math.floor(Math.random() * (i + 1)), x = tokens[i];
        tokens[i] = tokens[j]; tokens[j] = x;
      }
      text.value = tokens.join(" ");
      go(compute);
    });
    return {controls: [model, text, shuffle], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 9: slots */

  // One bar per value (a slot, a key), from zero (values may be negative); colourOf(v) per bar.
  // The scale reaches the largest value, or ``ceiling`` where given (weights: 1).
  function bars(values, title, colourOf, ceiling) {
    var n = values.length, w = 18, height = 120, top = 8;
    var hi = ceiling || Math.max(0, Math.max.apply(null, values)), lo = Math.min(0, Math.min.apply(null, values));
    var span = hi - lo || 1, zero = top + (height - 2 * top) * hi / span;
    var s = svg("svg", {viewBox: "0 0 " + (n * w + 8) + " " + (height + 14), width: "100%", role: "img",
                        style: "max-width:" + (n * w + 8) + "px;display:block"});
    s.appendChild(svg("title", {}, title + ": " + values.map(function (v) { return v.toFixed(2); }).join(", ")));
    values.forEach(function (v, u) {
      var h = (height - 2 * top) * Math.abs(v) / span;
      s.appendChild(svg("rect", {x: 4 + u * w + 2, y: v >= 0 ? zero - h : zero, width: w - 4, height: h,
                                 fill: colourOf(v)}));
      s.appendChild(svg("text", {x: 4 + u * w + w / 2, y: height + 11, "text-anchor": "middle", "font-size": 9,
                                 fill: "currentColor"}, String(u)));
    });
    s.appendChild(svg("line", {x1: 2, x2: n * w + 6, y1: zero, y2: zero, stroke: "gray", "stroke-width": 0.8}));
    return s;
  }

  function slots(box, spec, panel, go) {
    var w = spec.words, n = spec.target.length;
    var memory = choose(spec.memories, spec.labels, spec.start, w.memory);
    function again() { go(compute); }
    var a = slider(w.a, 0, n - 1, 1, spec.fact, again), b = slider(w.b, 0, n - 1, 1, spec.other, again);
    var t = slider(w.blend, 0, 1, 0.01, spec.blend, again);
    panel.controls.append(labelled(w.memory, memory), a.wrap, b.wrap, t.wrap);
    function compute() {
      var label = memory.value, fa = parseInt(a.input.value, 10), fb = parseInt(b.input.value, 10);
      var mix = parseFloat(t.input.value);
      return run(spec.files[label], function (ort) {
        return {a: int64([fa], [1], ort), b: int64([fb], [1], ort), t: new ort.Tensor("float32", Float32Array.from([mix]), [1])};
      }).then(function (out) {
        var weights = Array.from(out.weights.data), logits = Array.from(out.logits.data);
        var votes = Array.from(out.votes.data), classes = logits.length, c = spec.target[fa];
        var mine = weights.map(function (x, u) { return votes[u * classes + c]; });
        var probs = softmax(logits, 1), best = argmax(probs);
        return {draw: function () {
          panel.figure.replaceChildren(
            el("p", {"class": "bqkv-live-answer"}, fill(w.answer, {p: best, q: probs[best].toFixed(2), a: c, b: spec.target[fb]})),
            el("p", {"class": "bqkv-live-caption"}, w.weights),
            bars(weights, w.weights, function () { return "#1f77b4"; }),
            el("p", {"class": "bqkv-live-caption"}, w.votes),
            bars(mine, w.votes, function (v) { return v >= 0 ? "#2ca02c" : "#d62728"; }));
        }, result: {memory: label, a: fa, b: fb, t: mix, weights: weights, logits: logits, votes: votes}};
      });
    }
    memory.addEventListener("change", function () { go(compute); });
    return {controls: [memory, a.input, b.input, t.input], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 2: crosstalk */

  function g3(x) { return String(Number(x.toPrecision(3))); }     // 30.2, 0.372, 100

  // The chapter's figure: recall against N (log axis), the softmax read and the fixed memory,
  // a dotted line at N = d_k and a dashed one at chance.
  function drawCrosstalk(figure, spec, r) {
    var w = spec.words, W = 460, H = 270, L = 48, R = 12, T = 14, B = 40, n = spec.n_sweep;
    var lx = function (v) { return Math.log(v) / Math.LN2; }, x0 = lx(n[0]), x1 = lx(n[n.length - 1]);
    var x = function (v) { return L + (W - L - R) * (lx(v) - x0) / ((x1 - x0) || 1); };
    var y = function (v) { return H - B - (H - B - T) * v / 1.05; };
    var labels = [fill(w.soft, {s: g3(r.scale)}), fill(w.fixed, {d_k: r.d_k})];
    var s = svg("svg", {viewBox: "0 0 " + W + " " + H, width: "100%", role: "img", style: "max-width:" + W + "px;display:block"});
    s.appendChild(svg("title", {}, labels[0] + ": " + r.soft.map(function (v) { return v.toFixed(3); }).join(", ") +
                      "; " + labels[1] + ": " + r.fixed.map(function (v) { return v.toFixed(3); }).join(", ")));
    var axis = {stroke: "gray", "stroke-width": 0.8}, small = {"font-size": 10, fill: "currentColor"};
    s.appendChild(svg("line", Object.assign({x1: L, x2: W - R, y1: y(0), y2: y(0)}, axis)));
    s.appendChild(svg("line", Object.assign({x1: L, x2: L, y1: y(0), y2: T}, axis)));
    [0, 0.5, 1].forEach(function (v) {
      s.appendChild(svg("text", Object.assign({x: L - 4, y: y(v) + 3, "text-anchor": "end"}, small), String(v)));
    });
    n.forEach(function (v) {
      s.appendChild(svg("text", Object.assign({x: x(v), y: H - B + 13, "text-anchor": "middle"}, small), String(v)));
    });
    s.appendChild(svg("text", Object.assign({x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle"}, small), w.x));
    s.appendChild(svg("text", Object.assign({transform: "translate(11," + (H - B + T) / 2 + ") rotate(-90)",
                                             "text-anchor": "middle"}, small), w.y));
    s.appendChild(svg("line", {x1: L, x2: W - R, y1: y(spec.chance), y2: y(spec.chance), stroke: "gray",
                               "stroke-dasharray": "5 3", "stroke-width": 0.8}));
    if (r.d_k >= n[0] && r.d_k <= n[n.length - 1]) {
      s.appendChild(svg("line", {x1: x(r.d_k), x2: x(r.d_k), y1: y(0), y2: T, stroke: "gray",
                                 "stroke-dasharray": "1 3", "stroke-width": 1}));
    }
    [r.soft, r.fixed].forEach(function (curve, k) {
      var c = spec.colours[k];
      s.appendChild(svg("polyline", {points: curve.map(function (v, i) { return x(n[i]) + "," + y(v); }).join(" "),
                                     fill: "none", stroke: c, "stroke-width": 1.6}));
      curve.forEach(function (v, i) { s.appendChild(svg("circle", {cx: x(n[i]), cy: y(v), r: 3, fill: c})); });
    });
    var legend = el("p", {"class": "bqkv-live-caption"});
    labels.forEach(function (text, k) {
      var key = el("span", {}, "\u25CF ");
      key.style.color = spec.colours[k];
      legend.append(key, text, k ? "" : "   ");
    });
    figure.replaceChildren(el("p", {"class": "bqkv-live-answer"}, fill(w.figure, {d_k: r.d_k})), legend, s);
  }

  function crosstalk(box, spec, panel, go) {
    var w = spec.words;
    function again() { go(compute); }
    var width = choose(spec.widths, null, spec.start[0], w.d_k);
    var scale = slider(w.scale, 0, spec.positions, 1, spec.start[1], again), shown = scale.wrap.querySelector("output");
    panel.controls.append(labelled(w.d_k, width), scale.wrap);
    function scaleAt(p) { return spec.lo * Math.pow(10, p / spec.steps); }
    shown.textContent = g3(scaleAt(spec.start[1]));
    function compute() {
      var d = parseInt(width.value, 10), p = parseInt(scale.input.value, 10), sc = scaleAt(p);
      shown.textContent = g3(sc);
      return run(spec.files.model, function (ort) {
        return {width: int64([spec.widths.indexOf(d)], [1], ort), scale: new ort.Tensor("float32", Float32Array.from([sc]), [1])};
      }).then(function (out) {
        var r = {d_k: d, position: p, scale: sc, soft: Array.from(out.soft.data), fixed: Array.from(out.fixed.data)};
        return {draw: function () { drawCrosstalk(panel.figure, spec, r); }, result: r};
      });
    }
    width.addEventListener("change", again);
    return {controls: [width, scale.input], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 7: softmax row */

  // Python's "{:.1e}": 7.3e-05, not JavaScript's 7.3e-5
  function exp1(x) {
    return x.toExponential(1).replace(/e([+-])(\d)$/, "e$10$2");
  }

  function softmaxRow(box, spec, panel, go) {
    var w = spec.words;
    function again() { go(compute); }
    var k = slider(w.log2_d, spec.log2_d[0], spec.log2_d[1], 1, spec.start[0], again);
    var scaled = el("input", {type: "checkbox", "aria-label": w.scaled});
    scaled.checked = spec.start[1];
    var seed = slider(w.seed, spec.seeds[0], spec.seeds[1], 1, spec.start[2], again);
    panel.controls.append(k.wrap, labelled(w.scaled, scaled), seed.wrap);
    function compute() {
      var lk = parseInt(k.input.value, 10), sd = parseInt(seed.input.value, 10), sc = scaled.checked;
      return run(spec.files.model, function (ort) {
        return {log2_d: int64([lk], [1], ort), seed: int64([sd], [1], ort),
                scaled: new ort.Tensor("float32", Float32Array.from([sc ? 1 : 0]), [1])};
      }).then(function (out) {
        var weights = Array.from(out.weights.data), grad = out.grad.data[0];
        var title = fill(sc ? w.scaled_title : w.unscaled_title,
                         {d: Math.pow(2, lk), w: Math.max.apply(null, weights).toFixed(4), g: exp1(grad)});
        return {draw: function () {
          panel.figure.replaceChildren(el("p", {"class": "bqkv-live-answer"}, title),
                                       el("p", {"class": "bqkv-live-caption"}, w.weights),
                                       bars(weights, w.weights, function () { return spec.colours[sc ? 1 : 0]; }, 1));
        }, result: {log2_d: lk, scaled: sc, seed: sd, weights: weights, grad: grad, title: title}};
      });
    }
    scaled.addEventListener("change", again);
    return {controls: [k.input, scaled, seed.input], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 8: prompt */

  function encode(text, spec) {
    var e = spec.words.errors, unknown = [], ids = [];
    if (!text.length) throw new Error(e.empty);
    Array.from(text).forEach(function (c) {
      var i = spec.chars.indexOf(c);
      if (i < 0 && unknown.indexOf(c) < 0) unknown.push(c);
      ids.push(i);
    });
    if (unknown.length) {
      unknown.sort();
      throw new Error(fill(e.unknown, {chars: unknown.map(function (c) { return "'" + c + "'"; }).join(" ")}));
    }
    return ids.slice(-spec.n_ctx);
  }

  function forward(spec, ids) {
    return run(spec.files.model, function (ort) { return {tokens: int64(ids, [1, ids.length], ort)}; })
      .then(function (out) {
        var v = spec.chars.length, t = ids.length, logits = out.logits.data;
        var weights = [];
        for (var l = 0; l < spec.n_layers; l++) weights.push(Array.from(out["weights" + l].data));
        return {last: Array.from(logits.slice((t - 1) * v, t * v)), weights: weights};
      });
  }

  // Characters after the prompt, one forward pass each over the last n_ctx characters.
  // current(): false once a newer input has come, which stops this one.
  function continueText(spec, ids, n, temperature, seed, current) {
    var random = generator(seed), out = [];
    function step(context) {
      if (out.length >= n || !current()) return Promise.resolve(out.join(""));
      return forward(spec, context).then(function (r) {
        var next;
        if (temperature <= 0) next = argmax(r.last);
        else {
          var p = softmax(r.last, temperature), u = random(), acc = 0;
          next = p.length - 1;
          for (var i = 0; i < p.length; i++) { acc += p[i]; if (u < acc) { next = i; break; } }
        }
        out.push(spec.chars[next]);
        return step(context.concat([next]).slice(-spec.n_ctx));
      });
    }
    return step(ids);
  }

  var SHOWN = {" ": "\u2423", "\n": "\u21b5"};
  function drawPrompt(figure, spec, text, r, temperature, sample) {
    var w = spec.words, probs = softmax(r.last, temperature);
    var order = probs.map(function (p, i) { return i; }).sort(function (a, b) { return probs[b] - probs[a]; }).slice(0, 12);
    var bars = svg("svg", {viewBox: "0 0 360 130", width: "100%", role: "img", style: "max-width:360px;display:block"});
    bars.appendChild(svg("title", {}, w.next));
    order.forEach(function (i, k) {
      var h = 90 * probs[i] / probs[order[0]];
      bars.appendChild(svg("rect", {x: 4 + k * 30, y: 105 - h, width: 24, height: h, fill: "#1f77b4"}));
      bars.appendChild(svg("text", {x: 16 + k * 30, y: 120, "text-anchor": "middle", "font-size": 12,
                                    fill: "currentColor"}, SHOWN[spec.chars[i]] || spec.chars[i]));
      bars.appendChild(svg("text", {x: 16 + k * 30, y: 101 - h, "text-anchor": "middle", "font-size": 8,
                                    fill: "currentColor"}, probs[i].toFixed(2)));
    });
    var shownText = Array.from(text).slice(-spec.n_ctx), t = shownText.length, m = Math.min(spec.shown, t);
    var labels = shownText.slice(t - m).map(function (c) { return SHOWN[c] || c; });
    var heads = el("div", {"class": "bqkv-live-heads"});
    var cell = Math.max(4, Math.min(12, Math.floor(132 / m))), pad = cell >= 8 ? 12 : 0, size = m * cell + pad;
    for (var l = 0; l < spec.n_layers; l++) {
      for (var h = 0; h < spec.n_heads; h++) {
        var map = svg("svg", {viewBox: "0 0 " + size + " " + size, width: size, height: size, role: "img"});
        map.appendChild(svg("title", {}, fill(w.head, {l: l, h: h})));
        var a = r.weights[l], base = h * t * t;
        for (var i = t - m; i < t; i++) {
          var row = i - t + m;
          if (pad) {   // the characters: queries down the left, keys along the top
            map.appendChild(svg("text", {x: pad - 2, y: pad + row * cell + cell - 2, "text-anchor": "end",
                                         "font-size": cell - 1, fill: "currentColor"}, labels[row]));
            map.appendChild(svg("text", {x: pad + row * cell + cell / 2, y: pad - 2, "text-anchor": "middle",
                                         "font-size": cell - 1, fill: "currentColor"}, labels[row]));
          }
          for (var j = t - m; j <= i; j++) {
            map.appendChild(svg("rect", {x: pad + (j - t + m) * cell, y: pad + row * cell, width: cell,
                                         height: cell, fill: colour(a[base + i * t + j])}));
          }
        }
        var fig = el("figure", {});
        fig.append(map, el("figcaption", {}, fill(w.head, {l: l, h: h})));
        heads.appendChild(fig);
      }
    }
    figure.replaceChildren(el("p", {"class": "bqkv-live-caption"}, w.next), bars,
                           el("p", {"class": "bqkv-live-caption"}, w.sample),
                           el("pre", {"class": "bqkv-live-sample"}, text.slice(-80) + sample),
                           el("p", {"class": "bqkv-live-caption"}, w.heads), heads);
  }

  function prompt(box, spec, panel, go) {
    var w = spec.words;
    var text = el("textarea", {rows: 2, cols: 32, spellcheck: "false", "aria-label": w.prompt});
    text.value = spec.prompt;
    function redo() { go(compute); }
    var tSlider = slider(w.temperature, 0, 1.5, 0.01, spec.temperature, redo), temperature = tSlider.input;
    var lSlider = slider(w.length, 0, 300, 1, spec.n_chars, redo), length = lSlider.input;
    var again = el("button", {type: "button"}, w.again);
    var seed = 0;
    panel.controls.append(labelled(w.prompt, text), tSlider.wrap, lSlider.wrap, again);
    function compute(current) {
      var ids = encode(text.value, spec), t = parseFloat(temperature.value), n = parseInt(length.value, 10);
      var typed = text.value, s = seed;
      return forward(spec, ids).then(function (r) {
        return continueText(spec, ids, n, t, s, current).then(function (sample) {
          return {draw: function () { drawPrompt(panel.figure, spec, typed, r, t, sample); },
                  result: {prompt: typed, temperature: t, n_chars: n, seed: s, logits: r.last,
                           weights: r.weights, sample: sample}};
        });
      });
    }
    text.addEventListener("input", function () { go(compute); });
    again.addEventListener("click", function () { seed += 1; go(compute); });
    return {controls: [text, temperature, length, again], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 10: MiniLM */

  // beforeqkv.pretrained.wordpiece, line by line: clean, space CJK, strip accents, lowercase,
  // split on whitespace and punctuation, then greedy longest pieces ("##" after the first).
  var CJK = [[0x4E00, 0x9FFF], [0x3400, 0x4DBF], [0x20000, 0x2A6DF], [0x2A700, 0x2B73F],
             [0x2B740, 0x2B81F], [0x2B820, 0x2CEAF], [0xF900, 0xFAFF], [0x2F800, 0x2FA1F]];
  function isCjk(cp) { return CJK.some(function (r) { return cp >= r[0] && cp <= r[1]; }); }
  function isPunct(ch) {
    var cp = ch.codePointAt(0);
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
           (cp >= 123 && cp <= 126) || /^\p{P}$/u.test(ch);
  }
  function basicSplit(text) {
    var chars = [];
    Array.from(text).forEach(function (ch) {
      var cp = ch.codePointAt(0);
      if (cp === 0 || cp === 0xFFFD || ("\t\n\r".indexOf(ch) < 0 && /^\p{C}$/u.test(ch))) return;
      if (" \t\n\r".indexOf(ch) >= 0 || /^\p{Zs}$/u.test(ch)) chars.push(" ");
      else if (isCjk(cp)) chars.push(" " + ch + " ");
      else chars.push(ch);
    });
    var words = [];
    chars.join("").split(" ").filter(Boolean).forEach(function (word) {
      var current = [];
      Array.from(Array.from(word.normalize("NFD")).filter(function (ch) { return !/^\p{Mn}$/u.test(ch); })
        .map(function (ch) { return ch.toLowerCase(); }).join("")).forEach(function (ch) {
        if (isPunct(ch)) {
          if (current.length) { words.push(current.join("")); current = []; }
          words.push(ch);
        } else current.push(ch);
      });
      if (current.length) words.push(current.join(""));
    });
    return words;
  }
  function wordPieces(word, ids) {
    var chars = Array.from(word), pieces = [], start = 0;
    if (chars.length > 100) return ["[UNK]"];
    while (start < chars.length) {
      var end = chars.length, piece = null;
      while (end > start) {
        var p = (start === 0 ? "" : "##") + chars.slice(start, end).join("");
        if (ids.has(p)) { piece = p; break; }
        end -= 1;
      }
      if (piece === null) return ["[UNK]"];
      pieces.push(piece);
      start = end;
    }
    return pieces;
  }

  function vocab(file) {
    return fetched(file, function (r) { return r.text(); }, function (text) {
      var pieces = text.split("\n"), ids = new Map();
      if (pieces[pieces.length - 1] === "") pieces.pop();
      pieces.forEach(function (p, i) { ids.set(p, i); });
      return {pieces: pieces, ids: ids};
    });
  }

  function drawSentences(figure, spec, r, layer, head) {
    var w = spec.words, t = r.tokens.length, cell = Math.max(8, Math.min(22, Math.floor(420 / t)));
    var pad = 8 * Math.min(12, Math.max.apply(null, r.tokens.map(function (s) { return s.length; }))) * cell / 16 + 4;
    var size = pad + t * cell;
    var map = svg("svg", {viewBox: "0 0 " + size + " " + size, width: "100%", role: "img",
                          style: "max-width:" + size + "px;display:block"});
    map.appendChild(svg("title", {}, fill(w.map, {l: layer, h: head})));
    var a = r.weights, base = head * t * t, font = Math.min(12, cell - 1);
    for (var i = 0; i < t; i++) {
      map.appendChild(svg("text", {x: pad - 3, y: pad + i * cell + cell * 0.75, "text-anchor": "end",
                                   "font-size": font, fill: "currentColor"}, r.tokens[i]));
      map.appendChild(svg("text", {"font-size": font, fill: "currentColor", "text-anchor": "start",
                                   transform: "translate(" + (pad + i * cell + cell * 0.7) + "," + (pad - 3) + ") rotate(-90)"},
                          r.tokens[i]));
      for (var j = 0; j < t; j++) {
        map.appendChild(svg("rect", {x: pad + j * cell, y: pad + i * cell, width: cell, height: cell,
                                     fill: colour(a[base + i * t + j])}));
      }
    }
    figure.replaceChildren(el("p", {"class": "bqkv-live-answer"}, fill(w.cosine, {c: r.cosine.toFixed(3)})),
                           el("p", {"class": "bqkv-live-caption"}, fill(w.map, {l: layer, h: head})), map);
  }

  function sentences(box, spec, panel, go) {
    var w = spec.words;
    var first = el("input", {type: "text", value: spec.first, size: 40, "aria-label": w.first});
    var second = el("input", {type: "text", value: spec.second, size: 40, "aria-label": w.second});
    function upTo(n) { return Array.from({length: n}, function (x, i) { return i; }); }
    var layer = choose(upTo(spec.n_layers), null, spec.layer, w.layer);
    var head = choose(upTo(spec.n_heads), null, spec.head, w.head);
    panel.controls.append(labelled(w.first, first), labelled(w.second, second), labelled(w.layer, layer),
                          labelled(w.head, head));
    function encode(text, v) {
      var ids = [v.ids.get("[CLS]")];
      basicSplit(text).forEach(function (word) {
        wordPieces(word, v.ids).forEach(function (p) { ids.push(v.ids.get(p)); });
      });
      ids.push(v.ids.get("[SEP]"));
      if (ids.length > spec.max_length) {
        var err = new Error(fill(w.errors.long, {n: ids.length, m: spec.max_length}));
        err.input = true;                // the reader's input, refused in words
        throw err;
      }
      return ids;
    }
    function embed(ids) {
      return run(spec.files.model, function (ort) { return {ids: int64(ids, [1, ids.length], ort)}; });
    }
    function compute() {
      var a = first.value, b = second.value, l = parseInt(layer.value, 10), h = parseInt(head.value, 10);
      return vocab(spec.files.vocab).then(function (v) {
        var ids1 = encode(a, v), ids2 = encode(b, v);
        return embed(ids1).then(function (o1) {
          return embed(ids2).then(function (o2) {
            var e1 = Array.from(o1.embedding.data), e2 = Array.from(o2.embedding.data), c = 0;
            for (var k = 0; k < e1.length; k++) c += e1[k] * e2[k];
            var r = {first: a, second: b, layer: l, head: h, ids1: ids1, ids2: ids2, embedding1: e1,
                     embedding2: e2, cosine: c, weights: Array.from(o1["weights" + l].data),
                     tokens: ids1.map(function (i) { return v.pieces[i]; })};
            return {draw: function () { drawSentences(panel.figure, spec, r, l, h); }, result: r};
          });
        });
      });
    }
    [first, second].forEach(function (c) { c.addEventListener("input", function () { go(compute); }); });
    [layer, head].forEach(function (c) { c.addEventListener("change", function () { go(compute); }); });
    return {controls: [first, second, layer, head], compute: compute};
  }

  /* ---------------------------------------------------------------- chapter 11: SmolLM2 */

  // beforeqkv.pretrained.bpe, line by line. Python's re classes, spelled out: \s is str.isspace,
  // \w letters, numbers and "_", \d decimal digits only (so "½" and "²" join letters' runs).
  var SPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  var PRESPLIT = new RegExp("'s|'t|'re|'ve|'m|'ll|'d| ?[\\p{L}\\p{Nl}\\p{No}]+| ?\\p{Nd}| ?(?:[^" + SPACE +
                            "\\p{L}\\p{N}_]|_)+|[" + SPACE + "]+(?![^" + SPACE + "])|[" + SPACE + "]+", "gu");
  function byteSymbols() {               // GPT-2's byte -> printable character table
    var table = [], extra = 0;
    for (var b = 0; b < 256; b++) {
      var keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      table.push(String.fromCodePoint(keep ? b : 256 + extra++));
    }
    return table;
  }
  function bpe(file) {
    return fetched(file, function (r) { return r.json(); }, function (t) {
      var ids = new Map(), ranks = new Map(), symbols = byteSymbols(), bytes = new Map();
      t.tokens.forEach(function (s, i) { ids.set(s, i); });
      t.merges.forEach(function (m, r) { ranks.set(m, r); });
      symbols.forEach(function (c, b) { bytes.set(c, b); });
      return {tokens: t.tokens, ids: ids, ranks: ranks, symbols: symbols, bytes: bytes,
              special: new Set(t.special), unknown: t.unknown, cache: new Map()};
    });
  }
  function merge(word, t) {              // the pair listed first in the merges, every occurrence
    if (t.cache.has(word)) return t.cache.get(word);
    var s = Array.from(word);
    while (s.length > 1) {
      var best = -1, at = -1;
      for (var i = 0; i + 1 < s.length; i++) {
        var r = t.ranks.get(s[i] + " " + s[i + 1]);
        if (r !== undefined && (best < 0 || r < best)) { best = r; at = i; }
      }
      if (at < 0) break;
      var a = s[at], b = s[at + 1], out = [];
      for (var j = 0; j < s.length; j++) {
        if (j + 1 < s.length && s[j] === a && s[j + 1] === b) { out.push(a + b); j++; } else out.push(s[j]);
      }
      s = out;
    }
    t.cache.set(word, s);
    return s;
  }
  function bpeEncode(text, t) {
    var ids = [], utf8 = new TextEncoder();
    (text.match(PRESPLIT) || []).forEach(function (piece) {
      var word = Array.from(utf8.encode(piece), function (b) { return t.symbols[b]; }).join("");
      merge(word, t).forEach(function (s) { ids.push(t.ids.has(s) ? t.ids.get(s) : t.unknown); });
    });
    return ids;
  }
  function bpeToken(id, t) {              // one token's text, as Python's decode([id]) gives it
    var s = t.tokens[id], chars = Array.from(s);
    if (t.special.has(id) || chars.some(function (c) { return !t.bytes.has(c); })) return s;
    return new TextDecoder("utf-8").decode(Uint8Array.from(chars, function (c) { return t.bytes.get(c); }));
  }
  function pyRepr(text) {                 // Python's repr() of a str
    var q = text.indexOf("'") >= 0 && text.indexOf('"') < 0 ? '"' : "'";
    return q + Array.from(text).map(function (c) {
      if (c === q || c === "\\") return "\\" + c;
      if (c === "\n") return "\\n";
      if (c === "\r") return "\\r";
      if (c === "\t") return "\\t";
      if (c !== " " && /^[\p{C}\p{Z}]$/u.test(c)) {
        var cp = c.codePointAt(0), hex = cp.toString(16);
        return cp < 0x100 ? "\\x" + hex.padStart(2, "0") : cp < 0x10000 ? "\\u" + hex.padStart(4, "0")
          : "\\U" + hex.padStart(8, "0");
      }
      return c;
    }).join("") + q;
  }

  function drawNext(figure, spec, r, append) {
    var w = spec.words, list = el("div", {"class": "bqkv-live-next", role: "list"});
    r.labels.forEach(function (label, k) {
      var b = el("button", {type: "button", role: "listitem", "aria-label": label + " " + r.probs[k].toFixed(3)});
      var bar = el("span", {"class": "bqkv-live-bar"});
      bar.style.width = (100 * r.probs[k]).toFixed(1) + "%";
      b.append(el("code", {}, label), el("span", {"class": "bqkv-live-track"}), el("span", {}, r.probs[k].toFixed(3)));
      b.children[1].appendChild(bar);
      b.addEventListener("click", function () { append(r.texts[k]); });
      list.appendChild(b);
    });
    figure.replaceChildren(el("p", {"class": "bqkv-live-caption"}, fill(w.after, {prompt: pyRepr(r.prompt)})),
                           list, el("p", {"class": "bqkv-live-caption"}, fill(w.bars, {k: r.labels.length})));
  }

  function nextToken(box, spec, panel, go) {
    var w = spec.words;
    var text = el("textarea", {rows: 2, cols: 40, spellcheck: "false", "aria-label": w.prompt});
    text.value = spec.prompt;              // a textarea: a prompt may hold line breaks (code, verse)
    panel.controls.append(labelled(w.prompt, text));
    function compute() {
      var typed = text.value;
      return bpe(spec.files.tokenizer).then(function (t) {
        var ids = bpeEncode(typed, t), err = null;
        if (!ids.length) err = new Error(w.errors.empty);
        else if (ids.length > spec.max_tokens) err = new Error(fill(w.errors.long, {n: ids.length, m: spec.max_tokens}));
        if (err) { err.input = true; throw err; }       // the reader's input, refused in words
        return run(spec.files.model, function (ort) { return {ids: int64(ids, [1, ids.length], ort)}; })
          .then(function (out) {
            var p = out.probs.data, top = [];
            for (var i = 0; i < p.length; i++) {
              if (top.length < spec.k || p[i] > p[top[top.length - 1]]) {
                top.push(i);
                top.sort(function (a, b) { return p[b] - p[a] || a - b; });
                if (top.length > spec.k) top.pop();
              }
            }
            var texts = top.map(function (i) { return bpeToken(i, t); });
            var r = {prompt: typed, ids: ids, top: top, probs: top.map(function (i) { return p[i]; }), texts: texts,
                     labels: texts.map(pyRepr)};
            return {draw: function () {
              drawNext(panel.figure, spec, r, function (more) { text.value += more; go(compute); });
            }, result: r};
          });
      });
    }
    text.addEventListener("input", function () { go(compute); });
    return {controls: [text], compute: compute};
  }

  /* ---------------------------------------------------------------- every explorer */

  var KINDS = {recall: recall, crosstalk: crosstalk, rows: rows, heads: heads, slots: slots, softmax: softmaxRow, prompt: prompt,
               sentences: sentences, nexttoken: nextToken};

  function setUp(box) {
    var spec = JSON.parse(box.querySelector("script.bqkv-live-spec").textContent);
    var w = spec.words, where = box.querySelector(".bqkv-live-panel");
    var status = el("p", {"class": "bqkv-live-status"});
    if (typeof WebAssembly !== "object" || typeof BigInt64Array !== "function" || !KINDS[spec.kind]) {
      status.textContent = w.no_wasm;
      where.appendChild(status);
      box.dataset.state = "off";
      return;
    }
    var panel = {controls: el("div", {"class": "bqkv-controls"}), figure: el("div", {"class": "bqkv-live-figure"})};
    where.append(panel.controls, panel.figure, status);
    var runs = 0, latest = null;
    // go(compute): run the explorer's model on the current input; only the newest input draws
    function go(compute) {
      var ticket = latest = {}, started = performance.now(), job;
      if (box.dataset.state === "idle") status.textContent = fill(w.loading, spec);
      try {
        job = compute(function () { return ticket === latest; });
      } catch (err) {                   // the reader's input, refused in words
        status.textContent = err.message;
        box.dataset.state = "error";
        return;
      }
      box.dataset.state = "loading";
      job.then(function (done) {
        if (ticket !== latest) return;
        done.draw();
        status.textContent = "";
        done.result.ms = performance.now() - started;
        box.bqkvResult = done.result;
        box.dataset.runs = String(++runs);
        box.dataset.state = "ready";
      }).catch(function (err) {
        if (ticket !== latest) return;
        status.textContent = err && err.input ? err.message
          : fill(w.failed, {why: err && err.message ? err.message : String(err)});
        box.dataset.state = "error";
      });
    }
    var made = KINDS[spec.kind](box, spec, panel, go);
    // the first touch of the explorer loads the runtime and the model, and draws
    made.controls.forEach(function (c) {
      c.addEventListener("focus", function () { if (box.dataset.state === "idle") go(made.compute); });
    });
  }

  function start() {
    var boxes = document.querySelectorAll(".bqkv-live");
    for (var i = 0; i < boxes.length; i++) setUp(boxes[i]);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
