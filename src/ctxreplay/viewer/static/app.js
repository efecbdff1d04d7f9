// ctxreplay view: the case browser. One script, no build step. Every text a trace holds is put
// in the page as a text node (never as markup), so no trace can run code here.
"use strict";

const BUNDLE = window.CTXREPLAY_BUNDLE || null;
const loaded = {};
const waiting = {};
window.CTXREPLAY_PUT = (key, value) => {
  loaded[key] = value;
  (waiting[key] || []).forEach((resolve) => resolve(value));
  delete waiting[key];
};

// --- elements ------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
const num = (x, d = 1) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
const usd = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(4));
const label = (l) => el("span", { class: "l-" + (l || "none") }, (l || "–").replace("_", " "));

function link(params, ...children) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const x of [].concat(v)) if (x !== null && x !== undefined && x !== "") q.append(k, x);
  }
  return el("a", { href: "?" + q.toString() }, ...children);
}

// a page's content, leaving out the parts it does not have (replaceChildren would write "null")
function fill(main, ...children) {
  main.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

function tok(text) {
  return el("span", { class: "tok" }, text);
}

function copyable(name, text) {
  const copy = el("button", { class: "copy", type: "button", title: "copy" }, "copy");
  copy.addEventListener("click", () => {
    if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
    const range = document.createRange();
    range.selectNodeContents(copy.previousSibling);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  });
  return el("div", { class: "cmd" }, el("span", { class: "meta" }, name), tok(text), copy);
}

// text with spans marked: spans [{start, end, make(segment) → element}], overlaps skipped
function marked(text, spans, attrs) {
  const pre = el("pre", Object.assign({ class: "text" }, attrs || {}));
  let at = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start || b.end - a.end)) {
    if (s.start < at || s.end > text.length || s.start >= s.end) continue;
    if (s.start > at) pre.append(document.createTextNode(text.slice(at, s.start)));
    pre.append(s.make(text.slice(s.start, s.end)));
    at = s.end;
  }
  if (at < text.length) pre.append(document.createTextNode(text.slice(at)));
  return pre;
}

// --- data: the server's JSON routes, or a bundle's script files ----------------------------

function script(key, src) {
  if (key in loaded) return Promise.resolve(loaded[key]);
  return new Promise((resolve, reject) => {
    (waiting[key] = waiting[key] || []).push(resolve);
    const s = el("script", { src });
    s.addEventListener("error", () => reject(new Error("cannot read " + src)));
    document.body.append(s);
  });
}

async function api(path, params, body) {
  if (!BUNDLE) {
    const q = params ? "?" + params.toString() : "";
    const init = body === undefined ? {} : {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    };
    const r = await fetch("api/" + path + q, init);
    const j = await r.json();
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  }
  const p = params || new URLSearchParams();
  if (path === "meta") return BUNDLE.meta;
  if (path === "frontier") return BUNDLE.frontier;
  if (path === "grid") return bundleGrid(p);
  if (path === "case") {
    const n = BUNDLE.cases[p.get("case") + "\u0000" + p.get("policy")];
    if (n === undefined) throw new Error("this bundle has no page for that case and policy");
    return script("case:" + n, "data/case/" + n + ".js");
  }
  if (path === "ab") {
    const pol = BUNDLE.ab_policies;
    const a = p.get("a") || pol[0], b = p.get("b") || pol[1];
    const n = BUNDLE.ab[a + "\u0000" + b];
    if (n === undefined) throw new Error("this bundle has no A/B page for those policies");
    return script("ab:" + n, "data/ab/" + n + ".js");
  }
  throw new Error("a bundle cannot do that: start `ctxreplay view RUN` for it");
}

// the grid's filter, order and page over a bundle's rows (the server does this in grid.py)
function bundleGrid(p) {
  const f = BUNDLE.facets;
  const policies = p.getAll("policy").filter(Boolean);
  const lab = p.get("label"), cat = p.get("category"), corpus = p.get("corpus");
  const q = (p.get("q") || "").trim().toLowerCase();
  const disagree = ["1", "true", "yes"].includes(p.get("disagree"));
  let rows = BUNDLE.rows.filter((r) =>
    (!policies.length || policies.includes(r.policy)) && (!lab || r.label === lab) &&
    (!cat || cat in r.categories) && (!corpus || r.corpus === corpus) &&
    (!disagree || r.disagree) && (!q || r.search.includes(q)));
  const sort = p.get("sort") || "row";
  const desc = ["1", "true", "yes"].includes(p.get("desc"));
  const value = (r) => (sort.startsWith("judge:") ? r.judges[sort.slice(6)] : r[sort]);
  rows = rows.slice().sort((a, b) => {
    const x = value(a), y = value(b);
    if (x === y || (x == null && y == null)) return a.row - b.row;
    if (x == null) return 1;
    if (y == null) return -1;
    return ((x < y ? -1 : 1) * (desc ? -1 : 1)) || a.row - b.row;
  });
  const size = Math.min(Math.max(parseInt(p.get("size") || "50", 10) || 50, 1), 500);
  const pages = Math.max(1, Math.ceil(rows.length / size));
  const page = Math.min(Math.max(parseInt(p.get("p") || "1", 10) || 1, 1), pages);
  return Object.assign({
    total: BUNDLE.rows.length, matched: rows.length, page, pages, size,
    rows: rows.slice((page - 1) * size, page * size),
  }, f);
}

// --- the grid ------------------------------------------------------------------------------

const NUMERIC = new Set(["cut", "pruning", "editable", "losses", "recoveries", "usd", "usd_saved"]);

function cell(key, r) {
  if (key === "case_id") return el("td", {}, link({ page: "case", case: r.case_id, policy: r.policy }, tok(r.case_id)));
  if (key === "session_id" || key === "policy") return el("td", {}, tok(r[key]));
  if (key === "pruning" || key === "editable") return el("td", { class: "num" }, pct(r[key]));
  if (key === "usd" || key === "usd_saved") return el("td", { class: "num" }, usd(r[key]));
  if (key === "label") return el("td", {}, label(r.label));
  if (key === "strict") return el("td", {}, r.strict === null ? "–" : r.strict ? "yes" : "no");
  if (key === "losses") {
    const text = Object.entries(r.categories).map(([c, n]) => c.replace(/_/g, " ") + " " + n).join(", ");
    return el("td", { class: "num", title: text }, String(r.losses));
  }
  if (key.startsWith("judge:")) return el("td", {}, label(r.judges[key.slice(6)]));
  return el("td", { class: NUMERIC.has(key) ? "num" : "" }, r[key] === null ? "–" : String(r[key]));
}

function select(name, options, current, attrs) {
  const s = el("select", Object.assign({ name }, attrs || {}));
  for (const [value, text] of options) {
    const o = el("option", { value }, text);
    if ([].concat(current).includes(value)) o.selected = true;
    s.append(o);
  }
  return s;
}

async function gridPage(main, params) {
  const data = await api("grid", params);
  const go = (changes) => {
    const q = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      q.delete(k);
      for (const x of [].concat(v)) if (x !== "" && x !== null && x !== undefined) q.append(k, x);
    }
    q.set("page", "grid");
    if (!("p" in changes)) q.delete("p");
    navigate(q);
  };
  const policy = select("policy", data.policies.map((p) => [p, p]), params.getAll("policy"), { multiple: true, id: "f-policy" });
  const any = [["", "any"]];
  const lab = select("label", any.concat(data.labels.map((l) => [l, l.replace("_", " ")])), params.get("label") || "", { id: "f-label" });
  const cat = select("category", any.concat(data.categories.map((c) => [c, c.replace(/_/g, " ")])), params.get("category") || "", { id: "f-category" });
  const corpus = select("corpus", any.concat(data.corpora.map((c) => [c, c])), params.get("corpus") || "", { id: "f-corpus" });
  const disagree = el("input", { type: "checkbox", id: "f-disagree", checked: ["1", "true"].includes(params.get("disagree")) });
  const q = el("input", { type: "search", id: "f-q", value: params.get("q") || "", placeholder: "case, session, policy, lost text" });
  const apply = () => go({
    policy: [...policy.selectedOptions].map((o) => o.value), label: lab.value, category: cat.value,
    corpus: corpus.value, disagree: disagree.checked ? "1" : "", q: q.value,
  });
  for (const c of [policy, lab, cat, corpus, disagree]) c.addEventListener("change", apply);
  q.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
  const filters = el("div", { class: "filters" },
    el("label", {}, "policy", policy), el("label", {}, "label (" + (data.judge || "no judge") + ")", lab),
    el("label", {}, "lost category", cat), el("label", {}, "corpus", corpus),
    el("label", {}, "judges disagree", disagree), el("label", {}, "search", q),
    el("button", { type: "button", id: "f-apply", onclick: apply }, "filter"));
  const sort = params.get("sort") || "row";
  const desc = ["1", "true"].includes(params.get("desc"));
  const head = el("tr", {});
  for (const [key, title] of Object.entries(data.columns)) {
    const cls = "sortable" + (sort === key ? (desc ? " sorted-desc" : " sorted-asc") : "");
    head.append(el("th", { class: cls, "data-key": key, onclick: () => go({ sort: key, desc: sort === key && !desc ? "1" : "" }) }, title));
  }
  const body = el("tbody", {});
  for (const r of data.rows) {
    const tr = el("tr", { "data-case": r.case_id, "data-policy": r.policy });
    for (const key of Object.keys(data.columns)) tr.append(cell(key, r));
    body.append(tr);
  }
  const pager = el("div", { class: "pager" },
    el("button", { type: "button", id: "prev", disabled: data.page <= 1, onclick: () => go({ p: String(data.page - 1) }) }, "‹ previous"),
    el("span", { id: "matched" }, `page ${data.page} of ${data.pages} · ${data.matched.toLocaleString()} of ${data.total.toLocaleString()} pairs`),
    el("button", { type: "button", id: "next", disabled: data.page >= data.pages, onclick: () => go({ p: String(data.page + 1) }) }, "next ›"));
  fill(main, el("h1", {}, "Cases"), filters, pager,
    el("div", { class: "scroll" }, el("table", { id: "grid" }, el("thead", {}, head), body)));
  window.__gridPainted = performance.now();
}

// --- a case --------------------------------------------------------------------------------

function objectLine(m) {
  return el("div", { class: "meta" },
    m.index === null ? "+ added" : `#${m.index} · seq ${m.seq} · ${m.role} · `,
    ...m.objects.map((o) => el("span", {}, tok(o.id), " ", el("span", { class: "badge a-" + o.action.split(" ")[0].replace("*", "") }, o.action),
      o.dropped_reason ? el("span", { class: "meta" }, " (dropped: " + o.dropped_reason + ")") : null, " ")));
}

async function casePage(main, params) {
  const d = await api("case", params);
  const losses = [];
  d.verdicts.forEach((v, j) => v.losses.forEach((loss, k) => losses.push(Object.assign({ judge: v.judge, id: `src-${j}-${k}` }, loss))));
  const sources = {}, needs = {};
  for (const l of losses) {
    if (l.source_index !== undefined) (sources[l.source_index] = sources[l.source_index] || []).push(l);
    if (l.need_start !== undefined) (needs[l.need_seq] = needs[l.need_seq] || []).push(l);
  }
  // one mark per span drawn (as ``marked`` draws them); a loss whose span overlaps a drawn one
  // links to that one
  for (const list of Object.values(sources)) {
    const drawnSpans = [];
    for (const l of [...list].sort((a, b) => a.source_start - b.source_start || b.source_end - a.source_end)) {
      const over = drawnSpans.find((x) => l.source_start < x.source_end && l.source_end > x.source_start);
      if (over) l.target = over.id;
      else { l.target = l.id; drawnSpans.push(l); }
    }
  }
  const rows = el("tbody", {});
  for (const m of d.messages) {
    const left = m.index === null ? el("td", { class: "prefix" }) : el("td", { class: "prefix" }, objectLine(m),
      marked(m.text, (sources[m.index] || []).filter((l) => l.target === l.id).map((l) => ({ start: l.source_start, end: l.source_end,
        make: (t) => el("mark", { class: "src", id: l.id, title: `${l.category} · needed at seq ${l.need_seq} (${l.judge})` }, t) }))));
    const right = el("td", { class: "view" }, el("span", { class: "badge a-" + m.status }, m.status),
      ` ${m.tokens.toLocaleString()} → ${m.tokens_after.toLocaleString()} tokens`);
    if (m.index === null) right.prepend(objectLine(m), " ");
    if (m.view === null) right.append(el("div", { class: "meta" }, "as in the prefix"));
    else if (!m.view.length) right.append(el("div", { class: "meta" }, "(removed from the view)"));
    else for (const v of m.view) right.append(el("pre", { class: "text view-text" }, v.text || "(empty)"));
    rows.append(el("tr", { class: "st-" + m.status, "data-index": m.index === null ? "" : m.index }, left, right));
  }
  const future = el("div", { id: "future" });
  for (const f of d.future) {
    future.append(el("div", { class: "future", id: "f-" + f.seq }, el("div", { class: "meta" }, `seq ${f.seq} · ${f.role}`),
      marked(f.text, (needs[f.seq] || []).filter((l) => l.source_index !== undefined).map((l) => ({ start: l.need_start, end: l.need_end,
        make: (t) => el("a", { class: "need", href: "#" + l.target, "data-loss": l.id, title: "held in the prefix: " + l.anchor }, t) })))));
  }
  const lossList = el("ol", { id: "losses" });
  for (const l of losses) {
    lossList.append(el("li", {}, el("b", {}, l.category.replace(/_/g, " ")), ` (${l.judge}) · from `, tok(l.source_object || "–"),
      " · ", l.source_index !== undefined ? el("a", { href: "#" + l.target, class: "to-source" }, "held at #" + l.source_index) : "not found in the prefix",
      " · ", el("a", { href: "#f-" + l.need_seq }, "needed at seq " + l.need_seq),
      el("div", {}, el("span", { class: "meta" }, "lost: "), l.anchor), l.detail ? el("div", { class: "meta" }, l.detail) : null));
  }
  const verdicts = el("div", { id: "verdicts" });
  for (const v of d.verdicts) {
    const box = el("div", { class: "verdict", "data-judge": v.judge }, el("b", {}, v.judge), ": ", label(v.label),
      v.unscored_reason ? " — " + v.unscored_reason : "", v.explanation ? el("div", { class: "meta" }, v.explanation) : null);
    if (v.actions) {
      const t = el("table", { class: "actions" }, el("tr", {}, el("th", {}, "field"), el("th", {}, "baseline (full prefix)"), el("th", {}, "view")));
      for (const a of v.actions) t.append(el("tr", { class: a.same ? "same" : "differs" }, el("td", {}, a.field, a.same ? "" : " ≠"), el("td", {}, el("pre", { class: "text" }, a.baseline)), el("td", {}, el("pre", { class: "text" }, a.view))));
      box.append(t);
    }
    if (v.probes) {
      const t = el("table", { class: "probes" }, el("tr", {}, el("th", {}, "kind"), el("th", {}, "question"), el("th", {}, "answer from the view"), el("th", {}, "right")));
      for (const p of v.probes) t.append(el("tr", {}, el("td", {}, p.kind), el("td", {}, p.question), el("td", {}, p.answer), el("td", {}, p.correct ? "yes" : "no")));
      box.append(t);
    }
    verdicts.append(box);
  }
  const others = el("div", { id: "policies" }, el("span", { class: "meta" }, "policies of this case: "));
  for (const p of d.policies) {
    const a = link({ page: "case", case: d.case_id, policy: p.policy }, p.policy);
    a.className = "policy-link" + (p.policy === d.policy ? " current" : "");
    others.append(a, " ", label(p.label), "  ");
  }
  const f = d.figures;
  fill(main, 
    el("h1", {}, "case ", tok(d.case_id), " · ", tok(d.policy)),
    el("div", { class: "meta", id: "figures" }, `prefix ${Number(f.prefix_tokens).toLocaleString()} → view ${Number(f.view_tokens).toLocaleString()} tokens · pruning ${pct(f.pruning_rate)} · editable ${pct(f.editable_pruning)} · committed ${f.committed}`),
    d.summary ? el("div", { class: "meta", id: "summary" }, d.summary) : null,
    others,
    copyable("case", d.case_id), copyable("show", d.commands.show), copyable("request", d.commands.request),
    el("details", { id: "request" }, el("summary", {}, "the view as a request body (openai-chat)"), el("pre", { class: "text" }, JSON.stringify(d.request, null, 1))),
    el("h2", {}, "Verdicts"), verdicts,
    el("h2", {}, `Losses (${losses.length})`), lossList,
    el("h2", {}, "Prefix and view"),
    el("table", { id: "align" }, el("thead", {}, el("tr", {}, el("th", {}, "prefix"), el("th", {}, "view"))), rows),
    el("h2", {}, "What came next"), future);
}

// --- A/B -----------------------------------------------------------------------------------

async function abPage(main, params) {
  const d = await api("ab", params);
  const pol = BUNDLE ? BUNDLE.ab_policies : d.policies;
  const a = select("a", pol.map((p) => [p, p]), d.a, { id: "ab-a" });
  const b = select("b", pol.map((p) => [p, p]), d.b, { id: "ab-b" });
  const go = () => navigate(new URLSearchParams({ page: "ab", a: a.value, b: b.value }));
  a.addEventListener("change", go);
  b.addEventListener("change", go);
  const t = d.test;
  const test = t ? `${t.n_paired} cases both scored · ${t.b} kept by ${d.a} only · ${t.c} kept by ${d.b} only · McNemar (${t.test}) p = ${t.p === null ? "–" : Number(t.p).toPrecision(3)} · no-impact difference ${num(t.diff_pct)} pp [${num(t.diff_lo)}, ${num(t.diff_hi)}]`
    : "no case scored by both";
  const body = el("tbody", {});
  for (const r of d.rows) {
    body.append(el("tr", { class: r.discordant ? "discordant" : "", "data-case": r.case_id },
      el("td", {}, tok(r.case_id)), el("td", {}, r.discordant ? "discordant" : "same"),
      el("td", {}, link({ page: "case", case: r.case_id, policy: d.a }, label(r.a.label)), " ", pct(r.a.editable)),
      el("td", {}, link({ page: "case", case: r.case_id, policy: d.b }, label(r.b.label)), " ", pct(r.b.editable))));
  }
  fill(main, el("h1", {}, "Policy A/B"), el("div", { class: "filters" }, el("label", {}, "A", a), el("label", {}, "B", b)),
    el("p", { id: "ab-test" }, test, d.judge ? el("span", { class: "meta" }, " (judge " + d.judge + ")") : null),
    el("div", { class: "scroll" }, el("table", { id: "ab" }, el("thead", {}, el("tr", {}, el("th", {}, "case"), el("th", {}, ""), el("th", {}, "A: " + d.a), el("th", {}, "B: " + d.b))), body)));
}

// --- the frontier --------------------------------------------------------------------------

async function frontierPage(main) {
  const d = await api("frontier");
  const NS = "http://www.w3.org/2000/svg";
  const W = 820, H = 480, L = 60, B = 50, T = 20, R = 200;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("id", "frontier");
  const sx = (x) => L + (W - L - R) * (x || 0) / 100, sy = (y) => H - B - (H - B - T) * (y || 0) / 100;
  const node = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  for (let v = 0; v <= 100; v += 20) {
    svg.append(node("line", { x1: sx(v), x2: sx(v), y1: sy(0), y2: sy(100), stroke: "#eee" }), node("text", { x: sx(v) - 8, y: H - B + 16 }, v + "%"));
    svg.append(node("line", { x1: sx(0), x2: sx(100), y1: sy(v), y2: sy(v), stroke: "#eee" }), node("text", { x: 14, y: sy(v) + 4 }, v + "%"));
  }
  svg.append(node("text", { x: sx(50) - 60, y: H - 10 }, "editable pruning (mean)"), node("text", { x: 4, y: 12 }, "strict no-impact"));
  // coincident points (same policy outcome, e.g. noop and recorded) drawn once, labels stacked
  const groups = new Map();
  for (const p of d.points) {
    if (p.pruning === null || p.strict === null) continue;
    const key = sx(p.pruning).toFixed(0) + ":" + sy(p.strict).toFixed(0);
    groups.set(key, (groups.get(key) || []).concat([p]));
  }
  for (const group of groups.values()) {
    const p0 = group[0];
    svg.append(node("line", { x1: sx(p0.pruning), x2: sx(p0.pruning), y1: sy(p0.lo), y2: sy(p0.hi), stroke: "#90a4ae" }));
    group.forEach((p, k) => {
      const a = node("a", { href: "?page=grid&policy=" + encodeURIComponent(p.policy), class: "point", "data-policy": p.policy });
      if (k === 0) a.append(node("circle", { cx: sx(p.pruning), cy: sy(p.strict), r: 6, fill: group.some((q) => q.pareto) ? "#1565c0" : "#fff", stroke: "#1565c0", "stroke-width": 2 }));
      a.append(node("text", { x: sx(p.pruning) + 9, y: sy(p.strict) + 4 + 13 * k }, p.policy),
        node("title", {}, `${p.policy}: ${num(p.pruning)}% pruned, ${num(p.strict)}% strict no-impact [${num(p.lo)}, ${num(p.hi)}], n ${p.n}`));
      svg.append(a);
    });
  }
  const body = el("tbody", {});
  for (const p of d.points) body.append(el("tr", {}, el("td", {}, link({ page: "grid", policy: p.policy }, tok(p.policy))), el("td", { class: "num" }, num(p.pruning) + "%"),
    el("td", { class: "num" }, `${num(p.strict)}% [${num(p.lo)}, ${num(p.hi)}]`), el("td", { class: "num" }, p.n), el("td", {}, p.pareto ? "on the frontier" : "")));
  fill(main, el("h1", {}, "Frontier"), el("p", { class: "meta" }, "each policy: mean editable pruning against strict no-impact (Wilson 95%) by " + (d.judge || "no judge") + "; filled: no policy beats it on both; click a point for its cases"),
    svg, el("table", { id: "points" }, el("thead", {}, el("tr", {}, el("th", {}, "policy"), el("th", {}, "pruning"), el("th", {}, "strict no-impact"), el("th", {}, "n"), el("th", {}, ""))), body));
}

// --- labelling -----------------------------------------------------------------------------

let selection = null; // {seq, start, end, text} of the prefix text the user selected

function offsets(pre, range) {
  const before = document.createRange();
  before.setStart(pre, 0);
  before.setEnd(range.startContainer, range.startOffset);
  const start = before.toString().length;
  return { start, end: start + range.toString().length };
}

async function labelPage(main, params) {
  const overview = await api("label");
  const caseId = params.get("case") || overview.sample.find((c) => !overview.done.includes(c)) || overview.sample[0];
  let d = await api("label/case", new URLSearchParams({ case: caseId }));
  const progress = el("p", { id: "progress" }, "…");
  const refresh = async () => {
    try {
      const p = await api("label/progress");
      const ci = (x) => (x[0] === null ? "–" : `${x[0].toFixed(2)} [${x[1].toFixed(2)}, ${x[2].toFixed(2)}]`);
      progress.textContent = `${p.labelled} of ${p.sample} cases labelled` + (p.strict
        ? ` · ${p.judge} on their ${p.strict.n} views: sensitivity ${ci(p.strict.sensitivity)} · specificity ${ci(p.strict.specificity)} (strict; with recovery ${ci(p.recovery.sensitivity)} / ${ci(p.recovery.specificity)})`
        : "");
      progress.dataset.labelled = p.labelled;
    } catch (e) { progress.textContent = "progress: " + e.message; }
  };
  const act = async (op) => { d = await api("label/case", new URLSearchParams({ case: caseId }), op); draw(); drawn(); };
  const form = el("div", { id: "mark-form", class: "panel", hidden: true });
  const draw = () => {
    const accepted = new Set(d.marks.map((m) => m.seq + ":" + m.start + ":" + m.end));
    const open = d.proposals.filter((p) => !d.rejected.includes(p.id) && !accepted.has(p.seq + ":" + p.start + ":" + p.end));
    const futureSeqs = d.future.map((f) => [String(f.seq), "seq " + f.seq + " (" + f.role + ")"]);
    const prefix = el("div", { id: "prefix" });
    for (const m of d.prefix) {
      const spans = d.marks.filter((k) => k.seq === m.seq).map((k) => ({ start: k.start, end: k.end, make: (t) => el("mark", { class: "marked", "data-mark": k.id, title: k.category + " · " + k.necessity }, t) }))
        .concat(open.filter((p) => p.seq === m.seq).map((p) => ({ start: p.start, end: p.end, make: (t) => el("mark", { class: "proposal", "data-proposal": p.id, title: "proposed: " + p.category }, t) })));
      prefix.append(el("div", { class: "msg" }, el("div", { class: "meta" }, `seq ${m.seq} · ${m.role}`), marked(m.text, spans, { "data-seq": m.seq })));
    }
    const proposals = el("ul", { id: "proposals" });
    for (const p of open) {
      const need = select("necessity", [["required", "required"], ["helpful", "helpful"]], "required");
      proposals.append(el("li", { "data-proposal": p.id }, el("span", { class: "meta" }, `seq ${p.seq} · ${p.category.replace(/_/g, " ")} · needed by ${p.needed_by}: `),
        p.text.length > 120 ? p.text.slice(0, 120) + "…" : p.text, " ", need,
        el("button", { type: "button", class: "accept", onclick: () => act({ op: "accept", proposal: p.id, necessity: need.value }) }, "accept"),
        el("button", { type: "button", class: "reject", onclick: () => act({ op: "reject", proposal: p.id }) }, "reject")));
    }
    const marks = el("ul", { id: "marks" });
    for (const k of d.marks) {
      marks.append(el("li", { "data-mark": k.id }, el("span", { class: "meta" }, `seq ${k.seq} · ${k.category.replace(/_/g, " ")} · ${k.necessity} · needed by ${k.needed_by} (${k.how}): `),
        k.text.length > 120 ? k.text.slice(0, 120) + "…" : k.text, " ",
        el("button", { type: "button", class: "remove", onclick: () => act({ op: "remove", mark: k.id }) }, "remove")));
    }
    const category = select("category", overview.categories.map((c) => [c, c.replace(/_/g, " ")]), "evidence_detail", { id: "m-category" });
    const necessity = select("necessity", [["required", "required"], ["helpful", "helpful"]], "required", { id: "m-necessity" });
    const needed = select("needed_by", futureSeqs, futureSeqs.length ? futureSeqs[0][0] : "", { id: "m-needed" });
    form.replaceChildren(el("b", {}, "mark the selected text"), el("pre", { class: "text", id: "m-text" }),
      el("label", {}, "category ", category), el("br"), el("label", {}, "necessity ", necessity), el("br"), el("label", {}, "needed by ", needed), el("br"),
      el("button", { type: "button", id: "m-add", onclick: () => {
        if (!selection) return;
        const s = selection;
        selection = null;
        form.hidden = true;
        act({ op: "mark", seq: s.seq, start: s.start, end: s.end, category: category.value, necessity: necessity.value, needed_by: Number(needed.value) });
      } }, "mark"));
    const sample = el("ol", { id: "sample" });
    for (const c of overview.sample) {
      const li = el("li", { class: overview.done.includes(c) ? "done" : "" }, link({ page: "label", case: c }, c === caseId ? el("b", {}, c) : c));
      sample.append(li);
    }
    const next = overview.sample.find((c) => c !== caseId && !overview.done.includes(c));
    // saved, then the next case not labelled yet (its page says how far the sample is)
    const done = el("button", { type: "button", id: "done", onclick: async () => {
      d = await api("label/case", new URLSearchParams({ case: caseId }), { op: "done" });
      overview.done = overview.done.concat([caseId]);
      if (next) navigate(new URLSearchParams({ page: "label", case: next }));
      else { draw(); drawn(); refresh(); }
    } }, d.done ? "labelled ✓ (save again)" : "done: this case is labelled");
    fill(main, el("h1", {}, `Label case ${d.position} of ${d.sample}: `, tok(d.case_id)), progress,
      el("p", { class: "meta" }, "Select text in the prefix to mark what the future needs; accept or reject what the judge proposes. Every change is saved at once to " + overview.folder),
      el("div", { class: "label-layout" },
        el("div", { class: "side" }, el("div", { class: "panel" }, el("b", {}, "sample"), sample)),
        el("div", {}, el("h2", {}, "What came next"), ...d.future.map((f) => el("div", { class: "future" }, el("div", { class: "meta" }, `seq ${f.seq} · ${f.role}`), el("pre", { class: "text" }, f.text))),
          el("h2", {}, "Prefix"), prefix),
        el("div", { class: "side" }, form, el("div", { class: "panel" }, el("h2", {}, "Proposed by the judge"), proposals, el("h2", {}, "Labels of this case"), marks, done))));
  };
  document.onselectionchange = () => {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    const range = sel.getRangeAt(0);
    const pre = range.commonAncestorContainer.nodeType === 1 ? range.commonAncestorContainer.closest("pre[data-seq]") : range.commonAncestorContainer.parentElement.closest("pre[data-seq]");
    if (!pre) return;
    const { start, end } = offsets(pre, range);
    selection = { seq: Number(pre.dataset.seq), start, end };
    form.hidden = false;
    const shown = form.querySelector("#m-text");
    if (shown) shown.textContent = range.toString();
  };
  draw();
  refresh();
}

// --- routing -------------------------------------------------------------------------------

let renders = 0;
// the page says it is drawn (tests and scripts wait for this)
function drawn() {
  document.body.dataset.ready = String(++renders);
}

const PAGES = { grid: gridPage, case: casePage, ab: abPage, frontier: frontierPage, label: labelPage };

function navigate(params) {
  history.pushState(null, "", "?" + params.toString());
  render();
}

let drawnSearch = null;

async function render() {
  drawnSearch = location.search;
  const params = new URLSearchParams(location.search);
  const page = PAGES[params.get("page")] ? params.get("page") : "grid";
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("current", a.dataset.page === page);
  const main = document.getElementById("main");
  try {
    await PAGES[page](main, params);
    document.body.dataset.page = page;
    drawn();
  } catch (e) {
    fill(main, el("p", { class: "error", id: "error" }, e.message));
    drawn();
  }
}

async function start() {
  const meta = await api("meta");
  document.getElementById("run").textContent = meta.run + " · " + meta.pairs.toLocaleString() + " pairs" + (meta.redact ? " · redacted" : "");
  document.getElementById("nav-label").hidden = !meta.labelling;
  document.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest("a[href^='?']");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    history.pushState(null, "", a.getAttribute("href"));
    render();
  });
  // back and forward redraw; a jump to an anchor of the page (#src-…) does not
  window.addEventListener("popstate", () => { if (location.search !== drawnSearch) render(); });
  await render();
}

start();
