"""`hurray view`: the report of the golden files and of a 4-shard
transformers checkpoint, rendered by headless Chromium (Debian's
chromium-headless-shell): a screenshot, and the page's table and treemap
checked through the DOM it built; a report of names that hold markup and
script runs no script."""

import html.parser
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from deploy import ROOT, cli

CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def render(page: Path, tmp: Path, screenshot: bool = True):
    """The DOM after the page's script ran; with `screenshot`, a screenshot
    is taken too (and checked to be an image)."""
    assert CHROMIUM, "chromium-headless-shell is not installed (cargo xtask setup installs it)"
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1600",
             f"--user-data-dir={tmp / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    if not screenshot:
        return dom.stdout
    shot = tmp / (page.stem + ".png")
    run = subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, len(png)
    return dom.stdout


class Dom(html.parser.HTMLParser):
    """The rows of the tensor table and the treemap's cells, from a DOM dump."""

    def __init__(self):
        super().__init__()
        self.rows, self.cells, self.attrs, self.cards = [], [], {}, {}
        # Every treemap cell's attributes, and the legend's colour of each kind.
        self.cell_attrs, self.legend = [], {}
        self._kind = None
        self._row = None
        self._cell_key = None
        self._card = None
        self._in_value = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.attrs = a
        if tag == "tr" and a.get("class") == "row":
            self._row = {"name": a["data-name"]}
            self.rows.append(self._row)
        if tag == "td" and self._row is not None:
            self._cell_key = a.get("data-key")
            self._row[self._cell_key] = ""
        if tag == "div" and (a.get("class") or "").startswith("cell"):
            self.cells.append((a["data-path"], int(a["data-bytes"]), a.get("style", "")))
            self.cell_attrs.append(a)
        if tag == "span" and "data-kind" in a:
            self._kind = a["data-kind"]
        if tag == "span" and a.get("class") == "swatch" and self._kind is not None:
            self.legend[self._kind] = re.search(r"background:\s*([^;]+)", a["style"]).group(1).strip()
            self._kind = None
        if tag == "div" and a.get("class") == "card":
            self._card = a["data-card"]
        if tag == "div" and a.get("class") == "value" and self._card:
            self._in_value = True

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None
        if tag == "td":
            self._cell_key = None
        if tag == "div" and self._in_value:
            self._in_value = False
            self._card = None

    def handle_data(self, data):
        if self._row is not None and self._cell_key:
            self._row[self._cell_key] += data
        if self._in_value and self._card:
            self.cards[self._card] = data


def parse(dom: str) -> Dom:
    d = Dom()
    d.feed(dom)
    assert d.attrs.get("data-rendered") == "true", "the page's script did not finish"
    return d


def area(style: str) -> float:
    w = float(re.search(r"width:\s*([\d.]+)px", style).group(1))
    h = float(re.search(r"height:\s*([\d.]+)px", style).group(1))
    return w * h


def view(*args):
    out = cli("view", *args)
    assert out.returncode == 0, out.stderr
    return out


def test_the_golden_files_render_with_every_tensor_in_the_table(tmp_path):
    goldens = sorted((ROOT / "tests" / "golden").rglob("*.hurray"))
    assert len(goldens) == 35, goldens
    for i, golden in enumerate(goldens):
        page = tmp_path / f"{i}.html"
        view(golden, "-o", page)
        d = parse(render(page, tmp_path, screenshot=golden.name in ("example.hurray", "model.hurray")))
        inspect = json.loads(cli("inspect", "--json", golden).stdout)
        names = [t["name"] for t in inspect["tensors"]]
        assert sorted(r["name"] for r in d.rows) == sorted(names), golden
        for t, r in zip(sorted(inspect["tensors"], key=lambda t: t["name"]), sorted(d.rows, key=lambda r: r["name"])):
            assert r["dtype"] == t["dtype"]
            # 0 stays 0 and a dynamic dimension is "?".
            assert r["shape"] == "[" + ", ".join("?" if d == "?" else str(d) for d in t["shape"]) + "]"
        assert d.cards["tensors"] == str(len(names))


def test_a_four_shard_transformers_checkpoint_with_stats(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    hf = tmp_path / "hf"
    model.save_pretrained(hf, max_shard_size="250KB")
    shards = sorted(hf.glob("model-*.safetensors"))
    index = hf / "model.safetensors.index.json"
    hurray = tmp_path / "hurray"
    hurray.mkdir()
    out = cli("convert", index, hurray / "model.hurray")
    assert out.returncode == 0, out.stderr
    page = tmp_path / "model.html"
    view(hurray / "model.hurray", "-o", page, "--stats")
    d = parse(render(page, tmp_path))
    state = model.state_dict()
    saved = json.loads(index.read_text())["weight_map"]
    assert sorted(r["name"] for r in d.rows) == sorted(saved)
    assert int(d.cards["members"]) == len(shards) == 4, len(shards)
    # The stats are the values' own.
    row = next(r for r in d.rows if r["name"] == "model.layers.0.mlp.up_proj.weight")
    w = state["model.layers.0.mlp.up_proj.weight"].float().numpy()
    for key, want in [("min", w.min()), ("max", w.max()), ("mean", w.mean())]:
        assert abs(float(row[key]) - float(want)) <= 1e-4 * max(1.0, abs(float(want))), (key, row[key], want)
    assert row["nan"] == "0" and row["inf"] == "0"
    # The treemap: one cell per top-level prefix (a chain of single
    # children passed through: `lm_head` -> `weight` is one cell), its area
    # in proportion to its bytes.
    top = [(a["data-path"], int(a["data-bytes"]), a["style"]) for a in d.cell_attrs if a["data-depth"] == "0"]
    total = sum(b for _, b, _ in top)
    assert {c[0] for c in top} == {"model", "lm_head.weight"}, top
    # The first screen shows every layer.
    shown = {a["data-path"] for a in d.cell_attrs}
    assert {f"model.layers.{i}" for i in range(4)} <= shown, sorted(shown)
    areas = sum(area(s) for _, _, s in top)
    for path, b, style in top:
        assert abs(area(style) / areas - b / total) < 0.01, path


def test_names_and_metadata_holding_markup_are_shown_as_text(hurray, tmp_path):
    hostile = {
        "<script>document.body.setAttribute('data-pwned','1')</script>": np.zeros(4, np.float32),
        "<img src=x onerror=\"document.body.setAttribute('data-pwned','2')\">.w": np.ones(3, np.float32),
        "a\u2028b</script><script>document.body.setAttribute('data-pwned','3')</script>": np.ones(2, np.int8),
        "__proto__.w": np.ones(8, np.float32),
    }
    path = tmp_path / "hostile.hurray"
    hurray.save(path, hostile, metadata={"</script><script>alert(1)</script>": "<b>bold</b>"})
    page = tmp_path / "hostile.html"
    view(path, "-o", page, "--stats")
    dom = render(page, tmp_path)
    d = parse(dom)
    assert "data-pwned" not in d.attrs, d.attrs
    assert sorted(r["name"] for r in d.rows) == sorted(hostile)
    # A name component that is a property of JavaScript objects is a name
    # (`__proto__` -> `w`, a chain of single children, is one cell).
    assert "__proto__.w" in {path for path, _, _ in d.cells}
    # The metadata is text in a cell, not an element.
    assert "&lt;b&gt;bold&lt;/b&gt;" in dom and "<b>bold</b>" not in dom


def llama_checkpoint(tmp_path, tied: bool):
    """A small Llama saved by transformers' `save_pretrained` and converted."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        tie_word_embeddings=tied,
    )
    torch.manual_seed(0)
    hf = tmp_path / "hf"
    transformers.LlamaForCausalLM(config).save_pretrained(hf)
    out = tmp_path / "model.hurray"
    r = cli("convert", hf / "model.safetensors", out)
    assert r.returncode == 0, r.stderr
    return out


def test_the_first_screen_of_a_llama_checkpoint_shows_its_layers(tmp_path):
    """Every name is under `model.` (tied embeddings: no `lm_head`): the
    first screen starts inside `model`, and shows each layer and its blocks
    without a click."""
    path = llama_checkpoint(tmp_path, tied=True)
    page = tmp_path / "model.html"
    view(path, "-o", page)
    dom = render(page, tmp_path)
    d = parse(dom)
    top = {a["data-path"] for a in d.cell_attrs if a["data-depth"] == "0"}
    assert top == {"model.embed_tokens.weight", "model.layers", "model.norm.weight"}, top
    shown = {a["data-path"] for a in d.cell_attrs}
    assert {f"model.layers.{i}" for i in range(6)} <= shown, sorted(shown)
    assert {f"model.layers.{i}.self_attn" for i in range(6)} <= shown, sorted(shown)
    # The breadcrumb says where the screen starts.
    crumb = re.search(r'<div id="breadcrumb">(.*?)</div>', dom, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", crumb) == "all / model", crumb


def test_a_branch_of_several_types_shows_each_in_proportion(hurray, tmp_path):
    """A branch holding bf16 and i8 is striped in both colours, each as wide
    as its share of the bytes, not painted as the file's main type."""
    import ml_dtypes

    tensors = {
        "blk.0.attn.weight": np.ones((64, 64), ml_dtypes.bfloat16),  # 8 KiB
        "blk.0.ffn.weight": np.ones((64, 64), np.int8),  # 4 KiB
        "head.weight": np.ones((64, 128), np.float32),  # 32 KiB: f32 has the most bytes
    }
    path = tmp_path / "mixed.hurray"
    hurray.save(path, tensors)
    page = tmp_path / "mixed.html"
    view(path, "-o", page)
    d = parse(render(page, tmp_path, screenshot=False))
    cells = {a["data-path"]: a for a in d.cell_attrs}
    branch = cells["blk.0"]
    assert branch["data-kinds"] == "bf16 i8", branch
    style = branch["style"]
    assert "linear-gradient" in style, style
    bf16, i8, f32 = d.legend["bf16"], d.legend["i8"], d.legend["f32"]
    assert bf16 in style and i8 in style and f32 not in style, (style, d.legend)
    # bf16 holds two thirds of the branch's bytes: its stripe ends there.
    assert f"{bf16} 0%, {bf16} 66.67%, {i8} 66.67%, {i8} 100%" in style, style
    assert "bf16 67%, i8 33%" in branch["title"], branch["title"]
    # A leaf keeps its type's plain colour.
    assert cells["head.weight"]["style"].count("rgb(") == 1 and f32 in cells["head.weight"]["style"]
