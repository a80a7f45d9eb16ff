// Files in the web chat page: the attach button, dropping files on the page and pasting
// images upload each file at once (POST /api/v1/files, the raw file as the body) and show it as
// a chip above the box; the message then names the uploaded ids. Files Butler sends are links
// to /api/v1/files/ID: with a token they are fetched with it and saved from a blob.
// Nothing here renders a file or a name as HTML: chips are built from text.
"use strict";

window.ButlerFiles = (() => {
  const $ = (id) => document.getElementById(id);
  // id -> { file, el, status: "uploading" | "ready" | "failed", uploaded }
  const chips = new Map();
  let next = 0;
  let limits = { max_bytes: 20 * 1024 * 1024, max_per_message: 10 };
  let auth = { headers: () => ({}), userQuery: () => "" };

  function size(bytes) {
    if (bytes < 1024) return `${bytes} bytes`;
    const units = ["KB", "MB", "GB"];
    let v = bytes / 1024;
    let u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
  }

  function render(chip) {
    const label = chip.el.querySelector(".file-label");
    const note = chip.status === "uploading" ? " · uploading…" : chip.status === "failed" ? ` · ${chip.error}` : "";
    label.textContent = `📎 ${chip.file.name || "file"} (${size(chip.file.size)})${note}`;
    chip.el.dataset.status = chip.status;
    $("attachments").hidden = chips.size === 0;
  }

  function remove(key) {
    const chip = chips.get(key);
    if (!chip) return;
    if (chip.controller) chip.controller.abort();
    chip.el.remove();
    chips.delete(key);
    $("attachments").hidden = chips.size === 0;
  }

  async function upload(file) {
    if (chips.size >= limits.max_per_message) return;
    const key = `f${next++}`;
    const el = document.createElement("span");
    el.className = "file-chip";
    const label = document.createElement("span");
    label.className = "file-label";
    const drop = document.createElement("button");
    drop.type = "button";
    drop.className = "file-remove";
    drop.setAttribute("aria-label", "Remove file");
    drop.textContent = "×";
    drop.addEventListener("click", () => remove(key));
    el.append(label, drop);
    $("attachments").append(el);
    const chip = { file, el, status: "uploading", uploaded: null, error: "", controller: new AbortController() };
    chips.set(key, chip);
    if (file.size > limits.max_bytes) {
      chip.status = "failed";
      chip.error = `larger than the ${size(limits.max_bytes)} limit`;
      render(chip);
      return;
    }
    render(chip);
    try {
      const path = `/api/v1/files?name=${encodeURIComponent(file.name || "file")}${auth.userQuery("&")}`;
      const res = await fetch(path, {
        method: "POST",
        headers: { ...auth.headers(), "Content-Type": file.type || "application/octet-stream" },
        body: file,
        signal: chip.controller.signal,
      });
      const data = await res.json().catch(() => null);
      if (!res.ok) throw new Error((data && data.error && data.error.message) || `HTTP ${res.status}`);
      chip.uploaded = data.id;
      chip.status = "ready";
    } catch (e) {
      if (!chips.has(key)) return;
      chip.status = "failed";
      chip.error = e.name === "AbortError" ? "cancelled" : e.message;
    }
    chip.controller = null;
    render(chip);
  }

  function uploadAll(list) {
    for (const f of Array.from(list || [])) upload(f);
  }

  /** Saves a file Butler sent, fetched with the token (a plain link cannot send it). */
  async function save(link) {
    const res = await fetch(link.href, { headers: auth.headers() });
    if (!res.ok) return;
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement("a");
    a.href = url;
    a.download = link.textContent || "file";
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  function bind(options) {
    auth = options;
    const input = $("file-input");
    $("attach").addEventListener("click", () => input.click());
    input.addEventListener("change", () => {
      uploadAll(input.files);
      input.value = "";
    });
    document.addEventListener("dragover", (ev) => {
      if (ev.dataTransfer && Array.from(ev.dataTransfer.types || []).includes("Files")) ev.preventDefault();
    });
    document.addEventListener("drop", (ev) => {
      if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
      ev.preventDefault();
      uploadAll(ev.dataTransfer.files);
    });
    $("input").addEventListener("paste", (ev) => {
      const files = ev.clipboardData ? Array.from(ev.clipboardData.files || []) : [];
      if (files.length) {
        ev.preventDefault();
        uploadAll(files);
      }
    });
    $("messages").addEventListener("click", (ev) => {
      const link = ev.target.closest && ev.target.closest("a[href]");
      if (!link || !new URL(link.href).pathname.startsWith("/api/v1/files/")) return;
      if (!Object.keys(auth.headers()).length) return;
      ev.preventDefault();
      save(link);
    });
  }

  return {
    bind,
    /** `info.files` from /api/v1/info: the limits the server enforces. */
    configure(files) {
      if (files && files.max_bytes) limits = files;
    },
    /** Ids of the uploaded files, or null while one is still uploading. */
    ready() {
      const all = Array.from(chips.values());
      if (all.some((c) => c.status === "uploading")) return null;
      return all.filter((c) => c.status === "ready").map((c) => c.uploaded);
    },
    clear() {
      for (const key of Array.from(chips.keys())) remove(key);
    },
  };
})();
