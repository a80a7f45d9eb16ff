// Butler web chat page: Markdown rendered as DOM nodes (createElement/textContent), never as
// HTML strings, so whatever the model writes is shown as text and cannot run. Loaded before
// app.js, which uses `window.ButlerMarkdown`; it must never touch the page outside the node it
// is given (except the copy button's own label).

(() => {
  const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

  function el(tag, className) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    return node;
  }
  // ---------------------------------------------------------------------------------------
  // Markdown, rendered as DOM nodes (never as HTML)

  const FENCE_RE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
  const HEADING_RE = /^ {0,3}(#{1,6})\s+(.*?)(\s+#+)?\s*$/;
  const RULE_RE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE_RE = /^ {0,3}>\s?(.*)$/;
  const ITEM_RE = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

  /**
   * Renders `src` into `parent`. With `options.fold` ({lines, chars}), a code block longer than
   * that shows its first lines, "… N more lines" and a "Show all" button (an approval request's
   * detail: the message carries all of it, the page shows the start).
   */
  function renderMarkdown(src, parent, options) {
    fold = (options && options.fold) || null;
    try {
      renderBlocks(src.replace(/\r\n?/g, "\n").split("\n"), parent);
    } finally {
      fold = null;
    }
  }

  /** The code-block limits of the renderMarkdown call in progress, or null. */
  let fold = null;

  /** How many of `body`'s lines a folded block shows, or null when it is short enough. */
  function foldPoint(body, limit) {
    const total = body.reduce((n, line) => n + line.length + 1, 0) - 1;
    if (body.length <= limit.lines && total <= limit.chars) return null;
    let shown = 0;
    let used = 0;
    while (shown < body.length && shown < limit.lines && used + body[shown].length + 1 <= limit.chars + 1) {
      used += body[shown].length + 1;
      shown++;
    }
    shown = Math.max(shown, 1);
    return shown < body.length ? shown : null;
  }

  /** True if `line` starts a block other than a paragraph. */
  function startsBlock(line) {
    return FENCE_RE.test(line) || HEADING_RE.test(line) || RULE_RE.test(line) || QUOTE_RE.test(line) || ITEM_RE.test(line);
  }

  function renderBlocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) {
        i++;
      } else if (tableStarts(lines, i)) {
        i = table(lines, i, parent);
      } else if ((m = FENCE_RE.exec(line))) {
        i = codeBlock(lines, i, m[1], m[2], parent);
      } else if ((m = HEADING_RE.exec(line))) {
        const h = el(`h${m[1].length}`);
        renderInline(m[2], h, false);
        parent.append(h);
        i++;
      } else if (RULE_RE.test(line)) {
        parent.append(el("hr"));
        i++;
      } else if (QUOTE_RE.test(line)) {
        const inner = [];
        while (i < lines.length && (m = QUOTE_RE.exec(lines[i]))) {
          inner.push(m[1]);
          i++;
        }
        const quote = el("blockquote");
        renderBlocks(inner, quote);
        parent.append(quote);
      } else if (ITEM_RE.test(line)) {
        i = list(lines, i, parent);
      } else {
        i = paragraph(lines, i, parent);
      }
    }
  }

  function paragraph(lines, i, parent) {
    const text = [];
    while (
      i < lines.length &&
      lines[i].trim() &&
      (text.length === 0 || (!startsBlock(lines[i]) && !tableStarts(lines, i)))
    ) {
      text.push(lines[i].trim());
      i++;
    }
    const p = el("p");
    renderInline(text.join("\n"), p, false);
    parent.append(p);
    return i;
  }

  const TABLE_RULE_RE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  /** The cells of a table row: split at unescaped pipes, outer pipes dropped, `\|` kept as `|`. */
  function tableCells(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
    const cells = [];
    let cell = "";
    for (let k = 0; k < row.length; k++) {
      if (row[k] === "\\" && row[k + 1] === "|") {
        cell += "|";
        k++;
      } else if (row[k] === "|") {
        cells.push(cell.trim());
        cell = "";
      } else {
        cell += row[k];
      }
    }
    cells.push(cell.trim());
    return cells;
  }

  /** True if a table starts at line i: a header row with a pipe, then a `---|---` rule. */
  function tableStarts(lines, i) {
    const head = lines[i];
    const rule = lines[i + 1];
    if (rule === undefined || !head.includes("|") || !rule.includes("-")) return false;
    if (!TABLE_RULE_RE.test(rule) || !(rule.includes("|") || head.trim().startsWith("|"))) return false;
    return tableCells(rule).length === tableCells(head).length;
  }

  /** A GitHub-style table: header, alignment rule, rows until a blank line or a line without `|`. */
  function table(lines, i, parent) {
    const header = tableCells(lines[i]);
    const align = tableCells(lines[i + 1]).map((c) => {
      if (c.startsWith(":") && c.endsWith(":")) return "center";
      if (c.endsWith(":")) return "right";
      if (c.startsWith(":")) return "left";
      return "";
    });
    const row = (cells, tag) => {
      const tr = el("tr");
      header.forEach((_, k) => {
        const cell = el(tag);
        if (align[k]) cell.style.textAlign = align[k];
        renderInline(cells[k] || "", cell, false);
        tr.append(cell);
      });
      return tr;
    };
    const tableEl = el("table");
    const thead = el("thead");
    thead.append(row(header, "th"));
    const tbody = el("tbody");
    for (i += 2; i < lines.length && lines[i].trim() && lines[i].includes("|"); i++) {
      tbody.append(row(tableCells(lines[i]), "td"));
    }
    tableEl.append(thead);
    if (tbody.children.length) tableEl.append(tbody);
    // Wide tables scroll inside the message instead of widening it.
    const wrap = el("div", "table-wrap");
    wrap.append(tableEl);
    parent.append(wrap);
    return i;
  }

  /** A fenced code block; an unclosed fence (a reply still streaming) runs to the end. */
  function codeBlock(lines, i, fence, lang, parent) {
    const body = [];
    const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
    for (i++; i < lines.length; i++) {
      if (closing.test(lines[i])) {
        i++;
        break;
      }
      body.push(lines[i]);
    }
    const pre = el("pre");
    const code = el("code");
    if (/^[\w+#.-]{1,32}$/.test(lang)) code.className = `language-${lang}`;
    const shown = fold ? foldPoint(body, fold) : null;
    code.textContent = (shown ? body.slice(0, shown) : body).join("\n");
    pre.append(code);
    const block = el("div", "code-block");
    const copy = el("button", "copy");
    copy.type = "button";
    copy.textContent = "Copy";
    copy.setAttribute("aria-label", "Copy the code");
    block.append(copy, pre);
    let unfold = () => {};
    if (shown) {
      const more = el("div", "fold");
      const note = el("span", "fold-note");
      const left = body.length - shown;
      note.textContent = `… ${left} more line${left === 1 ? "" : "s"}`;
      const all = el("button", "show-all");
      all.type = "button";
      all.textContent = "Show all";
      unfold = () => {
        code.textContent = body.join("\n");
        more.remove();
      };
      all.addEventListener("click", unfold);
      more.append(note, all);
      block.append(more);
    }
    // Copying a folded block copies (and shows) all of it.
    copy.addEventListener("click", () => {
      unfold();
      copyCode(copy, code);
    });
    parent.append(block);
    return i;
  }

  /** Copies the code's text; the button says whether it worked, then goes back to "Copy". */
  async function copyCode(button, code) {
    const text = code.textContent;
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch {
      // No clipboard permission (e.g. plain http): select the code so Ctrl+C copies it.
      const range = document.createRange();
      range.selectNodeContents(code);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      try {
        ok = document.execCommand("copy");
      } catch {
        ok = false;
      }
    }
    button.textContent = ok ? "Copied" : "Selected: press Ctrl+C";
    button.dataset.copied = ok ? "yes" : "selected";
    setTimeout(() => {
      button.textContent = "Copy";
      delete button.dataset.copied;
    }, 2500);
  }

  const indentOf = (s) => s.replace(/\t/g, "    ").length;

  /**
   * A bullet or numbered list starting at line i. Lines indented past the marker belong to the
   * current item (nested lists included); a different marker type at the same indent, or an
   * unindented line after a blank one, ends the list.
   */
  function list(lines, i, parent) {
    const first = ITEM_RE.exec(lines[i]);
    const indent = indentOf(first[1]);
    const ordered = /\d/.test(first[2]);
    const listEl = el(ordered ? "ol" : "ul");
    if (ordered) {
      const start = parseInt(first[2], 10);
      if (start !== 1) listEl.start = start;
    }
    let item = null;
    let contentIndent = 0;
    const flush = () => {
      if (!item) return;
      const li = el("li");
      renderItem(item, li);
      listEl.append(li);
      item = null;
    };
    while (i < lines.length) {
      const line = lines[i];
      const m = ITEM_RE.exec(line);
      if (m && indentOf(m[1]) <= indent + 1) {
        if (/\d/.test(m[2]) !== ordered) break;
        flush();
        item = [m[3]];
        contentIndent = indentOf(m[1]) + m[2].length + 1;
        i++;
        continue;
      }
      if (!line.trim()) {
        // A blank line continues the list only if an item or an indented line follows.
        let j = i + 1;
        while (j < lines.length && !lines[j].trim()) j++;
        if (j >= lines.length) break;
        const next = lines[j];
        const nm = ITEM_RE.exec(next);
        const sameList = nm && indentOf(nm[1]) <= indent + 1 && /\d/.test(nm[2]) === ordered;
        if (!sameList && indentOf(next.match(/^\s*/)[0]) <= indent) break;
        item.push("");
        i++;
        continue;
      }
      const lead = indentOf(line.match(/^\s*/)[0]);
      if (lead > indent) {
        item.push(line.replace(new RegExp(`^[ \\t]{0,${Math.max(contentIndent, 1)}}`), ""));
      } else if (item[item.length - 1] !== "" && !startsBlock(line)) {
        item.push(line.trim()); // a lazy continuation of the item's text
      } else {
        break;
      }
      i++;
    }
    flush();
    parent.append(listEl);
    return i;
  }

  /** An item's lines: plain text goes inline (a tight list); anything else as blocks. */
  function renderItem(lines, li) {
    const simple = lines.every((l, k) => l.trim() && (k === 0 || !startsBlock(l)));
    if (simple) renderInline(lines.map((l) => l.trim()).join("\n"), li, false);
    else renderBlocks(lines, li);
  }

  /** Text with "\n" shown as line breaks. */
  function appendText(parent, text) {
    text.split("\n").forEach((part, k) => {
      if (k) parent.append(el("br"));
      if (part) parent.append(document.createTextNode(part));
    });
  }

  // Status icons Butler puts in its messages, each with a word that replaces it (via CSS)
  // where no emoji font is installed.
  const STATUS_ICONS = new Map([
    ["\u26a0\ufe0f", "Warning"],
    ["\u26a0", "Warning"],
    ["\u2705", "Done"],
    ["\u274c", "Failed"],
    ["\u23f9", "Stopped"],
    ["\u23f3", "Working"],
    ["\u231b", "Expired"],
    ["\u2699", "Running"],
    ["\ud83d\udd10", "Approval"],
    ["\ud83d\udd12", "Locked"],
    ["\ud83d\udeab", "Denied"],
    ["\ud83d\udd17", "Link"],
  ]);
  const STATUS_RE = new RegExp(`(${[...STATUS_ICONS.keys()].join("|")})`, "u");

  /** Like appendText, with each status icon in a span that carries its word. */
  function appendRichText(parent, text) {
    const parts = text.split(STATUS_RE);
    parts.forEach((part, k) => {
      if (k % 2 === 0) {
        if (part) appendText(parent, part);
        return;
      }
      const word = STATUS_ICONS.get(part);
      const icon = el("span", "status-icon");
      icon.dataset.label = word;
      icon.title = word;
      icon.setAttribute("role", "img");
      icon.setAttribute("aria-label", word);
      const glyph = el("span", "glyph");
      glyph.textContent = part;
      icon.append(glyph);
      parent.append(icon);
    });
  }

  /**
   * True if this browser draws emoji in colour (an emoji font is installed); without one the
   * page shows the status words instead (the `no-emoji` class, see style.css).
   */
  function hasEmojiFont() {
    try {
      const canvas = document.createElement("canvas");
      canvas.width = canvas.height = 20;
      const ctx = canvas.getContext("2d", { willReadFrequently: true });
      if (!ctx) return true;
      ctx.textBaseline = "top";
      ctx.font = "16px sans-serif";
      ctx.fillStyle = "#000";
      ctx.fillText("\u2705", 0, 0);
      const data = ctx.getImageData(0, 0, 20, 20).data;
      for (let k = 0; k < data.length; k += 4) {
        // A coloured pixel: the glyph came from a colour emoji font.
        if (data[k + 3] > 0 && (Math.abs(data[k] - data[k + 1]) > 30 || Math.abs(data[k + 1] - data[k + 2]) > 30)) return true;
      }
      return false;
    } catch {
      return true;
    }
  }

  const isWordChar = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);
  const isSpace = (c) => c === undefined || /\s/.test(c);

  /**
   * Inline markdown: `code`, **strong**, *em* / _em_, ~~strike~~, [links](url), bare
   * http(s) URLs and backslash escapes. Everything else, raw HTML included, stays text.
   */
  function renderInline(text, parent, inLink) {
    let buffer = "";
    const flush = () => {
      if (buffer) appendRichText(parent, buffer);
      buffer = "";
    };
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === "\\" && /[\\`*_{}[\]()#+\-.!~<>|]/.test(text[i + 1] || "")) {
        buffer += text[i + 1];
        i += 2;
        continue;
      }
      let found = null;
      if (c === "`") {
        found = codeSpan(text, i);
        if (!found) {
          // No closing run: the whole backtick run is literal.
          const run = text.slice(i).match(/^`+/)[0];
          buffer += run;
          i += run.length;
          continue;
        }
      } else if (c === "*" || c === "_") {
        found = emphasis(text, i, inLink);
      } else if (c === "~" && text[i + 1] === "~") {
        found = delimited(text, i, "~~", "del", inLink);
      } else if (c === "[" && !inLink) {
        found = link(text, i);
      } else if ((c === "h" || c === "H") && !inLink && !isWordChar(text[i - 1])) {
        found = bareUrl(text, i);
      }
      if (found) {
        flush();
        parent.append(found.node);
        i = found.end;
      } else {
        buffer += c;
        i++;
      }
    }
    flush();
  }

  function codeSpan(text, i) {
    const run = text.slice(i).match(/^`+/)[0];
    let from = i + run.length;
    for (;;) {
      const k = text.indexOf(run, from);
      if (k < 0) return null;
      // The closing run must be exactly as long as the opening one.
      if (text[k + run.length] === "`") {
        from = k + run.length + text.slice(k + run.length).match(/^`+/)[0].length;
        continue;
      }
      let body = text.slice(i + run.length, k).replace(/\n/g, " ");
      if (body.length > 2 && body.startsWith(" ") && body.endsWith(" ") && body.trim()) body = body.slice(1, -1);
      const code = el("code");
      code.textContent = body;
      return { node: code, end: k + run.length };
    }
  }

  /** `**strong**`, `__strong__`, `*em*`, `_em_` (underscores not inside words). */
  function emphasis(text, i, inLink) {
    const d = text[i];
    if (d === "_" && isWordChar(text[i - 1])) return null;
    const run = text.slice(i).match(d === "*" ? /^\*+/ : /^_+/)[0].length;
    if (run >= 2) {
      const strong = delimited(text, i, d + d, "strong", inLink);
      if (strong) return strong;
    }
    return delimited(text, i, d, "em", inLink);
  }

  /**
   * `delim`content`delim` at i as a `tag` element, or null. The content may not start or end
   * with a space; for runs of the delimiter character the closing one ends the run (so
   * `***x***` nests em inside strong).
   */
  function delimited(text, i, delim, tag, inLink) {
    const start = i + delim.length;
    if (isSpace(text[start])) return null;
    const ch = delim[0];
    for (let k = text.indexOf(delim, start + 1); k >= 0; k = text.indexOf(delim, k + 1)) {
      let runEnd = k;
      while (text[runEnd] === ch) runEnd++;
      const runLen = runEnd - k;
      // A single delimiter does not close on a run of two (that is a nested strong).
      if (delim.length === 1 && runLen === 2) {
        k = runEnd - 1;
        continue;
      }
      const close = runEnd - delim.length;
      if (close < start + 1 || isSpace(text[close - 1])) {
        k = runEnd - 1;
        continue;
      }
      if (ch === "_" && isWordChar(text[runEnd])) {
        k = runEnd - 1;
        continue;
      }
      const node = el(tag);
      renderInline(text.slice(start, close), node, inLink);
      return { node, end: close + delim.length };
    }
    return null;
  }

  /** The href for a link target if its protocol is allowed, else null. A file Butler sent
   * (`/api/v1/files/<id>`) is the one relative target kept. */
  function safeHref(raw) {
    let url;
    try {
      url = /^\/api\/v1\/files\/[0-9a-f]{32}$/.test(raw) ? new URL(raw, window.location.origin) : new URL(raw);
    } catch {
      return null; // relative or malformed
    }
    return LINK_PROTOCOLS.has(url.protocol) ? url.href : null;
  }

  function anchor(href, label) {
    const a = el("a");
    a.href = href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    renderInline(label, a, true);
    return a;
  }

  /** `[label](url "title")`: a link for http, https and mailto; any other target stays text. */
  function link(text, i) {
    let depth = 0;
    let k = i;
    for (; k < text.length; k++) {
      if (text[k] === "\\") k++;
      else if (text[k] === "[") depth++;
      else if (text[k] === "]" && --depth === 0) break;
    }
    if (k >= text.length || text[k + 1] !== "(") return null;
    const label = text.slice(i + 1, k);
    let j = k + 2;
    let parens = 0;
    for (; j < text.length; j++) {
      const c = text[j];
      if (c === "(") parens++;
      else if (c === ")") {
        if (parens === 0) break;
        parens--;
      }
    }
    if (j >= text.length) return null;
    const end = j + 1;
    const target = text
      .slice(k + 2, j)
      .trim()
      .replace(/\s+("[^"]*"|'[^']*')$/, "");
    const href = safeHref(target.replace(/^<(.*)>$/, "$1"));
    if (!href || !label.trim()) return { node: document.createTextNode(text.slice(i, end)), end };
    return { node: anchor(href, label), end };
  }

  /** A bare http(s) URL, without trailing punctuation (and unbalanced closing parens). */
  function bareUrl(text, i) {
    const m = /^https?:\/\/[^\s<>"'`]+/i.exec(text.slice(i));
    if (!m) return null;
    let url = m[0];
    for (;;) {
      const last = url[url.length - 1];
      const unbalanced = last === ")" && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length;
      if (/[.,;:!?*_~]/.test(last) || unbalanced) url = url.slice(0, -1);
      else break;
    }
    const href = safeHref(url);
    if (!href || url.length <= "https://".length) return null;
    return { node: anchor(href, url), end: i + url.length };
  }


  window.ButlerMarkdown = { renderMarkdown, appendText, hasEmojiFont };
})();
