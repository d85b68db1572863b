"""The page's look and its client-side behaviour: `CSS` and `JS` for ``demo.launch(css=..., js=...)``.

Colours come from Gradio's theme variables (``--body-text-color``, ``--background-fill-primary``,
``--border-color-primary``, ``--color-accent``, ``--error-text-color``...), which Gradio switches between its light
and dark scheme (``body.dark``, following the visitor's system setting). Tints are ``color-mix()`` of a hue into
the theme's background, with the theme's body text on top, so text keeps WCAG AA contrast in both schemes (the
browser tests measure it). Field colours: each class of `playground.render.field_palette` gets a base hue, a
strong shade that carries white text (light scheme) and a light shade that carries dark text (dark scheme).
Gradio's own ``--body-text-color-subdued`` is too faint on white for text (1.9:1), so muted text mixes the body
text colour into the background instead. Dark-scheme rules start with ``.dark`` (not ``body.dark``): Gradio
copies every custom rule under its container's selector, and only a leading ``.dark`` survives that copy.

`JS` wires what needs no server round trip: hovering a legend swatch or a field's key in the editor highlights
that field's regions; clicking a timeline span selects the event-log rows of its events, and clicking a row
selects and scrolls to its span; both pin the inspector through the hidden ``#inspect-request`` box.

The editor's text is kept in this browser as it is typed (`SAVE_EDITOR_JS`, localStorage under
`EDITOR_STORE_KEY`), whatever its size and before the server has answered; `LOAD_EDITOR_JS` puts it back into the
editor at page load (the server then reads it: `playground.handlers.restore_editor`), and `JS` forgets it when the
page itself replaces the editor's text with one that is not an edit (a library pick, an example, a confirmed offer).
"""

from __future__ import annotations

from .render import INK_DARK, INK_LIGHT, field_palette


def _field_css() -> str:
    rules = []
    for cls, (base, strong, light) in field_palette().items():
        rules.append(f".{cls}{{--c:{base};--cs:{strong};--cl:{light}}}")
    return "\n".join(rules)


CSS = """
body{--tl-muted:color-mix(in srgb,var(--body-text-color) 78%,var(--background-fill-primary));
 --tl-tick:color-mix(in srgb,var(--body-text-color) 55%,transparent);--tl-stripe:rgba(0,0,0,.12);
 --ok-color:#166534;--warn-color:#92400e;--bad-color:#b91c1c;--neutral-color:#475569;
 --held-color:#d97706;--err-color:#dc2626;--tpl-bad-line:#fecaca;--tpl-bad-border:#dc2626;
 --tpl-warn-line:#fef3c7;--ink-on-strong:""" + INK_LIGHT + """;--ink-on-light:""" + INK_DARK + """}
body.dark{--tl-stripe:rgba(255,255,255,.16);--ok-color:#4ade80;--warn-color:#fbbf24;--bad-color:#f87171;
 --neutral-color:#94a3b8;--held-color:#fbbf24;--err-color:#f87171;--tpl-bad-line:#7f1d1d;--tpl-bad-border:#f87171;
 --tpl-warn-line:#713f12}
""" + _field_css() + """
#editor-kept .editor-kept-full{margin-top:4px;padding:6px 10px;border-left:3px solid var(--err-color);
 color:var(--body-text-color);background:color-mix(in srgb,var(--err-color) 10%,var(--background-fill-primary));
 font-size:var(--text-sm)}
/* a report made from another template or run than the page now shows (`render.stamped`, the script's markStale) */
.report.report-stale{outline:2px dashed var(--warn-color);outline-offset:3px;border-radius:2px}
.report .stale-note{margin:0 0 6px;padding:6px 10px;border-left:3px solid var(--warn-color);
 color:var(--body-text-color);background:color-mix(in srgb,var(--warn-color) 12%,var(--background-fill-primary));
 font-size:var(--text-sm);font-weight:600}
.stale-download{display:none !important}
/* the Message view (gr.JSON): Gradio 6.31 fixes its token colours for a dark background in both schemes (keys
   2.8:1, strings 2.6:1, ':' 2.1:1 on white: trial 14 M1); ours are at WCAG AA (>= 4.5:1) in each scheme */
#message .json-node{--text-color:#a3452a;--string-color:#9a4a1e;--number-color:#2b6577;--bracket-color:#3d6363;
 --square-bracket-color:#a8323f;--punctuation-color:#4f6b6a;--line-number-color:#5f6872}
.dark #message .json-node{--text-color:#d18770;--string-color:#ce9178;--number-color:#7fa9b6;--bracket-color:#7eb4b3;
 --square-bracket-color:#e0858d;--punctuation-color:#8fbcbb;--line-number-color:#8b949e}
/* ---------------------------------------------------------------- page layout (1400x900: editor, chat and
   the top of the timeline on the first screen) */
.gradio-container .main{padding-top:0 !important}
#header{margin:-6px 0 -4px 0}
#header .hd{display:flex;align-items:baseline;gap:4px 12px;flex-wrap:wrap;color:var(--body-text-color);font-size:14px}
#header .hd h1{font-size:19px;margin:0;font-weight:700;display:flex;align-items:center;gap:6px;white-space:nowrap}
#header .hd h1 .ico{width:22px;height:22px;color:var(--color-accent)}
#header .hd a{color:var(--link-text-color)}
#header .hd .tag{color:var(--body-text-color)}
#status .status{min-height:22px;display:flex;gap:6px;align-items:flex-start;font-size:14px;color:var(--body-text-color)}
#status .status-ok .ico{color:var(--ok-color)}
#status .status-error{color:var(--error-text-color)}
#status .status-error .ico{color:var(--bad-color)}
#status .status-info .ico{color:var(--link-text-color)}
.ico{width:1em;height:1em;flex:none;vertical-align:-0.15em;display:inline-block}
#timeline-head{align-items:center}
#load-model{align-self:center}
#demo-row{gap:8px}
#demo-row .gallery-item,#demo-row button.gallery-item{padding:2px 8px !important;font-size:13px}
#timeline-head .tl-title{font-weight:700;font-size:15px;color:var(--body-text-color)}
#confirm-replace{border:1px solid var(--warn-color);border-radius:8px;padding:6px;
 background:color-mix(in srgb,var(--warn-color) 10%,var(--background-fill-primary))}
#confirm-replace .confirm-q{color:var(--body-text-color);font-size:14px}
#confirm-replace .confirm-q .ico{color:var(--warn-color)}
#inspect-request{position:absolute !important;left:-9999px !important;width:1px !important;height:1px !important;
 overflow:hidden !important}

/* ---------------------------------------------------------------- the timeline and its legend */
#timeline .tl{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;white-space:pre-wrap;
 word-break:break-all;line-height:1.9;max-height:360px;overflow:auto;padding:6px;
 border:1px solid var(--border-color-primary);border-radius:6px;color:var(--body-text-color);
 background:var(--background-fill-primary)}
#timeline .tl span,.evlog td.t{unicode-bidi:isolate}
#timeline .tl span[data-s]{cursor:pointer}
.tlv .b{background-color:color-mix(in srgb,var(--c) 16%,var(--background-fill-primary));border-bottom:2px solid var(--c)}
.dark .tlv .b{background-color:color-mix(in srgb,var(--c) 30%,var(--background-fill-primary))}
.tlv .d{background:var(--cs);color:var(--ink-on-strong);border-radius:4px;padding:0 1px;font-weight:600}
.dark .tlv .d{background:var(--cl);color:var(--ink-on-light)}
.tlv .x{color:var(--tl-muted);text-decoration:line-through}
.tlv .u{color:var(--tl-muted)}
.tlv .p{font-style:italic;outline:1px dashed var(--tl-muted);outline-offset:-1px}
/* stripes only: the field's background-color (.b, .dark .b, .e) must stay longhand so it never resets them */
.tlv .dirty{background-image:repeating-linear-gradient(135deg,transparent 0 5px,var(--tl-stripe) 5px 7px)}
.tlv .cs{box-shadow:inset 1px 0 0 var(--tl-tick)}
.tlv .odd{border-bottom-style:dotted}
.tlv .h{outline:2px dotted var(--held-color);outline-offset:-2px;color:var(--body-text-color);
 background-color:color-mix(in srgb,var(--held-color) 22%,var(--background-fill-primary))}
.tlv .e{text-decoration:underline wavy var(--err-color);text-decoration-skip-ink:none}
.tlv .b.e,.tlv .u.e,.tlv .x.e{background-color:color-mix(in srgb,var(--err-color) 20%,var(--background-fill-primary));
 color:var(--body-text-color)}
/* a failed region's delimiter keeps its field's chip colours (readable), with a red frame */
.tlv .d.e{outline:2px solid var(--err-color);outline-offset:0}
#timeline .tl span.hl{outline:2px solid var(--link-text-color);outline-offset:0}
#timeline .tl span.sel{outline:2px solid var(--color-accent);outline-offset:0;
 box-shadow:0 0 0 3px color-mix(in srgb,var(--color-accent) 35%,transparent)}
.tl-note{font-size:12px;color:var(--tl-muted);margin:2px 0}
.tl-err{color:var(--body-text-color);background:color-mix(in srgb,var(--err-color) 14%,var(--background-fill-primary));
 border:1px solid var(--err-color);border-radius:6px;padding:4px 8px;margin:4px 0;font-size:13px}
.tl-err .ico{color:var(--err-color)}
.tl-warn{color:var(--body-text-color);background:color-mix(in srgb,var(--warn-color) 12%,var(--background-fill-primary));
 border:1px solid var(--warn-color);border-radius:6px;padding:4px 8px;margin:4px 0;font-size:13px}
.tl-warn .ico{color:var(--warn-color)}
.tl-err .tl-note{color:inherit}
.legend{display:flex;flex-wrap:wrap;align-items:center;gap:4px 6px;font-size:12px}
.legend .sw{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px;line-height:1.7;
 color:var(--body-text-color)}
.legend .fsw{background:var(--cs);color:var(--ink-on-strong);font-weight:600;cursor:default}
.dark .legend .fsw{background:var(--cl);color:var(--ink-on-light)}
.legend .marks{display:inline-flex;flex-wrap:wrap;gap:4px 6px}
.legend .sw.cs{padding-left:8px}
.insp .sw{background:var(--cs);color:var(--ink-on-strong);padding:0 6px;border-radius:4px;font-weight:600}
.dark .insp .sw{background:var(--cl);color:var(--ink-on-light)}

/* ---------------------------------------------------------------- event log */
.evlog{max-height:380px;overflow:auto}
.evlog table{font-size:12px;border-collapse:collapse;width:100%;color:var(--body-text-color)}
.evlog td,.evlog th{border-bottom:1px solid var(--border-color-primary);padding:1px 4px;text-align:left;
 vertical-align:top;font-family:ui-monospace,monospace;background:var(--background-fill-primary)}
.evlog td.t{max-width:520px;white-space:pre-wrap;word-break:break-all}
.evlog td.fcol{color:var(--cs);font-weight:600}
.dark .evlog td.fcol{color:var(--cl)}
.evlog tr[data-s]{cursor:pointer}
.evlog tr.sel td{background:color-mix(in srgb,var(--color-accent) 18%,var(--background-fill-primary))}

/* ---------------------------------------------------------------- badges, template status, inspector */
.badge{display:inline-block;border-radius:6px;padding:3px 8px;color:var(--body-text-color);font-size:14px;
 border:1px solid var(--bc);background:color-mix(in srgb,var(--bc) 13%,var(--background-fill-primary))}
.badge .ico{color:var(--bc)}
.badge-ok{--bc:var(--ok-color)}.badge-skip{--bc:var(--warn-color)}.badge-bad{--bc:var(--bad-color)}
.badge-neutral{--bc:var(--neutral-color)}
.badge pre{white-space:pre-wrap;margin:4px 0 0 0;color:var(--body-text-color);background:transparent}
.badge .both{margin-top:2px;font-size:13px}
.tpl-source{font-size:13px;color:var(--body-text-color);margin-bottom:2px}
.tpl-ok{color:var(--body-text-color);font-size:13px}.tpl-ok .ico{color:var(--ok-color)}
.tpl-warn{color:var(--body-text-color);font-size:13px;margin-top:2px;border-left:3px solid var(--warn-color);
 padding-left:6px}
.tpl-warn .ico{color:var(--warn-color)}
.tpl-bad{color:var(--body-text-color);border:1px solid var(--err-color);border-radius:6px;padding:4px 8px;
 background:color-mix(in srgb,var(--err-color) 12%,var(--background-fill-primary));
 max-width:100%;box-sizing:border-box;overflow-wrap:anywhere}
.tpl-bad .ico{color:var(--err-color)}
/* the excerpt keeps its lines (columns line up with the editor) and scrolls inside the box when one is long */
.tpl-bad pre{margin:4px 0;background:var(--background-fill-primary);color:var(--body-text-color);padding:4px;
 overflow-x:auto;max-width:100%}
.tpl-bad mark{background:color-mix(in srgb,var(--err-color) 30%,var(--background-fill-primary));
 color:var(--body-text-color)}
/* the character where a bad regex goes wrong: in the excerpt, and in the editor (the page's script) */
.tpl-bad .tpl-fault{background:var(--err-color);color:var(--background-fill-primary)}
::highlight(tpl-fault){background-color:#dc2626;color:#ffffff}
body.dark ::highlight(tpl-fault){background-color:#f87171;color:#111827}
#inspector{min-height:80px}
.insp,.insp-hint{font-size:13px;color:var(--body-text-color)}
.insp-hint{color:var(--tl-muted)}
.insp-head{display:flex;align-items:center;gap:6px;margin-bottom:4px}
.insp dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:0}
.insp dt{font-weight:600;color:var(--body-text-color)}
.insp dd{margin:0;word-break:break-word;min-width:0}
/* event rows keep their words whole ("region_chunk" never breaks); a row wider than the panel wraps between its
   cells instead of running past the panel's right edge (trial 10 saw "#2 region_chunk stream 11-12 clea") */
.insp dd:has(> .insp-events){overflow-x:auto}
.insp-events,.insp-events tbody{display:block;border-collapse:collapse;font-size:12px;
 font-family:ui-monospace,monospace}
.insp-events tr{display:flex;flex-wrap:wrap;column-gap:8px;border:0;background:none}
.insp-events td{white-space:nowrap;word-break:normal;padding:0;vertical-align:top;border:0}
.insp pre.insp-value{white-space:pre-wrap;max-height:200px;overflow:auto;margin:2px 0;padding:4px;
 background:var(--background-fill-secondary);color:var(--body-text-color);border-radius:4px}
.insp code{color:var(--body-text-color);background:var(--background-fill-secondary)}
.insp table.insp-events td{color:var(--body-text-color)}
.insp .ico{color:var(--color-accent)}

/* ---------------------------------------------------------------- panels and Gradio's own text */
.draft-note-error{color:var(--bad-color)}.draft-note-ok{color:var(--ok-color)}
.doctor-basis{color:var(--tl-muted)}
/* Gradio's primary (orange) and stop (red) buttons carry white text at 3.6:1: darker fills, in both schemes
   (`:root body.dark` outranks Gradio's own `:root .dark`, which set the dark scheme's fill back) */
body,:root body.dark{--button-primary-background-fill:#c2410c;--button-primary-background-fill-hover:#9a3412;
 --button-primary-text-color:#fff;--button-cancel-background-fill:#b91c1c;
 --button-cancel-background-fill-hover:#991b1b;--button-cancel-text-color:#fff}
/* the selected tab's label is the accent orange, 2.8:1 on white: the primary fill's darker orange in light */
body:not(.dark) button[role="tab"].selected{color:#c2410c}
/* CodeMirror's line numbers (1.9:1 on white) and syntax colours (pastels down to 2:1 on white): the theme's text */
.cm-gutters .cm-gutterElement{color:var(--tl-muted) !important}
.cm-content .cm-line span{color:var(--body-text-color) !important}
/* Gradio draws reasoning and tool-call cards at opacity .8, which takes body text below 4.5:1: full strength */
#chatbot .message-content,#parsed-turn .message-content,#chatbot .message-content :not(svg):not(svg *),
#parsed-turn .message-content :not(svg):not(svg *){opacity:1 !important}
/* JSON in chat cards and panels (Gradio's Prism colours are below 4.5:1 in both schemes) */
body{--tok-key:#9d174d;--tok-str:#166534;--tok-num:#1e40af}
body.dark{--tok-key:#f9a8d4;--tok-str:#86efac;--tok-num:#93c5fd}
code .token.punctuation,code .token.operator{color:var(--body-text-color) !important}
code .token.property{color:var(--tok-key) !important}
code .token.string{color:var(--tok-str) !important}
code .token.number,code .token.boolean,code .token.null,code .token.keyword{color:var(--tok-num) !important}

/* ---------------------------------------------------------------- phone width: rows wrap, wide pieces take a line
   of their own (Gradio sets flex and min-width inline, hence !important) */
#timeline-head .tl-title{white-space:nowrap}
#timeline-title{flex-shrink:0 !important;min-width:max-content !important}
@media (max-width:700px){
 #header .hd h1{white-space:normal}
 .row:has(> #status),#timeline-head{flex-wrap:wrap !important}
 #status,#legend,#timeline-from{flex:1 1 100% !important;min-width:100% !important}
 #legend{order:1}
 #timeline-from{order:2}
}
"""

#: localStorage key of the editor's kept text: ``{"text": str, "saved": ms since the epoch}`` (plain JSON)
EDITOR_STORE_KEY = "response-template-playground-editor"

#: Client-side handler of the editor's ``input`` event (``js=``; the editor's text in, `#editor-kept`'s HTML out):
#: keeps the text in localStorage. When the browser refuses (its storage for this site is full), the older copy is
#: dropped, so a reload cannot bring back a text older than the one the note says is not kept.
SAVE_EDITOR_JS = r"""
(text) => {
  const key = "__KEY__";
  try {
    localStorage.setItem(key, JSON.stringify({text: text, saved: Date.now()}));
    return '';
  } catch (err) {
    try { localStorage.removeItem(key); } catch (e) {}
    const n = (text || '').length.toLocaleString('en-US');
    return '<div class="editor-kept-full" role="alert">This browser\'s storage for this site is full: the ' +
      'editor\'s text (' + n + ' characters) is not kept here, and a reload would bring back the built-in ' +
      'template. Copy the text somewhere safe, or free this site\'s storage in the browser\'s settings.</div>';
  }
}
""".replace("__KEY__", EDITOR_STORE_KEY)

#: Client-side page-load step (``js=``; the editor's text in and out): the kept text, when there is one, else the
#: editor's own.
LOAD_EDITOR_JS = r"""
(current) => {
  try {
    const kept = JSON.parse(localStorage.getItem("__KEY__") || 'null');
    if (kept && typeof kept.text === 'string' && kept.text.trim()) return kept.text;
  } catch (err) {}
  return current;
}
""".replace("__KEY__", EDITOR_STORE_KEY)

JS = r"""
() => {
  if (window.__rtpWired) return;
  window.__rtpWired = true;
  let sel = null;  // {a, b, scroll}: the selected span of text, kept across redraws of the timeline
  const q = (s, r) => (r || document).querySelector(s);
  const qa = (s, r) => Array.from((r || document).querySelectorAll(s));
  function ask(what) {  // the hidden box: the server pins the inspector (and moves the window when needed)
    const box = q('#inspect-request textarea, #inspect-request input');
    if (!box) return;
    box.value = what + ':' + Date.now();
    box.dispatchEvent(new Event('input', {bubbles: true}));
  }
  function overlaps(el, a, b) {
    const s = +el.dataset.s, e = +el.dataset.e;
    return a === b ? (s <= a && a < e) || (s === e && s === a) : s < b && a < e;
  }
  function scrollInto(el, box) {
    if (!el || !box) return;
    const r = el.getBoundingClientRect(), c = box.getBoundingClientRect();
    if (r.top < c.top || r.bottom > c.bottom) box.scrollTop += r.top - c.top - c.height / 3;
  }
  function markSpans(scroll) {
    qa('#timeline .tl span.sel').forEach(s => s.classList.remove('sel'));
    if (!sel) return false;
    const hits = qa('#timeline .tl span[data-s]').filter(s => overlaps(s, sel.a, sel.b));
    hits.forEach(s => s.classList.add('sel'));
    if (scroll && hits.length) scrollInto(hits[0], q('#timeline .tl'));
    return hits.length > 0;
  }
  function markRows(scroll) {
    qa('#events tr.sel').forEach(r => r.classList.remove('sel'));
    if (!sel) return;
    const hits = qa('#events tr[data-s]').filter(r => overlaps(r, sel.a, sel.b));
    hits.forEach(r => r.classList.add('sel'));
    if (scroll && hits.length) scrollInto(hits[0], q('#events .evlog'));
    return hits.length > 0;
  }
  function caret(e, span) {
    const n = (+span.dataset.e) - (+span.dataset.s);
    const r = document.caretRangeFromPoint ? document.caretRangeFromPoint(e.clientX, e.clientY) : null;
    if (!r || !span.contains(r.startContainer) || span.textContent.length !== n) return 0;
    return Math.max(0, Math.min(n - 1, r.startOffset));
  }
  document.addEventListener('click', e => {
    const span = e.target.closest && e.target.closest('#timeline .tl span[data-s]');
    if (span) {
      sel = {a: +span.dataset.s, b: +span.dataset.e};
      markSpans(false);
      if (!markRows(true)) sel.rows = true;  // its rows are not in the log yet: the server redraws it around them
      ask('pin:' + (sel.a + caret(e, span)));
      return;
    }
    const row = e.target.closest && e.target.closest('#events tr[data-s]');
    if (row) {
      sel = {a: +row.dataset.s, b: +row.dataset.e, scroll: true};
      markRows(false);
      const drawn = markSpans(true);
      if (drawn) sel.scroll = false;
      ask((drawn ? 'pin:' : 'show:') + sel.a);
    }
  });
  function highlight(field) {
    qa('#timeline .tl span.hl').forEach(s => s.classList.remove('hl'));
    if (field === null) return;
    qa('#timeline .tl span[data-f]').forEach(s => { if (s.dataset.f === field) s.classList.add('hl'); });
  }
  function fieldOfKey(el) {  // a JSON key token in the editor that names a field of the legend
    if (!el.closest || !el.closest('#template .cm-content')) return null;
    const t = (el.textContent || '').trim();
    if (t.length < 3 || t[0] !== '"' || t[t.length - 1] !== '"') return null;
    const next = el.nextSibling ? el.nextSibling.textContent : '';
    if (!/^\s*:/.test(next || '')) return null;
    let name;
    try { name = JSON.parse(t); } catch (err) { return null; }
    return qa('#legend .fsw[data-f]').some(s => s.dataset.f === name) ? name : null;
  }
  document.addEventListener('mouseover', e => {
    const t = e.target;
    if (!t.closest) return;
    const sw = t.closest('#legend .fsw[data-f]');
    if (sw) { highlight(sw.dataset.f); return; }
    const key = fieldOfKey(t);
    if (key !== null) { highlight(key); return; }
    if (q('#timeline .tl span.hl') && !t.closest('#timeline')) highlight(null);
  });
  document.addEventListener('focusin', e => {
    const sw = e.target.closest && e.target.closest('#legend .fsw[data-f]');
    if (sw) highlight(sw.dataset.f);
  });
  let watching = false;
  function watch() {  // after the first selection: a redraw of the timeline or the log keeps it
    if (watching) return;
    const targets = [q('#timeline'), q('#events')].filter(Boolean);
    if (!targets.length) return;
    watching = true;
    const ob = new MutationObserver(() => {
      if (!sel) return;
      const tl = q('#timeline .tl');
      if (tl && tl.dataset.status === 'streaming') { sel = null; return; }  // a new run: nothing selected
      const scroll = !!sel.scroll;
      if (markSpans(scroll) && scroll) sel.scroll = false;
      if (markRows(!!sel.rows) && sel.rows) sel.rows = false;
    });
    targets.forEach(t => ob.observe(t, {childList: true, subtree: true}));
  }
  document.addEventListener('click', () => { if (sel) watch(); });
  // The page replaced the editor's text (a library pick, an example, a confirmed offer: #editor-set's number
  // changes with it): show the new text from its first column, not at the old text's horizontal scroll; a text
  // that is not an edit is not kept (a reload starts from the page's own template, as without edits).
  let editorSet = null;
  function editorReplaced() {
    const mark = q('#editor-set');
    if (!mark || mark.dataset.n === editorSet) return;
    const first = editorSet === null;
    editorSet = mark.dataset.n;
    if (first) return;
    if (mark.dataset.edited === '0') {
      try { localStorage.removeItem("__KEY__"); } catch (err) {}
      qa('#editor-kept .editor-kept-full').forEach(n => n.remove());
    }
    const reset = () => { const sc = q('#template .cm-scroller'); if (sc) sc.scrollLeft = 0; };
    requestAnimationFrame(() => { reset(); setTimeout(reset, 50); });
  }
  // The element CodeMirror draws for line n (1-based) of the editor's text, or null when that line is not drawn.
  // CodeMirror draws only the lines near its viewport, with a gap element standing for the others, so in a long
  // text the n-th child is another line: when a gap is there, the line is found beside its line number in the
  // gutter instead.
  function editorLine(n) {
    const content = q('#template .cm-content');
    if (!content || !(n > 0)) return null;
    const kids = Array.from(content.children);
    if (kids.every(k => k.classList.contains('cm-line'))) return kids[n - 1] || null;  // every line drawn
    const num = qa('#template .cm-lineNumbers .cm-gutterElement').find(g => g.textContent === String(n));
    if (!num) return null;
    const y = num.getBoundingClientRect().top + 1;
    return kids.find(k => {
      if (!k.classList.contains('cm-line')) return false;
      const r = k.getBoundingClientRect();
      return r.top <= y && y < r.bottom;
    }) || null;
  }
  // The status names the faulty line (#tpl-error's data-line) and each line holding a value of the wrong type
  // (.tpl-warn's data-line): give those lines a background in the editor, by a rule on their place among the
  // editor's drawn elements. Redone whenever CodeMirror redraws (scrolling draws other lines).
  function markLines() {
    const rules = [];
    const add = (sel, paint) => qa(sel).forEach(el => {
      const line = editorLine(+el.dataset.line);
      if (line) rules.push(`#template .cm-content > :nth-child(${Array.from(line.parentNode.children).indexOf(line) + 1}){${paint}}`);
    });
    add('#template-status .tpl-warn[data-line]', 'background:var(--tpl-warn-line)');
    add('#template-status #tpl-error[data-line]', 'background:var(--tpl-bad-line);outline:1px solid var(--tpl-bad-border)');
    let style = q('#tpl-line-marks');
    if (!style) {
      style = document.createElement('style');
      style.id = 'tpl-line-marks';
      document.head.appendChild(style);
    }
    const css = rules.join('\n');
    if (style.textContent !== css) style.textContent = css;
  }
  // A bad regex: the status names the line and column of the fault's character in the JSON text
  // (#tpl-error's data-fault-line/-column, columns in characters); mark that character in the editor with a
  // CSS highlight, which leaves CodeMirror's own DOM alone. Redone when CodeMirror redraws the line.
  function markFault() {
    markLines();
    if (!window.CSS || !CSS.highlights || typeof Highlight === 'undefined') return;
    const bad = q('#tpl-error[data-fault-line]');
    const line = bad && editorLine(+bad.dataset.faultLine);
    if (!line) { CSS.highlights.delete('tpl-fault'); return; }
    let left = +bad.dataset.faultColumn - 1;  // characters before the fault: code points, as the server counts
    const walk = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const chars = Array.from(node.data);
      if (left < chars.length) {
        const at = chars.slice(0, left).join('').length;  // UTF-16 units, as a Range counts
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + chars[left].length);
        CSS.highlights.set('tpl-fault', new Highlight(range));
        return;
      }
      left -= chars.length;
    }
    CSS.highlights.delete('tpl-fault');
  }
  // Reports (Doctor, Export) carry what they were made from (`render.stamped`): the template's digest, and for a
  // run's checks the run's; one made from another template than the editor's (#editor-set) or another run than
  // the timeline's (#run-mark) says so, until it is made again, and an export's download of another template is
  // hidden. Back to the same text (an undone edit), the report is current again.
  const STALE = {
    template: 'Made from an earlier version of the template: run it again for the one in the editor.',
    run: 'Made from an earlier run: check it again for the run shown now.',
    download: 'Exported from an earlier version of the template: export again to download the one in the editor.'};
  const exported = {};  // download selector -> digest of the template its files hold
  function markStale() {
    const mark = q('#editor-set');
    if (!mark || mark.dataset.template === undefined) return;
    const tpl = mark.dataset.template;
    const runMark = q('#run-mark');
    const run = runMark ? runMark.dataset.run : '';
    qa('.report[data-for-template]').forEach(el => {
      const why = el.dataset.forTemplate !== tpl ? (el.dataset.download ? 'download' : 'template')
        : el.dataset.forRun !== undefined && el.dataset.forRun !== run ? 'run' : null;
      let note = el.querySelector(':scope > .stale-note');
      el.classList.toggle('report-stale', why !== null);
      if (why === null) { if (note) note.remove(); }
      else if (!note || note.dataset.why !== why) {
        if (note) note.remove();
        note = document.createElement('div');
        note.className = 'stale-note';
        note.setAttribute('role', 'note');
        note.dataset.why = why;
        note.textContent = STALE[why];
        el.prepend(note);
      }
      if (el.dataset.download) exported[el.dataset.download] = el.dataset.forTemplate;
    });
    for (const [sel, made] of Object.entries(exported)) {
      const box = q(sel);
      if (box) box.classList.toggle('stale-download', made !== tpl);
    }
  }
  let staleQueued = false;
  new MutationObserver(() => {  // once a frame at most: a streaming run redraws the timeline many times a second
    if (staleQueued) return;
    staleQueued = true;
    requestAnimationFrame(() => { staleQueued = false; markStale(); });
  }).observe(document.body, {childList: true, subtree: true});
  (function hook(tries) {  // the script may run before the page's components are drawn
    const status = q('#template-status');
    if (!status) { if (tries < 100) setTimeout(() => hook(tries + 1), 100); return; }
    editorReplaced();
    markFault();
    new MutationObserver(() => { editorReplaced(); markFault(); }).observe(status, {childList: true, subtree: true});
  })(0);
  (function hookEditor(tries) {
    const content = q('#template .cm-content');
    if (!content) { if (tries < 100) setTimeout(() => hookEditor(tries + 1), 100); return; }
    markFault();
    new MutationObserver(markFault).observe(content, {childList: true, subtree: true, characterData: true});
  })(0);
}
""".replace("__KEY__", EDITOR_STORE_KEY)
