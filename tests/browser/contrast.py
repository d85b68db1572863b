"""WCAG 2 text contrast of what the page draws, measured in the browser.

`contrast_failures(page, roots)` looks at every element under the ``roots`` selectors that has text of its own
(a non-blank text node child) and is rendered, and computes the contrast ratio between its text colour and the
background it sits on: the element's and its ancestors' background colours composed from the page down
(colour-mix(), color(), oklab() values are read back through a canvas, so any CSS colour counts), with the
element's own opacity applied to its text. Background images (the stripes of dirty chunks) are ignored.
AA thresholds: 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold).
"""

from __future__ import annotations

_JS = r"""
(roots) => {
  const cv = document.createElement('canvas'); cv.width = cv.height = 1;
  const cx = cv.getContext('2d', {willReadFrequently: true});
  const cache = new Map();
  function rgba(s) {
    if (cache.has(s)) return cache.get(s);
    cx.clearRect(0, 0, 1, 1);
    cx.fillStyle = '#010203'; cx.fillStyle = s;
    let out = null;
    if (cx.fillStyle !== '#010203' || s === '#010203') {
      cx.fillRect(0, 0, 1, 1);
      const d = cx.getImageData(0, 0, 1, 1).data;
      out = [d[0], d[1], d[2], d[3] / 255];
    }
    cache.set(s, out);
    return out;
  }
  function over(top, bottom) {  // bottom is opaque
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  }
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function ratio(a, b) { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); }
  function background(el) {
    const chain = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { chain.push(c); if (c[3] >= 0.999) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = chain.length - 1; i >= 0; i--) bg = over(chain[i], bg);
    return bg;
  }
  function opacity(el) {
    let o = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity);
    return o;
  }
  function name(el) {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    if (el.classList.length) s += '.' + Array.from(el.classList).join('.');
    const p = el.parentElement;
    return (p ? (p.id ? p.tagName.toLowerCase() + '#' + p.id : p.tagName.toLowerCase() +
            (p.classList.length ? '.' + Array.from(p.classList).join('.') : '')) + ' > ' : '') + s;
  }
  const failures = [], seen = new Set();
  let checked = 0;
  for (const sel of roots) {
    for (const root of document.querySelectorAll(sel)) {
      for (const el of [root, ...root.querySelectorAll('*')]) {
        if (seen.has(el)) continue;
        seen.add(el);
        if (['STYLE', 'SCRIPT', 'TEXTAREA', 'INPUT', 'OPTION', 'TITLE'].includes(el.tagName)) continue;
        if (el.closest('svg')) continue;
        const own = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join('');
        if (!own.trim()) continue;
        if (!el.getClientRects().length) continue;
        const st = getComputedStyle(el);
        if (st.visibility === 'hidden' || st.display === 'none') continue;
        if (opacity(el) < 0.05) continue;  // not shown (a faded-out overlay): nothing to read
        const fg0 = rgba(st.color);
        if (!fg0) continue;
        const bg = background(el);
        const fg = over([fg0[0], fg0[1], fg0[2], fg0[3] * opacity(el)], bg);
        const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight) >= 700;
        const need = (size >= 24 || (size >= 18.66 && bold)) ? 3 : 4.5;
        const r = ratio(fg, bg);
        checked++;
        if (r < need - 0.005) failures.push({where: name(el), text: own.trim().slice(0, 40),
          color: st.color, fg: fg.slice(0, 3), bg: bg.slice(0, 3), ratio: Math.round(r * 100) / 100, need});
      }
    }
  }
  return {checked, failures};
}
"""


def contrast_report(page, roots: list[str]) -> dict:
    """``{"checked": n, "failures": [...]}`` for the text under ``roots`` (CSS selectors) on ``page``."""
    return page.evaluate(_JS, roots)


_PENDING = r"""
roots => {
  const out = [];
  for (const sel of roots) for (const root of document.querySelectorAll(sel)) {
    const block = root.closest('.block') || root;
    for (const t of block.querySelectorAll('[data-testid=status-tracker]'))
      if (!t.classList.contains('hide')) out.push(`${sel}: ${t.className}`);
    // an output of an event running elsewhere is faded, and fades back in (Gradio's own design fades text to .8
    // at most): wait for that to end
    const chain = [];
    for (let e = root.parentElement; e && e.nodeType === 1; e = e.parentElement) chain.push(e);
    for (const e of [...chain, root, ...root.querySelectorAll('*')]) {
      const o = parseFloat(getComputedStyle(e).opacity);
      if (o >= 0.05 && o < 0.79 && !e.closest('svg')) out.push(`${sel}: ${e.tagName.toLowerCase()} at opacity ${o}`);
    }
  }
  return out;
}
"""


def settle(page, roots: list[str], timeout: float = 60000) -> None:
    """Wait until no event that writes ``roots`` is pending: Gradio dims an output while such an event runs (its
    status tracker shows, the content fades), and a view is measured at its final colours only once it is done."""
    try:
        page.wait_for_function(f"roots => ({_PENDING})(roots).length === 0", arg=roots, timeout=timeout)
    except Exception as e:
        raise AssertionError(f"still pending after {timeout / 1000:g} s: {page.evaluate(_PENDING, roots)[:8]}") from e


def assert_readable(page, roots: list[str], min_checked: int = 1) -> int:
    """Fail with every element whose text is below WCAG AA contrast under ``roots``; returns how many
    text elements were checked (at least ``min_checked``, so an empty view cannot pass)."""
    settle(page, roots)
    report = contrast_report(page, roots)
    bad = report["failures"]
    assert not bad, f"{len(bad)} text elements below WCAG AA contrast: " + "; ".join(
        f"{f['where']} {f['text']!r}: {f['ratio']}:1 < {f['need']}:1 (text {f['fg']} on {f['bg']})" for f in bad[:12])
    assert report["checked"] >= min_checked, f"only {report['checked']} text elements under {roots}"
    return report["checked"]
