"use strict";
// The report page of `hurray view`. Every text from the file (names,
// metadata, types) goes into the page through textContent or an attribute,
// never as markup; the page's policy allows no other script than this one.
(function () {
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var PALETTE = ["#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5",
    "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#e5c494", "#66c2a5", "#fc8d62"];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function bytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
  }

  function count(n) {
    if (n >= 1e9) { return (n / 1e9).toFixed(2) + " B"; }
    if (n >= 1e6) { return (n / 1e6).toFixed(2) + " M"; }
    if (n >= 1e3) { return (n / 1e3).toFixed(1) + " K"; }
    return String(n);
  }

  function num(v) {
    if (v === null || v === undefined) { return ""; }
    var a = Math.abs(v);
    return (a !== 0 && (a < 1e-3 || a >= 1e5)) ? v.toExponential(3) : String(Number(v.toPrecision(5)));
  }

  // Colours: one per kind (type, or type and quantization scheme), the
  // kinds with the most bytes first.
  var kinds = data.totals.by_dtype.map(function (g) { return g.name; });
  function colour(kind) {
    var i = kinds.indexOf(kind);
    return i < 0 ? "#cccccc" : PALETTE[i % PALETTE.length];
  }

  // Header.
  document.getElementById("title").textContent = data.source;
  document.title = "Hurray report: " + data.source;
  document.getElementById("summary").textContent = "Hurray " + data.version + " " + data.kind +
    ", " + bytes(data.file_bytes) + " on disk";
  var cards = document.getElementById("cards");
  [["tensors", String(data.totals.all.tensors)], ["parameters", count(data.totals.all.params)],
    ["tensor bytes", bytes(data.totals.all.bytes)], ["element types", String(kinds.length)]]
    .concat(data.members.length ? [["members", String(data.members.length)]] : [])
    .forEach(function (c) {
      var card = el("div", { "class": "card", "data-card": c[0] });
      card.appendChild(el("div", { "class": "value" }, c[1]));
      card.appendChild(el("div", { "class": "label" }, c[0]));
      cards.appendChild(card);
    });

  // The tree of names, split at dots; a leaf is a tensor.
  function buildTree() {
    // Maps without a prototype: a name component such as `__proto__` is a
    // key like any other.
    var root = { name: "", path: "", children: Object.create(null), bytes: 0, kinds: Object.create(null) };
    data.tensors.forEach(function (t) {
      var parts = t.name.split(".");
      var node = root;
      var path = "";
      root.bytes += t.bytes;
      root.kinds[t.kind] = (root.kinds[t.kind] || 0) + t.bytes;
      parts.forEach(function (p, i) {
        path = i === 0 ? p : path + "." + p;
        if (!Object.prototype.hasOwnProperty.call(node.children, p)) {
          node.children[p] = { name: p, path: path, children: Object.create(null), bytes: 0, kinds: Object.create(null) };
        }
        node = node.children[p];
        node.bytes += t.bytes;
        node.kinds[t.kind] = (node.kinds[t.kind] || 0) + t.bytes;
      });
      node.tensor = t;
    });
    return root;
  }
  // A chain of single children is one cell, its names joined by dots (as
  // disk usage viewers pass through a folder holding one folder): a
  // checkpoint's `model` -> `layers` is one step, not two clicks.
  function compact(node) {
    Object.keys(node.children).forEach(function (k) {
      var c = node.children[k];
      var only = Object.keys(c.children);
      while (!c.tensor && only.length === 1) {
        var next = c.children[only[0]];
        next.name = c.name + "." + next.name;
        c = next;
        only = Object.keys(c.children);
      }
      node.children[k] = c;
      compact(c);
    });
  }
  var tree = buildTree();
  compact(tree);

  // A node's kinds, the most bytes first, with their share of its bytes.
  function mix(node) {
    var ks = Object.keys(node.kinds).filter(function (k) { return node.kinds[k] > 0; });
    ks.sort(function (a, b) { return node.kinds[b] - node.kinds[a]; });
    return ks.map(function (k) { return { kind: k, share: node.bytes ? node.kinds[k] / node.bytes : 0 }; });
  }

  // A cell's fill: its kind's colour, or, for a branch of several kinds,
  // stripes of their colours as wide as their shares of its bytes.
  function fill(parts) {
    if (parts.length <= 1) { return colour(parts.length ? parts[0].kind : null); }
    var at = 0;
    var stops = parts.map(function (p) {
      var from = (100 * at).toFixed(2);
      at += p.share;
      return colour(p.kind) + " " + from + "% " + (100 * at).toFixed(2) + "%";
    });
    return "linear-gradient(90deg, " + stops.join(", ") + ")";
  }

  // Squarified treemap (Bruls, Huizing, van Wijk): rows of children laid
  // along the shorter side, each row closed when its worst aspect ratio
  // would grow.
  function squarify(items, x, y, w, h, out) {
    var total = items.reduce(function (s, it) { return s + it.value; }, 0);
    if (!items.length || total <= 0 || w <= 0 || h <= 0) { return; }
    var scale = (w * h) / total;
    var rest = items.slice();
    while (rest.length) {
      var side = Math.min(w, h);
      var row = [];
      var rowSum = 0;
      var worst = Infinity;
      while (rest.length) {
        var next = rest[0].value * scale;
        var sum = rowSum + next;
        var min = Math.min.apply(null, row.map(function (r) { return r.value * scale; }).concat([next]));
        var max = Math.max.apply(null, row.map(function (r) { return r.value * scale; }).concat([next]));
        var ratio = Math.max(side * side * max / (sum * sum), (sum * sum) / (side * side * min));
        if (row.length && ratio > worst) { break; }
        worst = ratio;
        row.push(rest.shift());
        rowSum = sum;
      }
      var thick = rowSum / side;
      var offset = 0;
      row.forEach(function (r) {
        var len = r.value * scale / thick;
        if (w >= h) {
          out.push({ item: r, x: x, y: y + offset, w: thick, h: len });
        } else {
          out.push({ item: r, x: x + offset, y: y, w: len, h: thick });
        }
        offset += len;
      });
      if (w >= h) { x += thick; w -= thick; } else { y += thick; h -= thick; }
    }
  }

  var treemap = document.getElementById("treemap");
  var breadcrumb = document.getElementById("breadcrumb");
  function showTree(node, trail) {
    while (treemap.firstChild) { treemap.removeChild(treemap.firstChild); }
    while (breadcrumb.firstChild) { breadcrumb.removeChild(breadcrumb.firstChild); }
    trail.forEach(function (n, i) {
      if (i > 0) { breadcrumb.appendChild(document.createTextNode(" / ")); }
      var label = i === 0 ? "all" : n.name;
      if (i === trail.length - 1) {
        breadcrumb.appendChild(el("span", null, label));
      } else {
        var a = el("a", { "data-depth": String(i) }, label);
        a.addEventListener("click", function () { showTree(n, trail.slice(0, i + 1)); });
        breadcrumb.appendChild(a);
      }
    });
    layout(node, 0, 0, treemap.clientWidth, treemap.clientHeight, 0, trail);
  }

  // Lays `node`'s children out in the rectangle; a child with room for them
  // shows its own children inside (two levels at once), under a strip with
  // its name. Clicking a cell with children zooms into it.
  function layout(node, x, y, w, h, depth, trail) {
    var items = Object.keys(node.children).map(function (k) {
      var c = node.children[k];
      return { node: c, value: c.bytes };
    }).filter(function (it) { return it.value > 0; });
    items.sort(function (a, b) { return b.value - a.value; });
    var rects = [];
    squarify(items, x, y, w, h, rects);
    rects.forEach(function (r) {
      var c = r.item.node;
      var branch = Object.keys(c.children).length > 0;
      var parts = mix(c);
      var kindsText = parts.map(function (p) {
        return parts.length > 1 ? p.kind + " " + Math.round(100 * p.share) + "%" : p.kind;
      }).join(", ");
      var cell = el("div", {
        "class": branch ? "cell branch" : "cell",
        "data-path": c.path,
        "data-bytes": String(c.bytes),
        "data-depth": String(depth),
        "data-kinds": parts.map(function (p) { return p.kind; }).join(" "),
        "title": c.path + "\n" + bytes(c.bytes) + (kindsText ? "\n" + kindsText : "")
      });
      cell.style.left = r.x + "px";
      cell.style.top = r.y + "px";
      cell.style.width = Math.max(0, r.w) + "px";
      cell.style.height = Math.max(0, r.h) + "px";
      cell.style.background = fill(parts);
      // Up to three levels at once where there is room: a checkpoint's
      // `model` shows its `layers`, and they their blocks.
      var nest = branch && depth < 2 && r.w > 80 && r.h > 60;
      if (r.w > 40 && r.h > 16) {
        cell.appendChild(el("span", null, nest ? c.name + "  " + bytes(c.bytes) : c.name));
        if (!nest && r.h > 30) { cell.appendChild(el("span", { "class": "muted" }, bytes(c.bytes))); }
      }
      if (branch) {
        cell.addEventListener("click", function (e) {
          e.stopPropagation();
          showTree(c, trail.concat([c]));
        });
      }
      treemap.appendChild(cell);
      if (nest) {
        layout(c, r.x + 3, r.y + 18, r.w - 6, r.h - 21, depth + 1, trail.concat([c]));
      }
    });
  }
  // The first screen starts where the names branch: a root holding one
  // branch (every name under `model.`) shows that branch's children. (A
  // chain below it was made one node by `compact`.)
  var tops = Object.keys(tree.children);
  var only = tops.length === 1 && !tree.children[tops[0]].tensor ? tree.children[tops[0]] : null;
  if (only) { showTree(only, [tree, only]); } else { showTree(tree, [tree]); }

  var legend = document.getElementById("legend");
  legend.appendChild(el("span", { "class": "muted" },
    "Colour: element type (and quantization). A branch of several is striped, each as wide as its share of the bytes."));
  kinds.forEach(function (k) {
    var item = el("span", { "data-kind": k });
    var sw = el("span", { "class": "swatch" });
    sw.style.background = colour(k);
    item.appendChild(sw);
    item.appendChild(document.createTextNode(k));
    legend.appendChild(item);
  });

  // Totals.
  function groupTable(title, groups, id) {
    var box = el("div");
    box.appendChild(el("h3", null, title));
    var table = el("table", { id: id });
    var head = el("tr");
    ["name", "tensors", "parameters", "bytes"].forEach(function (h, i) {
      head.appendChild(el("th", i ? { "class": "num" } : null, h));
    });
    table.appendChild(head);
    groups.forEach(function (g) {
      var tr = el("tr");
      tr.appendChild(el("td", null, g.name));
      tr.appendChild(el("td", { "class": "num" }, g.tensors));
      tr.appendChild(el("td", { "class": "num" }, count(g.params)));
      tr.appendChild(el("td", { "class": "num" }, bytes(g.bytes)));
      table.appendChild(tr);
    });
    box.appendChild(table);
    return box;
  }
  var groups = document.getElementById("groups");
  groups.appendChild(groupTable("By element type", data.totals.by_dtype, "by-dtype"));
  groups.appendChild(groupTable("By layer", data.totals.by_layer, "by-layer"));
  if (data.members.length) {
    groups.appendChild(groupTable("By member", data.members, "by-member"));
  }

  // The tensor table: sortable, filterable.
  var columns = [
    { key: "name", label: "name", get: function (t) { return t.name; } },
    { key: "dtype", label: "dtype", get: function (t) { return t.dtype; } },
    { key: "shape", label: "shape", get: function (t) { return "[" + t.shape.join(", ") + "]"; },
      sort: function (t) { return t.params === null ? -1 : t.params; } },
    { key: "layout", label: "layout", get: function (t) { return t.layout; } },
    { key: "quantization", label: "quantization", get: function (t) { return t.quantization || ""; } },
    { key: "bytes", label: "bytes", num: true, get: function (t) { return bytes(t.bytes); },
      sort: function (t) { return t.bytes; } },
    { key: "checks", label: "checks", get: function (t) { return t.checks; } }
  ];
  if (data.members.length) {
    columns.push({ key: "members", label: "members", get: function (t) { return t.members.join(", "); } });
  }
  if (data.stats) {
    [["min", "min"], ["max", "max"], ["mean", "mean"]].forEach(function (s) {
      columns.push({ key: s[0], label: s[1], num: true,
        get: function (t) { return t.stats ? num(t.stats[s[0]]) : (t.stats_note || ""); },
        sort: function (t) { return t.stats && t.stats[s[0]] !== null ? t.stats[s[0]] : -Infinity; } });
    });
    [["nan", "NaN"], ["inf", "Inf"]].forEach(function (s) {
      columns.push({ key: s[0], label: s[1], num: true,
        get: function (t) { return t.stats ? String(t.stats[s[0]]) : ""; },
        sort: function (t) { return t.stats ? t.stats[s[0]] : -1; } });
    });
    columns.push({ key: "histogram", label: "histogram", hist: true, get: function () { return ""; } });
  }
  var table = document.getElementById("tensors");
  var headRow = el("tr");
  var sortKey = null;
  var sortDir = 1;
  columns.forEach(function (c) {
    var th = el("th", { "data-key": c.key, "class": c.num ? "num" : "" }, c.label);
    th.addEventListener("click", function () {
      sortDir = sortKey === c.key ? -sortDir : 1;
      sortKey = c.key;
      Array.prototype.forEach.call(headRow.children, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
      th.classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
      render();
    });
    headRow.appendChild(th);
  });
  table.tHead.appendChild(headRow);

  function histogram(t) {
    var box = el("span", { "class": "hist" });
    if (!t.stats) { return box; }
    var max = Math.max.apply(null, t.stats.histogram.concat([1]));
    t.stats.histogram.forEach(function (c) {
      var bar = el("i");
      bar.style.height = Math.round(18 * c / max) + "px";
      box.appendChild(bar);
    });
    return box;
  }

  var filter = document.getElementById("filter");
  function render() {
    var needle = filter.value.toLowerCase();
    var rows = data.tensors.filter(function (t) {
      return !needle || (t.name + " " + t.dtype + " " + (t.quantization || "")).toLowerCase().indexOf(needle) >= 0;
    });
    if (sortKey) {
      var col = columns.filter(function (c) { return c.key === sortKey; })[0];
      var key = col.sort || col.get;
      rows = rows.slice().sort(function (a, b) {
        var x = key(a);
        var y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
      });
    }
    var body = table.tBodies[0];
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rows.forEach(function (t) {
      var tr = el("tr", { "class": "row", "data-name": t.name });
      columns.forEach(function (c) {
        var td = el("td", { "class": c.key === "name" ? "name" : (c.num ? "num" : ""), "data-key": c.key });
        if (c.hist) { td.appendChild(histogram(t)); } else { td.textContent = c.get(t); }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    document.getElementById("shown").textContent = rows.length + " of " + data.tensors.length + " tensors";
  }
  filter.addEventListener("input", render);
  render();

  // Metadata.
  var meta = document.querySelector("#metadata tbody");
  if (!data.metadata.length) {
    document.getElementById("metadata-section").hidden = true;
  }
  data.metadata.forEach(function (kv) {
    var tr = el("tr");
    tr.appendChild(el("th", null, kv[0]));
    tr.appendChild(el("td", null, kv[1]));
    meta.appendChild(tr);
  });
  document.body.setAttribute("data-rendered", "true");
})();
