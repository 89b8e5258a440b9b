"""HTML reports of run bundles (dpbnsl.io.report): what the page shows, that it is self-contained and
escaped, that it survives odd inputs, that write_html refuses cleanly, and (marker ``browser``) that
headless Chromium draws it in colour."""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from collections import Counter
from html import escape
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpbnsl import fed_bnsl
from dpbnsl.io.bundle import Bundle, BundleError, read_bundle, write_bundle
from dpbnsl.io.report import EDGE_COLOURS, classify_edges, render_html, write_html
from dpbnsl.io.report.charts import bar_chart, claim_chart, line_chart
from dpbnsl.learners import LearnResult
from dpbnsl.learners.registry import LEARNERS
from dpbnsl.metrics import count_accuracy
from dpbnsl.simulation import simulate

HOSTILE = "<script>alert('x')</script> & \"ü\""


class Page(HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def classes(self, tag: str | None = None) -> Counter:
        """How many elements carry each class attribute value (exactly)."""
        return Counter(a.get("class") for t, a in self.tags if tag is None or t == tag)


def result_of(W, *, history=None, columns=None, **kw) -> LearnResult:
    W = np.asarray(W, float)
    return LearnResult(
        kw.pop("method", "fed-bnsl"),
        W,
        W,
        pd.DataFrame() if history is None else history,
        columns=columns,
        **kw,
    )


def page_of(result, tmp_path, truth=None, name="run") -> str:
    return render_html(read_bundle(result.save(tmp_path / name, truth=truth)))


def assert_self_contained(html: str) -> None:
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)""", html, flags=re.I)
    assert re.findall(r"url\(\s*([^)]*)\)", html) == re.findall(r"url\((#[\w-]+)\)", html)  # only #ids
    assert "@import" not in html.lower()
    for tag in ("<script", "<link", "<img", "<iframe", "<object", "<embed"):
        assert tag not in html.lower()
    for tag, attrs in Page(html).tags:
        for key in ("src", "href"):
            if key in attrs:
                assert (attrs[key] or "").startswith("#"), (tag, attrs)


@pytest.fixture(scope="module")
def data():
    return simulate(6, 300, participants=3, rng=7)


@pytest.fixture(scope="module")
def private(data):
    entry = LEARNERS["dp-fed-sparse-bnsl"]
    return entry.run(data.participants, **{**entry.simulation_settings(6), **entry.quick, "rng": 3})


# --- the graph ------------------------------------------------------------------------------------


def test_edge_classes_on_a_hand_built_case(tmp_path):
    truth = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]])  # a -> b, b -> c, a -> c
    W = np.array([[0, 0.8, 0], [0.5, 0, 0], [0, -1.2, 0]])  # a <-> b, c -> b
    names = ("a<b", "c&d", '"q"')
    html = page_of(result_of(W, columns=names), tmp_path, truth=truth)
    counts = Page(html).classes("path")
    # a -> b true; b -> a extra (the 2-cycle); c -> b reversed; a - c missing
    assert (counts["edge tp"], counts["edge reversed"], counts["edge extra"], counts["edge missing"]) == (
        1,
        1,
        1,
        1,
    )
    assert "a&lt;b —→ c&amp;d: true positive" in html
    acc = count_accuracy(truth, W)
    for label, value in [("SHD", acc.shd), ("TPR", acc.tpr), ("FDR", acc.fdr)]:
        assert f'<th>{label}</th><td class="num">{value:.4g}</td>' in html
    assert re.search(
        r"true positive: <b>1</b>.*reversed: <b>1</b>.*extra: <b>1</b>.*missing[^:]*: <b>1</b>", html
    )
    assert EDGE_COLOURS["extra"] in html and "stroke-dasharray" in html
    assert_self_contained(html)


def test_classes_agree_with_count_accuracy():
    rng = np.random.default_rng(0)
    for d in range(1, 8):
        for _ in range(20):
            truth = np.triu(rng.random((d, d)) < 0.4, 1).astype(int)
            perm = rng.permutation(d)
            truth = truth[np.ix_(perm, perm)]
            est = (rng.random((d, d)) < 0.3).astype(float)
            c = Counter(e.kind for e in classify_edges(est, truth=truth))
            acc = count_accuracy(truth, est)
            assert (c["tp"], c["reversed"], c["extra"], c["missing"]) == (
                acc.true_positive,
                acc.reversed,
                acc.extra,
                acc.missing,
            )


def test_cpdag_edges_are_undirected_and_without_truth_one_class(tmp_path):
    cpdag = np.array([[0, 1, 0], [1, 0, 1], [0, 0, 0]])  # a - b, b -> c
    W = np.array([[0, 1.0, 0], [0, 0, 1.0], [0, 0, 0]])
    html = page_of(result_of(W, method="pc", cpdag=cpdag), tmp_path)
    paths = [a for t, a in Page(html).tags if t == "path" and (a.get("class") or "").startswith("edge")]
    assert sorted(a["class"] for a in paths) == ["edge edge", "edge edge undirected"]
    assert [("marker-end" in a) for a in paths if "undirected" in a["class"]] == [False]
    assert "no true graph given" in html


@pytest.mark.parametrize("d", [1, 2, 200])
def test_any_number_of_nodes(tmp_path, d):
    rng = np.random.default_rng(d)
    W = np.triu(rng.random((d, d)) < 2 / d, 1) * 1.0
    np.fill_diagonal(W, 0)
    if d == 1:
        W = np.array([[0.7]])  # a self-loop is drawn (as an extra edge)
    html = page_of(result_of(W), tmp_path, truth=np.zeros((d, d)))
    counts = Page(html).classes("path")
    assert counts["edge extra"] == int((W != 0).sum())
    assert len([1 for t, a in Page(html).tags if t == "g" and a.get("class") == "node"]) == d


# --- escaping, history, privacy -------------------------------------------------------------------


def test_hostile_names_are_escaped_everywhere(tmp_path):
    names = (HOSTILE, "b", "c")
    history = pd.DataFrame({"round": [0, 1, 2], HOSTILE: [1.0, 0.5, 0.25]})
    r = result_of(
        [[0, 1, 0], [0, 0, 0], [0, 0, 0]],
        columns=names,
        history=history,
        params={HOSTILE: HOSTILE, "nested": {HOSTILE: (1, HOSTILE)}},
        info={HOSTILE: HOSTILE},
    )
    out = write_bundle(
        tmp_path / "run", "learn", result=r, summary={HOSTILE: [HOSTILE]}, command=["dpbnsl", HOSTILE]
    )
    html = render_html(read_bundle(out))
    assert "<script" not in html.lower() and "alert('x')" not in html
    assert escape(HOSTILE) in html  # in the params, the history chart's title and the command line
    assert_self_contained(html)


def test_convergence_charts(tmp_path):
    data = simulate(5, 200, participants=2, rng=0)
    r = fed_bnsl(data.participants, max_rounds=8)
    html = page_of(r, tmp_path, truth=data.B_true)
    page = Page(html)
    polylines = [a for t, a in page.tags if t == "polyline" and a.get("class") == "series"]
    assert len(polylines) >= 4 and all(len(a["points"].split()) == len(r.history) for a in polylines[:1])
    titles = [s for s in page.text if s.split(" (")[0] in r.history.columns]
    assert {"h", "gap", "nnz"} <= {s.split(" (")[0] for s in titles}
    assert "No differential-privacy guarantee" in html and "fed-bnsl" in html


def test_odd_history_values_do_not_break_the_charts(tmp_path):
    history = pd.DataFrame(
        {
            "round": [0, 1, 2, 3, 4],
            "h": [1.0, 1e-3, np.nan, 1e-7, np.inf],  # log scale, a gap, an infinity
            "gap": [0.0, -1.0, 2.0, -3.0, 0.0],
            "rho": [1.0] * 5,  # constant
            "loss": [np.nan] * 5,  # nothing to draw
            "phase": list("abcde"),  # not numeric: not drawn
            "flag": [True, False, True, False, True],  # booleans: not drawn
        }
    )
    html = page_of(result_of(np.zeros((2, 2)), history=history), tmp_path)
    svgs = re.findall(r'<svg class="chart".*?</svg>', html, flags=re.S)
    assert len(svgs) == 4
    by_title = {re.search(r'aria-label="([^"]*)"', s).group(1): s for s in svgs}
    assert set(by_title) == {"h (log scale)", "gap", "rho", "loss"}
    assert by_title["h (log scale)"].count('class="series"') == 1  # 0-1 drawn, 3 a dot
    assert by_title["rho"].count('class="series"') == 1 and "no finite values" in by_title["loss"]
    assert "nan" not in "".join(re.findall(r'points="([^"]*)"', html)).lower()
    svg = line_chart([], [], title="empty")
    assert "no finite values" in svg


@pytest.mark.parametrize(
    "ys",
    [
        [-1.7e308, 1.7e308, 0.0],
        [1e-300, 1e300, 1.0],
        [5e-324, 1.0, 2.0],
        [0.0, 0.0, 0.0],
        [-np.inf, np.nan, 3.0],
    ],
)
def test_charts_with_extreme_values(ys):
    geometry = r'(?:points|x|y|x1|x2|y1|y2|width|height|cx|cy|d)="([^"]*)"'
    for svg in (
        line_chart([0, 1, 2], ys, title="t"),
        line_chart([0.0, 1e308, -1e308], ys, title="t"),
        bar_chart(["a", "b", "c"], ys, title="b"),
        claim_chart(ys[0], ys[1], ys[2]),
    ):
        coords = " ".join(re.findall(geometry, svg)).lower()
        assert "nan" not in coords and "inf" not in coords


def test_empty_history_and_non_private(tmp_path):
    html = page_of(result_of([[0, 1], [0, 0]], method="notears-voting"), tmp_path)
    assert "no per-round history" in html
    assert "No differential-privacy guarantee: notears-voting" in html
    assert 'class="chart"' not in html


def test_private_statement_and_one_ledger_per_participant(private, data, tmp_path):
    html = page_of(private, tmp_path, truth=data.B_true)
    assert escape(str(private.privacy)) in html
    page = Page(html)
    assert page.classes("table")["data ledger-table"] == len(private.ledger) == 3
    delta = private.privacy.delta
    for k, ledger in enumerate(private.ledger):
        eps = ledger.epsilon(delta, accountant=private.privacy.accountant)
        assert f"Participant {k}: ε = {eps:.4g}" in html
    for accountant in private.privacy.bounds:
        assert f"<td>{accountant}</td>" in html
    assert "certifies the guarantee" in html and "No differential-privacy" not in html
    assert "total MB" in html and "dp-fed-sparse-bnsl" in html
    assert_self_contained(html)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    d=st.integers(1, 6),
    data=st.data(),
)
def test_any_result_renders(d, data):
    """Random weights, names, histories (any floats) and truths: the page renders, escaped."""
    W = data.draw(hnp.arrays(np.float64, (d, d), elements=st.sampled_from([0.0, 0.0, 1.5, -0.7])))
    names = data.draw(
        st.none() | st.lists(st.text(min_size=1, max_size=8), min_size=d, max_size=d, unique=True)
    )
    n = data.draw(st.integers(0, 6))
    history = pd.DataFrame(
        {
            "round": np.arange(n),
            data.draw(st.text(min_size=1, max_size=5)): data.draw(hnp.arrays(np.float64, n)),
        }
    )
    truth = None
    if data.draw(st.booleans()):
        truth = np.triu(data.draw(hnp.arrays(np.int64, (d, d), elements=st.integers(0, 1))), 1)
    r = result_of(W, history=history, columns=None if names is None else tuple(names))
    frame = None if truth is None else pd.DataFrame(truth, index=r.names, columns=r.names)
    html = render_html(Bundle("learn", "2026-01-01T00:00:00+00:00", {"dpbnsl": "0"}, result=r, truth=frame))
    page = Page(html)
    assert sum(1 for t, a in page.tags if t == "g" and a.get("class") == "node") == d
    drawn = sum(1 for t, a in page.tags if t == "path" and (a.get("class") or "").startswith("edge "))
    assert drawn >= int(np.count_nonzero(W) - np.count_nonzero(W * W.T) / 2)
    # names are text only: the same page with the default names has the same elements (a name
    # such as "<b" rendered raw would add one), and a name with "<" is shown escaped
    plain = result_of(W, history=history, columns=None)
    frame = None if truth is None else pd.DataFrame(truth, index=plain.names, columns=plain.names)
    plain_page = Page(
        render_html(Bundle("learn", "2026-01-01T00:00:00+00:00", {"dpbnsl": "0"}, result=plain, truth=frame))
    )
    assert Counter(t for t, _ in page.tags) == Counter(t for t, _ in plain_page.tags)
    for name in names or ():
        if "<" in name:
            assert escape(name) in html
    geometry = ("points", "d", "x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "width", "height", "viewBox")
    coords = " ".join(a[k] or "" for _, a in page.tags for k in geometry if k in a).lower()
    assert "nan" not in coords and "inf" not in coords


# --- attacks and audits ---------------------------------------------------------------------------


def test_attack_bundle(tmp_path):
    table = pd.DataFrame(
        {
            "method": ["fed-bnsl"] * 3,
            "participant": ["0", "1", "all"],
            "n_k": [100, 100, 200],
            "rel_error": [1e-14, np.nan, 0.25],
            "auc": [0.5, 0.75, -np.inf],
        }
    )
    scores = pd.DataFrame({"participant": np.arange(300) % 3, "score": np.linspace(0, 1, 300)})
    out = write_bundle(
        tmp_path / "a", "attack", tables={"table": table, "scores": scores}, summary={"method": "fed-bnsl"}
    )
    html = render_html(read_bundle(out))
    page = Page(html)
    assert page.classes("table")["data"] == 2 and "1e-14" in html and "0.25" in html
    assert page.classes("rect")["bar"] == 3 * 3 - 2  # n_k, rel_error and auc for 3 rows, 2 non-finite
    assert "by participant" in html and "too many to chart" in html and "The first 200 of 300 rows" in html
    assert_self_contained(html)


@pytest.mark.parametrize(
    "summary, verdict",
    [
        ({"claimed_epsilon": 1.0, "epsilon_lb": 0.4, "estimate": 0.95}, "stays below"),
        ({"claimed_epsilon": "1", "epsilon_lb": 2.5, "estimate": {"epsilon": 3.0}}, "claim is refuted"),
        ({"bound": {"epsilon_lb": 0.1}, "claimed_epsilon": "inf", "estimate": None}, "stays below"),
    ],
)
def test_audit_bundle(tmp_path, summary, verdict):
    table = pd.DataFrame({"variant": ["correct"], "epsilon_lb": [0.4], "flagged": [False]})
    out = write_bundle(tmp_path / "a", "audit", tables={"audits": table}, summary=summary)
    html = render_html(read_bundle(out))
    assert verdict in html and 'class="bound"' in html
    assert ('class="claim"' in html) == (summary["claimed_epsilon"] != "inf")
    assert ('class="estimate"' in html) == (summary["estimate"] is not None)
    assert Page(html).classes("rect")["bar"] == 1  # epsilon_lb; the booleans are not charted


def test_tolerant_of_bundles_without_tables_or_summary(tmp_path):
    html = render_html(read_bundle(write_bundle(tmp_path / "a", "audit")))
    assert "no tables" in html and "Lower bound" not in html
    with pytest.raises(TypeError, match="`bundle` must be a Bundle"):
        render_html(tmp_path / "a")


# --- write_html -----------------------------------------------------------------------------------


@pytest.fixture
def bundle_dir(tmp_path):
    return result_of([[0, 1], [0, 0]]).save(tmp_path / "run")


def test_write_html(bundle_dir, tmp_path):
    out = write_html(bundle_dir, tmp_path / "report.html")
    assert out == tmp_path / "report.html" and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    before = out.read_bytes()
    with pytest.raises(FileExistsError, match=r"`out_path` = .*report.html' exists \(overwrite=True"):
        write_html(bundle_dir, out)
    assert out.read_bytes() == before
    b = read_bundle(bundle_dir)
    assert isinstance(b, Bundle) and write_html(b, str(out), overwrite=True) == out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "run"]


@pytest.mark.parametrize(
    "target, error, match",
    [
        ("missing/report.html", FileNotFoundError, "parent directory does not exist"),
        ("adir", IsADirectoryError, "is a directory"),
        ("-", ValueError, "`out_path` must name a file; got '-'"),
        ("", ValueError, "`out_path` must name a file"),
    ],
)
def test_write_html_refusals_leave_nothing_behind(bundle_dir, tmp_path, target, error, match):
    (tmp_path / "adir").mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(error, match=match):
        write_html(bundle_dir, tmp_path / target if target not in ("-", "") else target, overwrite=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_write_html_checks_the_output_before_reading_the_bundle(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_html(tmp_path / "not-a-bundle", tmp_path / "missing" / "r.html")
    with pytest.raises(BundleError):
        write_html(tmp_path / "not-a-bundle", tmp_path / "r.html")
    with pytest.raises(TypeError, match="`out_path` must be a str or path-like; got int"):
        write_html(tmp_path, 3)
    assert not list(tmp_path.iterdir())


def test_write_html_failure_leaves_no_temporary_file(bundle_dir, tmp_path, monkeypatch):
    import dpbnsl.io.report.html as module

    def boom(fd, mode):
        os.close(fd)
        raise OSError("disk full")

    monkeypatch.setattr(module.os, "fdopen", boom)
    with pytest.raises(OSError, match="disk full"):
        write_html(bundle_dir, tmp_path / "r.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- a real browser -------------------------------------------------------------------------------


def png_pixels(blob: bytes) -> np.ndarray:
    """The pixels of an 8-bit RGB or RGBA, non-interlaced PNG as an (h, w, channels) array."""
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(blob):
        (length,) = struct.unpack(">I", blob[pos : pos + 4])
        kind, body = blob[pos + 4 : pos + 8], blob[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), dtype=np.uint8)
    prev = np.zeros(w * bpp, dtype=np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 1:  # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(w, bpp), axis=0).ravel() % 256
        elif f == 2:  # Up
            cur = (line + prev) % 256
        else:  # Average or Paeth: sequential along the row
            cur = np.zeros_like(line)
            lst, pv = line.tolist(), prev.tolist()
            cl = [0] * len(lst)
            for i, v in enumerate(lst):
                a = cl[i - bpp] if i >= bpp else 0
                b, c = pv[i], (pv[i - bpp] if i >= bpp else 0)
                if f == 3:
                    cl[i] = (v + (a + b) // 2) & 255
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    cl[i] = (v + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
            cur = np.array(cl, dtype=np.int32)
        out[y], prev = cur, cur
    return out.reshape(h, w, bpp)


def test_png_decoder_on_a_known_image():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    rows = b""
    prev = np.zeros(15, dtype=np.int32)
    for y, f in zip(range(7), [0, 1, 2, 3, 4, 1, 4]):
        line = img[y].ravel().astype(np.int32)
        enc = np.zeros_like(line)
        for i in range(15):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], (prev[i - 3] if i >= 3 else 0)
            p = a + b - c
            pred = [
                0,
                a,
                b,
                (a + b) // 2,
                a if abs(p - a) <= min(abs(p - b), abs(p - c)) else (b if abs(p - b) <= abs(p - c) else c),
            ][f]
            enc[i] = (line[i] - pred) % 256
        rows += bytes([f]) + enc.astype(np.uint8).tobytes()
        prev = line

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    blob = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 7, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    assert np.array_equal(png_pixels(blob), img)


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.browser
def test_headless_chromium_draws_the_report(private, data, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome on this machine")
    names = [f"v{i}" for i in range(5)] + [HOSTILE]
    W = np.array(private.W)
    W[0, 5] = W[5, 0] = 0
    W[0, 5] = 1.0  # an extra edge (red), whatever the learner found
    truth = np.array(data.B_true)
    truth[0, 5] = truth[5, 0] = 0
    r = LearnResult(
        private.method,
        W,
        W,
        private.history,
        columns=tuple(names),
        ledger=private.ledger,
        privacy=private.privacy,
        params=private.params,
    )
    report = write_html(r.save(tmp_path / "run", truth=truth), tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    argv = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1200,2000",
        report.absolute().as_uri(),
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("Chromium did not finish the screenshot within 60 s")
    assert shot.is_file() and shot.stat().st_size > 20_000
    px = png_pixels(shot.read_bytes())[..., :3].astype(int)
    assert px.shape[:2] == (2000, 1200)
    colours = {tuple(c) for c in px.reshape(-1, 3)[::7]}
    assert len(colours) > 50
    red, green, blue = px[..., 0], px[..., 1], px[..., 2]
    extra = (red > 180) & (green < 90) & (blue < 90)  # the extra edge and its arrowhead
    tp = (green > 100) & (red < 80) & (blue < 100)  # true positives
    assert extra.sum() > 30 and tp.sum() > 30, (extra.sum(), tp.sum())
    assert px.std() > 10  # not one flat colour
