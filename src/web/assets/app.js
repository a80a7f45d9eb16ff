// Butler web chat page.
//
// Talks to the JSON API under /api/v1 and reads the conversation's server-sent events with
// fetch() (EventSource cannot send the bearer token). Model output is rendered by building DOM
// nodes from text (createElement/textContent): nothing on this page ever assigns HTML strings,
// so whatever the model writes is shown as text and cannot run.
"use strict";

(() => {
  const KEY_TOKEN = "butler.token";
  const KEY_CONVERSATION = "butler.conversation";
  const PAGE_SIZE = 200;
  const NAME_RE = /^[A-Za-z0-9._@-]{1,64}$/;
  const BUTTON_STYLES = new Set(["default", "primary", "danger"]);
  // Actions of Stop buttons start with this (see src/web/conversations.rs).
  const STOP_PREFIX = "stop:";
  // How much of an approval request's detail the page shows before "Show all" (as much as the
  // chat platforms show: PREVIEW_LINES and PREVIEW_CHARS of src/permissions/notice.rs).
  const DETAIL_FOLD = { lines: 30, chars: 1500 };

  const { renderMarkdown, appendText, hasEmojiFont } = window.ButlerMarkdown;
  const $ = (id) => document.getElementById(id);
  const ui = {
    model: $("model"),
    newChat: $("new-chat"),
    tz: $("tz"),
    banner: $("llm-banner"),
    hint: $("llm-hint"),
    status: $("status"),
    messages: $("messages"),
    empty: $("empty"),
    form: $("composer"),
    input: $("input"),
    send: $("send"),
    gate: $("token-gate"),
    tokenForm: $("token-form"),
    token: $("token"),
    tokenError: $("token-error"),
    convToggle: $("conv-toggle"),
    convPanel: $("conv-panel"),
    convList: $("conv-list"),
    convNew: $("conv-new"),
  };

  const state = {
    auth: "local", // "local" | "token"
    user: null, // the user name to send in local mode
    token: null,
    conversation: null,
    // message id (string) -> record { id, role, text, buttons, updatedMs, draft, clicked, el, textEl, buttonsEl }
    messages: new Map(),
    sending: false,
    conversations: [], // the list from GET /api/v1/conversations, newest first
    renaming: null, // id of the conversation whose title is being edited
    stopTarget: null, // { rec, button } of the live Stop button, while a reply streams
    stream: null, // { conversation, controller } of the open event stream
  };

  // ---------------------------------------------------------------------------------------
  // Small helpers

  function storageGet(key) {
    try {
      return window.localStorage.getItem(key);
    } catch {
      return null;
    }
  }

  function storageSet(key, value) {
    try {
      if (value == null) window.localStorage.removeItem(key);
      else window.localStorage.setItem(key, value);
    } catch {
      // Storage disabled (private mode): the page still works for this visit.
    }
  }

  function randomHex(bytes) {
    const a = new Uint8Array(bytes);
    crypto.getRandomValues(a);
    return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function el(tag, className) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    return node;
  }

  function showStatus(text) {
    ui.status.textContent = text;
    ui.status.hidden = false;
  }

  function hideStatus() {
    ui.status.hidden = true;
    ui.status.textContent = "";
  }

  // ---------------------------------------------------------------------------------------
  // API

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message || `HTTP ${status}`);
      this.status = status;
      this.code = code || "";
    }
  }

  function authHeaders() {
    return state.token ? { Authorization: `Bearer ${state.token}` } : {};
  }

  /** Adds the `user` field in local mode; token mode identifies the user by the token. */
  function withUser(body) {
    return state.auth === "local" && state.user ? { ...body, user: state.user } : body;
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json", ...authHeaders() };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    if (!res.ok) {
      const err = (data && data.error) || {};
      if (res.status === 401 && state.auth === "token") forgetToken(err.message);
      throw new ApiError(res.status, err.code, err.message);
    }
    return data;
  }

  /** POSTs, retrying network failures and 5xx/429 with backoff. Only for idempotent bodies. */
  async function postWithRetry(path, body) {
    let delay = 500;
    for (let attempt = 1; ; attempt++) {
      try {
        return await api("POST", path, body);
      } catch (e) {
        const retriable = !(e instanceof ApiError) || e.status >= 500 || e.status === 429;
        if (!retriable || attempt >= 6) throw e;
        showStatus("Connection problem, retrying…");
        await sleep(delay);
        delay = Math.min(delay * 2, 8000);
      }
    }
  }

  const conversationPath = (conversation) => `/api/v1/conversations/${encodeURIComponent(conversation)}`;

  // ---------------------------------------------------------------------------------------
  // Messages

  function nearBottom() {
    const doc = document.scrollingElement || document.documentElement;
    return doc.scrollHeight - doc.scrollTop - doc.clientHeight < 120;
  }

  function scrollToBottom() {
    const doc = document.scrollingElement || document.documentElement;
    doc.scrollTop = doc.scrollHeight;
  }

  function buttonsKey(buttons) {
    return JSON.stringify(buttons || []);
  }

  function clearMessages() {
    state.messages.clear();
    ui.messages.replaceChildren();
    ui.empty.hidden = false;
    updateSendButton();
  }

  /** The record for `id`, created (and placed in id order) if new. */
  function record(id, role) {
    const key = String(id);
    let rec = state.messages.get(key);
    if (rec) return rec;
    rec = { id: key, role, text: "", buttons: [], updatedMs: -1, draft: false, clicked: null };
    rec.el = el("article", "msg");
    rec.el.dataset.id = key;
    rec.textEl = el("div", "text");
    rec.buttonsEl = el("div", "buttons");
    rec.el.append(rec.textEl, rec.buttonsEl);
    // Keep the page in id order even when events and list reloads interleave.
    const n = Number(key);
    let before = null;
    for (const child of ui.messages.children) {
      if (Number(child.dataset.id) > n) {
        before = child;
        break;
      }
    }
    ui.messages.insertBefore(rec.el, before);
    state.messages.set(key, rec);
    ui.empty.hidden = true;
    return rec;
  }

  /**
   * Applies a full message. Messages from the event stream always win (they arrive in order);
   * a message from a list reload only if it is newer than what the page shows, so a reload that
   * races with a streaming reply does not roll its text back.
   */
  function applyMessage(m, fromList) {
    if (!m || m.id == null) return;
    const existing = state.messages.get(String(m.id));
    const updatedMs = Number(m.updated_ms) || 0;
    if (existing && fromList && isStale(existing, m, updatedMs)) return;
    const follow = nearBottom();
    const rec = record(m.id, m.role === "user" ? "user" : "assistant");
    rec.role = m.role === "user" ? "user" : "assistant";
    rec.text = String(m.text || "");
    rec.buttons = Array.isArray(m.buttons) ? m.buttons : [];
    rec.updatedMs = updatedMs;
    rec.draft = false;
    if (m.created_ms) rec.el.title = new Date(m.created_ms).toLocaleString();
    renderMessage(rec);
    if (follow || (rec.role === "user" && !existing)) scrollToBottom();
  }

  /** True if list entry `m` is not newer than what record `rec` shows. */
  function isStale(rec, m, updatedMs) {
    if (updatedMs <= rec.updatedMs) return true; // the version the page already had, or older
    // A reply the page first saw as a draft: the store holds an earlier draft of it (with the
    // same buttons, e.g. Stop) while the page shows a longer one. Keep the page's.
    return rec.draft && rec.text.startsWith(String(m.text || "")) && buttonsKey(m.buttons) === buttonsKey(rec.buttons);
  }

  /** Applies a streaming draft {id, text, buttons, draft: true}: the message's text so far. */
  function applyDraft(d) {
    if (!d || d.id == null) return;
    const follow = nearBottom();
    const rec = record(d.id, "assistant");
    rec.text = String(d.text || "");
    rec.buttons = Array.isArray(d.buttons) ? d.buttons : [];
    rec.draft = true;
    renderMessage(rec);
    if (follow) scrollToBottom();
  }

  /** True while `rec` asks for an approval (it carries the "Approve once" button). */
  function isApprovalRequest(rec) {
    return rec.buttons.some((b) => /^ap:[0-9a-f]{32}:once$/.test(String(b.action || "")));
  }

  function renderMessage(rec) {
    const className = `msg ${rec.role}${rec.draft ? " streaming" : ""}`;
    if (rec.el.className !== className) rec.el.className = className;
    // Only a changed text is rendered again, and then only the blocks that changed: the nodes
    // of everything else stay, so a selection or a click in progress is not lost.
    if (rec.shownText !== rec.text) {
      rec.shownText = rec.text;
      const fresh = document.createDocumentFragment();
      if (rec.role === "assistant") renderMarkdown(rec.text, fresh, isApprovalRequest(rec) ? { fold: DETAIL_FOLD } : null);
      else appendText(fresh, rec.text);
      patchChildren(rec.textEl, fresh);
    }
    renderButtons(rec);
    updateSendButton();
  }

  /** Makes `parent`'s children equal to `fresh`'s, keeping each child that is already equal. */
  function patchChildren(parent, fresh) {
    const next = [...fresh.childNodes];
    next.forEach((node, k) => {
      const old = parent.childNodes[k];
      if (!old) parent.append(node);
      else if (!old.isEqualNode(node)) parent.replaceChild(node, old);
    });
    while (parent.childNodes.length > next.length) parent.lastChild.remove();
  }

  function renderButtons(rec) {
    rec.buttonsEl.hidden = rec.buttons.length === 0;
    // Buttons the user already clicked stay disabled until the server replaces them.
    const key = buttonsKey(rec.buttons);
    if (rec.clicked !== null && rec.clicked !== key) rec.clicked = null;
    const old = [...rec.buttonsEl.children];
    rec.buttons.forEach((b, k) => {
      const style = BUTTON_STYLES.has(b.style) ? b.style : "default";
      const label = String(b.label || b.action || "…");
      let button = old[k];
      // A button with the same label, style and action is kept as it is (same node).
      if (!button || button.dataset.action !== String(b.action) || button.textContent !== label || button.dataset.style !== style) {
        const fresh = el("button", `btn btn-${style}`);
        fresh.type = "button";
        fresh.textContent = label;
        fresh.dataset.action = String(b.action);
        fresh.dataset.style = style;
        fresh.addEventListener("pointerdown", (ev) => capturePointer(fresh, ev));
        fresh.addEventListener("click", () => clickButton(rec, b));
        if (button) rec.buttonsEl.replaceChild(fresh, button);
        else rec.buttonsEl.append(fresh);
        button = fresh;
      }
      button.disabled = rec.clicked !== null;
    });
    for (const extra of old.slice(rec.buttons.length)) extra.remove();
  }

  /** Keeps a press on `button` even if the page moves under the pointer before release. */
  function capturePointer(button, ev) {
    try {
      button.setPointerCapture(ev.pointerId);
    } catch {
      // No capture (e.g. a synthetic event): a normal click still works.
    }
  }

  /** The newest live Stop button of the page: {rec, button} or null. */
  function liveStop() {
    let found = null;
    for (const rec of state.messages.values()) {
      if (rec.clicked !== null) continue;
      const b = rec.buttons.find((x) => String(x.action || "").startsWith(STOP_PREFIX));
      if (b && (!found || Number(rec.id) > Number(found.rec.id))) found = { rec, button: b };
    }
    return found;
  }

  /** Send turns into Stop while a reply streams (while a live Stop button exists). */
  function updateSendButton() {
    const stop = liveStop();
    state.stopTarget = stop;
    const label = stop ? "Stop" : "Send";
    const className = stop ? "btn btn-danger" : "btn btn-primary";
    if (ui.send.textContent !== label) ui.send.textContent = label;
    if (ui.send.className !== className) ui.send.className = className;
    ui.send.classList.toggle("stop-mode", !!stop);
    ui.send.disabled = state.sending && !stop;
  }

  function setButtonsDisabled(rec, disabled) {
    for (const button of rec.buttonsEl.querySelectorAll("button")) button.disabled = disabled;
  }

  async function clickButton(rec, button) {
    if (rec.clicked !== null) return;
    rec.clicked = buttonsKey(rec.buttons);
    setButtonsDisabled(rec, true);
    updateSendButton();
    try {
      // Not retried: a click has no idempotency key, and clicking twice may act twice.
      await api("POST", "/api/v1/actions", withUser({ conversation: state.conversation, action: button.action }));
    } catch (e) {
      rec.clicked = null;
      setButtonsDisabled(rec, false);
      updateSendButton();
      showStatus(`Could not send the click: ${e.message}`);
    }
  }

  /** Loads every message after `after`, page by page, as list entries. */
  async function loadMessages(conversation, after) {
    for (;;) {
      const data = await api("GET", `${conversationPath(conversation)}/messages?after=${after}&limit=${PAGE_SIZE}`);
      if (conversation !== state.conversation) return;
      const list = (data && data.messages) || [];
      for (const m of list) applyMessage(m, true);
      if (list.length < PAGE_SIZE) return;
      after = list[list.length - 1].id;
    }
  }

  /**
   * Reloads what the event stream may have missed: new messages, and the latest version of
   * every message still in flux (streaming, or with buttons awaiting an answer).
   */
  function fillGaps(conversation) {
    let after = 0;
    let live = Infinity;
    for (const rec of state.messages.values()) {
      const id = Number(rec.id);
      after = Math.max(after, id);
      if (rec.draft || rec.buttons.length) live = Math.min(live, id - 1);
    }
    return loadMessages(conversation, Math.min(after, live));
  }

  // ---------------------------------------------------------------------------------------
  // Server-sent events over fetch()

  /** Reads an SSE body, calling onEvent(type, data) per event, until it ends or is aborted. */
  async function readEvents(body, onEvent) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let type = "";
    let data = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        let line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          // A blank line ends the event.
          if (data.length) onEvent(type || "message", data.join("\n"));
          type = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue; // keep-alive comment
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") type = val;
        else if (field === "data") data.push(val);
      }
    }
  }

  function handleEvent(conversation, type, raw) {
    if (conversation !== state.conversation) return;
    if (type === "lagged") {
      // The server dropped events for this page: reload instead.
      fillGaps(conversation).catch(() => {});
      return;
    }
    if (type !== "created" && type !== "updated") return;
    let data;
    try {
      data = JSON.parse(raw);
    } catch {
      return;
    }
    if (data.draft) applyDraft(data);
    else applyMessage(data, false);
    if (type === "created") refreshConversationsSoon();
  }

  function closeStream() {
    if (state.stream) state.stream.controller.abort();
    state.stream = null;
  }

  /** Opens the event stream of the current conversation unless it is already open. */
  function ensureStream() {
    if (state.stream && state.stream.conversation === state.conversation) return;
    runStream(state.conversation);
  }

  /**
   * Keeps the conversation's event stream open: reconnects with backoff when it drops, and
   * after each (re)connect reloads the list to fill what was missed in between. Stops on 404
   * (the conversation does not exist yet: the first POST creates it and reopens the stream).
   */
  async function runStream(conversation) {
    closeStream();
    const stream = { conversation, controller: new AbortController() };
    state.stream = stream;
    const signal = stream.controller.signal;
    let delay = 500;
    while (state.stream === stream) {
      let res = null;
      try {
        res = await fetch(`${conversationPath(conversation)}/stream`, {
          headers: { Accept: "text/event-stream", ...authHeaders() },
          cache: "no-store",
          signal,
        });
        if (res.status === 404) {
          if (state.stream === stream) state.stream = null;
          return;
        }
        if (res.status === 401 && state.auth === "token") {
          closeStream();
          forgetToken("The token is no longer valid.");
          return;
        }
        if (res.status === 403) {
          // Someone else's conversation (another token): start a fresh one.
          closeStream();
          newChat();
          return;
        }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        delay = 500;
        // Subscribed from here on; the list covers everything before. Events buffer meanwhile.
        await fillGaps(conversation);
        hideStatus();
        await readEvents(res.body, (type, data) => handleEvent(conversation, type, data));
      } catch {
        if (signal.aborted) return;
        // Release a body left unread (e.g. the list reload failed); a read one is done already.
        if (res && res.body && !res.body.locked) res.body.cancel().catch(() => {});
      }
      if (state.stream !== stream) return;
      showStatus("Connection lost, reconnecting…");
      await sleep(delay + Math.random() * delay * 0.3);
      delay = Math.min(delay * 2, 15000);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Conversations and sending

  function setConversation(id) {
    state.conversation = id;
    storageSet(KEY_CONVERSATION, id);
    // The address names the open conversation, so it can be bookmarked or shared as /?c=ID.
    try {
      const url = new URL(window.location.href);
      if (url.searchParams.get("c") !== id) {
        url.searchParams.set("c", id);
        window.history.replaceState(null, "", url);
      }
    } catch {
      // history not available (e.g. a sandboxed frame): the page still works.
    }
  }

  function newChat() {
    closeStream();
    setConversation(`c-${randomHex(4)}`);
    clearMessages();
    hideStatus();
    renderConversations();
    ui.input.focus();
  }

  /** Opens conversation `id` from the list. */
  function switchTo(id) {
    if (id === state.conversation) return;
    if (!NAME_RE.test(id)) return;
    setConversation(id);
    hideStatus();
    openConversation();
    renderConversations();
    ui.convPanel.classList.remove("open");
  }

  // ---------------------------------------------------------------------------------------
  // The conversation list

  /** `?user=NAME` (with `sep` in front) in local mode, else nothing. */
  function userQuery(sep) {
    return state.auth === "local" && state.user ? `${sep}user=${encodeURIComponent(state.user)}` : "";
  }

  async function loadConversations() {
    if (state.auth === "token" && !state.token) return;
    try {
      const data = await api("GET", `/api/v1/conversations${userQuery("?")}`);
      state.conversations = Array.isArray(data && data.conversations) ? data.conversations : [];
      renderConversations();
    } catch {
      // The list is an extra: the open conversation works without it; the next refresh retries.
    }
  }

  let listTimer = null;
  /** Reloads the list shortly (several events in a row make one request). */
  function refreshConversationsSoon() {
    if (listTimer) return;
    listTimer = setTimeout(() => {
      listTimer = null;
      loadConversations();
    }, 400);
  }

  /** Shows the list; entries whose content is unchanged keep their nodes. */
  function renderConversations() {
    const list = state.conversations.filter((c) => c && typeof c.id === "string");
    if (!list.some((c) => c.id === state.conversation)) {
      // The open conversation before its first message: listed so the page shows where it is.
      list.unshift({ id: state.conversation, title: "New conversation", unsaved: true });
    }
    const old = new Map([...ui.convList.children].map((li) => [li.dataset.id, li]));
    const items = list.map((c) => {
      const current = c.id === state.conversation;
      const key = JSON.stringify([c.title, !!c.butler, !!c.unsaved, current]);
      const kept = old.get(c.id);
      if (kept && (kept.dataset.key === key || state.renaming === c.id)) return kept;
      const li = conversationItem(c, current);
      li.dataset.key = key;
      return li;
    });
    items.forEach((li, k) => {
      if (ui.convList.children[k] !== li) ui.convList.insertBefore(li, ui.convList.children[k] || null);
    });
    while (ui.convList.children.length > items.length) ui.convList.lastChild.remove();
  }

  function conversationItem(c, current) {
    const li = el("li", `conv${current ? " current" : ""}${c.butler ? " by-butler" : ""}`);
    li.dataset.id = c.id;
    const open = el("button", "conv-open");
    open.type = "button";
    if (current) open.setAttribute("aria-current", "true");
    const title = el("span", "conv-title");
    title.textContent = String(c.title || "Untitled");
    open.append(title);
    if (c.butler) {
      // A text mark (not only a colour or an icon): Butler wrote here on its own.
      const mark = el("span", "conv-mark");
      mark.textContent = "from Butler";
      mark.title = "Butler wrote here on its own (a briefing, an alert, a background result)";
      open.append(mark);
    }
    open.title = String(c.title || "");
    open.addEventListener("click", () => switchTo(c.id));
    li.append(open);
    if (!c.unsaved) {
      const rename = el("button", "conv-action conv-rename");
      rename.type = "button";
      rename.textContent = "Rename";
      rename.addEventListener("click", () => startRename(li, c));
      const remove = el("button", "conv-action conv-delete");
      remove.type = "button";
      remove.textContent = "Delete";
      remove.addEventListener("click", () => deleteConversation(c));
      li.append(rename, remove);
    }
    return li;
  }

  /** Turns the entry's title into a text field: Enter saves, Escape (or leaving it) cancels. */
  function startRename(li, c) {
    if (state.renaming) return;
    state.renaming = c.id;
    const input = el("input", "conv-title-input");
    input.type = "text";
    input.maxLength = 100;
    input.value = String(c.title || "");
    input.setAttribute("aria-label", "New title");
    const open = li.querySelector(".conv-open");
    open.hidden = true;
    li.insertBefore(input, open);
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      try {
        if (save && title && title !== c.title) {
          await api("PATCH", `${conversationPath(c.id)}${userQuery("?")}`, { title });
        }
      } catch (e) {
        showStatus(`Could not rename: ${e.message}`);
      }
      state.renaming = null;
      input.remove();
      open.hidden = false;
      li.dataset.key = ""; // drawn again from the reloaded list
      await loadConversations();
    };
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        finish(true);
      } else if (ev.key === "Escape") {
        ev.preventDefault();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(false));
    input.focus();
    input.select();
  }

  async function deleteConversation(c) {
    if (!window.confirm(`Delete "${String(c.title || c.id)}"? Its messages leave this page.`)) return;
    try {
      await api("DELETE", `${conversationPath(c.id)}${userQuery("?")}`);
    } catch (e) {
      showStatus(`Could not delete: ${e.message}`);
      return;
    }
    state.conversations = state.conversations.filter((x) => x.id !== c.id);
    if (c.id === state.conversation) newChat();
    else renderConversations();
    loadConversations();
  }

  function openConversation() {
    clearMessages();
    runStream(state.conversation);
  }

  function setSending(busy) {
    state.sending = busy;
    ui.input.disabled = busy;
    updateSendButton();
  }

  async function send() {
    const text = ui.input.value.trim();
    const files = window.ButlerFiles.ready();
    if (files === null) {
      showStatus("A file is still uploading; send when it is done.");
      return;
    }
    if ((!text && !files.length) || state.sending) return;
    if (state.auth === "token" && !state.token) {
      askForToken();
      return;
    }
    const conversation = state.conversation;
    // One id per message: a retry after a network failure is stored once.
    const id = `m-${randomHex(8)}`;
    setSending(true);
    try {
      const body = files.length ? { conversation, text, id, files } : { conversation, text, id };
      await postWithRetry("/api/v1/messages", withUser(body));
      hideStatus();
      window.ButlerFiles.clear();
      if (conversation === state.conversation) {
        ui.input.value = "";
        autosize();
        ensureStream();
        refreshConversationsSoon();
      }
    } catch (e) {
      showStatus(`Could not send: ${e.message}`);
    } finally {
      setSending(false);
      ui.input.focus();
    }
  }

  /** Sets the person's time zone (the browser's is offered) with the `/timezone` command, so
   * the answer shows in the conversation like any other. */
  function setTimezone() {
    let offered = "UTC";
    try {
      offered = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    } catch (_) {
      // An old browser: UTC is offered.
    }
    const zone = window.prompt("Your time zone (an IANA name such as Europe/Berlin):", offered);
    if (!zone || !zone.trim()) return;
    ui.input.value = `/timezone ${zone.trim()}`;
    send();
  }

  /** Grows the textarea with its content, up to the CSS max-height. */
  function autosize() {
    ui.input.style.height = "auto";
    ui.input.style.height = `${ui.input.scrollHeight + 2}px`;
  }

  // ---------------------------------------------------------------------------------------
  // Token mode

  function askForToken(message) {
    ui.tokenError.textContent = message || "";
    ui.tokenError.hidden = !message;
    ui.gate.hidden = false;
    ui.token.focus();
  }

  /** Drops a token the server refused and asks for another. */
  function forgetToken(message) {
    state.token = null;
    storageSet(KEY_TOKEN, null);
    askForToken(message);
  }

  async function submitToken(ev) {
    ev.preventDefault();
    const token = ui.token.value.trim();
    if (!token) return;
    ui.tokenError.hidden = true;
    let res;
    try {
      // Any read answers 401 for a wrong token (and 404 for a conversation not started yet).
      res = await fetch(`${conversationPath(state.conversation)}/messages?limit=1`, {
        headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
        cache: "no-store",
      });
    } catch {
      askForToken("Cannot reach Butler. Try again.");
      return;
    }
    if (res.status === 401) {
      askForToken("That token is not valid.");
      return;
    }
    state.token = token;
    storageSet(KEY_TOKEN, token);
    ui.token.value = "";
    ui.gate.hidden = true;
    if (res.status === 403) newChat();
    else openConversation();
    loadConversations();
    ui.input.focus();
  }

  // ---------------------------------------------------------------------------------------
  // Start

  function applyInfo(info) {
    state.auth = info.auth === "token" ? "token" : "local";
    state.user = info.user || null;
    window.ButlerFiles.configure(info.files);
    const llm = info.llm || {};
    ui.model.textContent = llm.configured ? llm.model || llm.provider || "" : "no model configured";
    if (!llm.configured) {
      ui.hint.textContent = llm.hint || "Configure a language model (see [llm] in the config).";
      ui.banner.hidden = false;
    } else {
      ui.banner.hidden = true;
    }
  }

  async function loadInfo() {
    let delay = 1000;
    for (;;) {
      try {
        const info = await api("GET", "/api/v1/info");
        hideStatus();
        return info;
      } catch {
        showStatus("Cannot reach Butler, retrying…");
        await sleep(delay);
        delay = Math.min(delay * 2, 15000);
      }
    }
  }

  function bind() {
    ui.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      // While a reply streams the button is Stop (Enter in the box still sends).
      if (state.stopTarget) clickButton(state.stopTarget.rec, state.stopTarget.button);
      else send();
    });
    ui.send.addEventListener("pointerdown", (ev) => capturePointer(ui.send, ev));
    ui.input.addEventListener("keydown", (ev) => {
      // Enter sends, Shift+Enter is a new line; not while an IME is composing.
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        send();
      }
    });
    ui.input.addEventListener("input", autosize);
    ui.newChat.addEventListener("click", newChat);
    ui.tz.addEventListener("click", setTimezone);
    ui.convNew.addEventListener("click", newChat);
    ui.convToggle.addEventListener("click", () => ui.convPanel.classList.toggle("open"));
    // Conversations Butler starts on its own (briefings, alerts) appear without a reload.
    setInterval(() => {
      if (!document.hidden) loadConversations();
    }, 30000);
    ui.tokenForm.addEventListener("submit", submitToken);
    window.ButlerFiles.bind({ headers: authHeaders, userQuery });
    window.ButlerPanels.bind({ headers: authHeaders, userQuery });
  }

  async function start() {
    document.documentElement.classList.toggle("no-emoji", !hasEmojiFont());
    bind();
    state.token = storageGet(KEY_TOKEN);
    // A /?c=ID link opens that conversation; else the one open last time, else a new one.
    const linked = new URLSearchParams(window.location.search).get("c");
    const saved = storageGet(KEY_CONVERSATION);
    const first = [linked, saved].find((c) => c && NAME_RE.test(c));
    setConversation(first || `c-${randomHex(4)}`);
    renderConversations();
    applyInfo(await loadInfo());
    if (state.auth === "token" && !state.token) {
      askForToken();
      return;
    }
    openConversation();
    loadConversations();
    ui.input.focus();
  }

  start();
})();
