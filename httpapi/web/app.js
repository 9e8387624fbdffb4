// convsvc web page: converts files through this server's own API. Plain JavaScript, no
// dependencies. The API key lives in sessionStorage only (never in a URL or a cookie); files
// are uploaded straight to object storage through the signed upload URL the API returns.
"use strict";

(() => {
  const KEY = "convsvc.apiKey";
  const PRESETS = "convsvc.presets"; // preset names this tab created jobs with, offered again
  const WAIT = 30; // seconds a status request may be held (the API allows up to 60)
  const FETCH_DOWNLOAD_MAX = 512 * 1024 * 1024; // larger outputs download by plain navigation
  const MAX_INPUT_BYTES = 2000000000; // the most a source_url fetch may bring (docs/remote.md)
  const MAX_BATCH = 500; // jobs in one batch (docs/batches.md)
  const FINISHED = new Set(["succeeded", "failed", "cancelled"]);
  const OPTION_INPUTS = {
    quality: { label: "Quality (1-100)", min: 1, max: 100 },
    width: { label: "Width (px)", min: 1, max: 32768 },
    height: { label: "Height (px)", min: 1, max: 32768 },
    page: { label: "Page", min: 1, only: ["pdf"] },
    dpi: { label: "DPI (10-1200)", min: 10, max: 1200, only: ["pdf", "svg"] },
    // Several pages to one-image formats come back as a zip of page-0001.png, ... (outputName).
    pages: { label: 'Pages ("all", "1-3,7"; default one)', only: ["pdf", "markdown", "html", "txt", "docx", "epub"], text: true, maxLength: 1000 },
    max_bytes: { label: "Largest output (bytes)", min: 1 },
  };
  // The transforms take image inputs only (the API refuses them for others).
  const IMAGE_INPUTS = ["png", "jpeg", "gif", "bmp", "tiff", "webp", "avif", "jxl", "qoi", "ppm", "ico"];
  const TRANSFORMS = {
    rotate: { label: "Rotate (clockwise)", choices: [["", "none"], ["90", "90°"], ["180", "180°"], ["270", "270°"]], number: true },
    flip: { label: "Flip", choices: [["", "none"], ["horizontal", "horizontal"], ["vertical", "vertical"]] },
    crop: { label: "Crop (left, top, width, height in px)", text: true },
    background: { label: "Background for transparency (#rrggbb)", text: true },
    auto_orient: { label: "Ignore EXIF orientation", check: false },
    strip_metadata: { label: "Keep metadata (EXIF, XMP, colour profile)", check: false },
  };
  // Options of the input rather than of the target: offered whatever the target, when the
  // input is one of only.
  const INPUT_OPTIONS = {
    sheet: { label: "Sheet (name or number; default the first)", only: ["xlsx"], maxLength: 31 },
  };

  // The target each input format most likely goes to, chosen when a file is added (the list
  // is alphabetical, which put AVIF first for Markdown and EPUB first for CSV). The one table of
  // defaults: a format not in it, or one that cannot reach its entry, starts on the first.
  const LIKELY_TARGET = {
    // documents to PDF; a PDF to an image of its page
    markdown: "pdf", html: "pdf", docx: "pdf", txt: "pdf", epub: "pdf", pdf: "png",
    // a table to a workbook, a workbook to CSV, structured data to JSON (JSON to CSV)
    csv: "xlsx", tsv: "xlsx", xlsx: "csv", json: "csv", ndjson: "json", yaml: "json", toml: "json", xml: "json",
    // images to what opens everywhere: a PNG to JPEG, everything else to PNG (HEIC to JPEG)
    png: "jpeg", jpeg: "png", webp: "png", avif: "png", jxl: "png", heic: "jpeg", gif: "png", bmp: "png",
    tiff: "png", ico: "png", ppm: "png", qoi: "png", svg: "png", psd: "png",
    // audio to WAV (a WAV to FLAC); archives to ZIP (a ZIP to tar.gz)
    wav: "flac", flac: "wav", mp3: "wav", ogg: "wav",
    zip: "tgz", tar: "zip", tgz: "zip", tzst: "zip",
  };

  const $ = (sel, root = document) => root.querySelector(sel);
  let formatList = null; // promise of the GET /v1/formats list
  const formatDetails = new Map(); // id -> promise of GET /v1/formats/{id}
  let seq = 0;
  const items = new WeakMap(); // an item's node -> the item

  /** An error the API or object storage answered, with its own message. */
  class APIError extends Error {
    constructor(message, code, status) {
      super(message);
      this.code = code || "";
      this.status = status || 0;
    }
  }

  function apiKey() {
    return sessionStorage.getItem(KEY) || "";
  }

  function randomID() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // errorFrom builds an APIError from a refused answer: the service's own message, and for a
  // rate limit the wait that Retry-After gives.
  function errorFrom(status, text, retryAfter) {
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    const err = data && data.error;
    let msg = (err && err.message) || text || "HTTP " + status;
    if (status === 429 && retryAfter) {
      msg += " Try again in " + retryAfter + " s.";
    }
    const code = (err && err.code) || "";
    return new APIError(code ? msg + " (" + code + ")" : msg, code, status);
  }

  async function api(method, path, body, headers = {}) {
    const init = { method, headers: { ...headers }, cache: "no-store" };
    const key = apiKey();
    if (key) init.headers.Authorization = "Bearer " + key;
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      // Relative to the page, so it also works behind a proxy that serves it under a prefix.
      resp = await fetch(path.replace(/^\//, ""), init);
    } catch (e) {
      throw new APIError("The server did not answer (" + e.message + ").");
    }
    const text = await resp.text();
    if (!resp.ok) throw errorFrom(resp.status, text, resp.headers.get("Retry-After"));
    return text ? JSON.parse(text) : null;
  }

  function formats() {
    if (!formatList) {
      formatList = api("GET", "/v1/formats").catch((e) => {
        formatList = null;
        throw e;
      });
    }
    return formatList;
  }

  function formatDetail(id) {
    if (!formatDetails.has(id)) {
      const p = api("GET", "/v1/formats/" + encodeURIComponent(id));
      p.catch(() => formatDetails.delete(id));
      formatDetails.set(id, p);
    }
    return formatDetails.get(id);
  }

  // sniff picks the format of a file from its extension, else from its MIME type.
  function sniff(file, list) {
    const dot = file.name.lastIndexOf(".");
    const ext = dot > 0 ? file.name.slice(dot + 1).toLowerCase() : "";
    let f = ext && list.find((f) => f.extensions.includes(ext));
    if (!f && file.type) f = list.find((f) => f.mime === file.type);
    return f ? f.id : "";
  }

  function bytes(n) {
    const units = ["bytes", "KiB", "MiB", "GiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
  }

  function announce(text) {
    const el = $("#announce");
    el.textContent = "";
    setTimeout(() => (el.textContent = text), 50);
  }

  // ---- the API key ----

  function setupKey() {
    const form = $("#key-form");
    const input = $("#key");
    const status = $("#key-status");
    if (apiKey()) {
      input.value = apiKey();
      status.textContent = "Using the key saved in this tab.";
    }
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const key = input.value.trim();
      if (!key) {
        status.textContent = "Paste a key first.";
        input.focus();
        return;
      }
      sessionStorage.setItem(KEY, key);
      status.textContent = "Checking the key…";
      try {
        await api("GET", "/v1/jobs?limit=1");
        status.textContent = "Key accepted; it is kept in this tab only.";
      } catch (err) {
        status.textContent = "The key was refused: " + err.message;
        input.focus();
      }
    });
    $("#forget").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      input.value = "";
      status.textContent = "Key forgotten.";
      input.focus();
    });
  }

  // ---- files ----

  function setupFiles() {
    const drop = $("#drop");
    const input = $("#files");
    input.addEventListener("change", () => {
      addFiles(input.files);
      input.value = "";
    });
    for (const ev of ["dragenter", "dragover"]) {
      drop.addEventListener(ev, (e) => {
        e.preventDefault();
        drop.classList.add("over");
      });
    }
    for (const ev of ["dragleave", "drop"]) {
      drop.addEventListener(ev, () => drop.classList.remove("over"));
    }
    drop.addEventListener("drop", (e) => {
      e.preventDefault();
      addFiles(e.dataTransfer.files);
    });
    $("#url-form").addEventListener("submit", (e) => {
      e.preventDefault();
      addURL();
    });
    $("#convert-all").addEventListener("click", () => convertAll());
    $("#download-all").addEventListener("click", (e) => downloadAll(e));
    // A file dropped beside the zone must not replace the page.
    document.addEventListener("dragover", (e) => e.preventDefault());
    document.addEventListener("drop", (e) => e.preventDefault());
  }

  function addFiles(files) {
    const list = Array.from(files || []);
    if (!list.length) return;
    let first = null;
    for (const f of list) {
      const it = addItem(f);
      first = first || it;
    }
    $("#empty").hidden = true;
    updateBatch();
    announce(list.length === 1 ? "1 file added." : list.length + " files added.");
    first.inputSel.focus();
  }

  // addURL adds an item for a file the server fetches itself (source_url): named after the
  // URL's last path segment, whose extension picks the input format (the picker changes it).
  function addURL() {
    const input = $("#source-url");
    const status = $("#source-url-status");
    status.textContent = "";
    let url;
    try {
      url = new URL(input.value.trim());
    } catch (_) {
      url = null;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !url.host) {
      status.textContent = "Type an absolute http or https URL.";
      input.focus();
      return;
    }
    const segs = url.pathname.split("/").filter((x) => x);
    let name = segs.length ? segs[segs.length - 1] : url.hostname;
    try {
      name = decodeURIComponent(name);
    } catch (_) {
      // keep it as written
    }
    const it = addItem({ name, size: 0, type: "" }, url.href);
    input.value = "";
    $("#empty").hidden = true;
    announce(name + " added from its URL.");
    it.inputSel.focus();
  }

  function addItem(file, sourceURL) {
    const id = ++seq;
    const node = $("#item-template").content.firstElementChild.cloneNode(true);
    const it = {
      id,
      file,
      sourceURL: sourceURL || "",
      busy: false,
      node,
      job: null,
      xhr: null,
      cancelled: false,
      inputSel: $(".input", node),
      targetSel: $(".target", node),
      presetIn: $(".preset", node),
      presetHelp: $(".preset-help", node),
      optionsBox: $(".options", node),
      optionFields: $(".option-fields", node),
      convertBtn: $(".convert", node),
      cancelBtn: $(".cancel", node),
      removeBtn: $(".remove", node),
      progressRow: $(".progress-row", node),
      progress: $(".upload", node),
      progressText: $(".upload-text", node),
      state: $(".state", node),
      error: $(".error", node),
      result: $(".result", node),
      link: $(".download", node),
      warnings: $(".warnings", node),
    };
    const pid = "item-" + id;
    node.id = pid;
    node.setAttribute("aria-labelledby", pid + "-name");
    $(".name", node).id = pid + "-name";
    $(".name", node).textContent = file.name;
    $(".meta", node).textContent = sourceURL ? "Fetched by the server from " + sourceURL : bytes(file.size) + (file.type ? ", " + file.type : "");
    const bind = (labelSel, el, suffix) => {
      el.id = pid + "-" + suffix;
      $(labelSel, node).htmlFor = el.id;
    };
    bind(".l-input", it.inputSel, "input");
    bind(".l-target", it.targetSel, "target");
    bind(".l-preset", it.presetIn, "preset");
    it.presetHelp.id = pid + "-preset-help";
    it.presetIn.setAttribute("aria-describedby", it.presetHelp.id);
    bind(".l-progress", it.progress, "progress");
    it.convertBtn.setAttribute("aria-describedby", pid + "-name");
    it.cancelBtn.setAttribute("aria-describedby", pid + "-name");
    it.removeBtn.setAttribute("aria-describedby", pid + "-name");

    it.inputSel.addEventListener("change", () => loadTargets(it));
    it.targetSel.addEventListener("change", () => loadOptions(it));
    it.presetIn.addEventListener("input", () => presetChanged(it));
    it.convertBtn.addEventListener("click", () => convert(it));
    it.cancelBtn.addEventListener("click", () => cancel(it));
    it.removeBtn.addEventListener("click", () => remove(it));
    it.link.addEventListener("click", (e) => download(it, e));
    items.set(node, it);
    $("#items").appendChild(node);
    loadFormats(it);
    return it;
  }

  function remove(it) {
    if (it.xhr || (it.job && !FINISHED.has(it.job.status))) return;
    const next = it.node.nextElementSibling || it.node.previousElementSibling;
    it.node.remove();
    if (!$("#items").children.length) $("#empty").hidden = false;
    updateBatch();
    announce(it.file.name + " removed.");
    (next ? $(".convert", next) : $("#files")).focus();
  }

  function option(sel, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    sel.appendChild(o);
    return o;
  }

  async function loadFormats(it) {
    try {
      const list = await formats();
      it.inputSel.replaceChildren();
      option(it.inputSel, "", "Choose the file's format");
      for (const f of list) option(it.inputSel, f.id, f.name + " (" + f.id + ")");
      it.inputSel.value = sniff(it.file, list);
      await loadTargets(it);
    } catch (err) {
      showError(it, err);
    }
  }

  async function loadTargets(it) {
    const input = it.inputSel.value;
    it.targetSel.replaceChildren();
    if (!input) {
      option(it.targetSel, "", "Choose the input format first");
      it.convertBtn.disabled = true;
      return loadOptions(it);
    }
    try {
      const [detail, list] = await Promise.all([formatDetail(input), formats()]);
      if (it.inputSel.value !== input) return;
      const names = new Map(list.map((f) => [f.id, f.name]));
      if (!detail.targets.length) {
        option(it.targetSel, "", "No conversions from this format");
      }
      for (const t of detail.targets) option(it.targetSel, t, (names.get(t) || t) + " (" + t + ")");
      if (detail.targets.includes(LIKELY_TARGET[input])) it.targetSel.value = LIKELY_TARGET[input];
      it.convertBtn.disabled = !detail.targets.length;
      await loadOptions(it);
    } catch (err) {
      showError(it, err);
    }
  }

  // loadOptions shows the options the chosen target takes (GET /v1/formats/{target}.options),
  // without those that only mean something for other inputs, and the input's own options.
  async function loadOptions(it) {
    it.optionFields.replaceChildren();
    it.optionsBox.hidden = true;
    delete it.optionsBox.dataset.for;
    const target = it.targetSel.value;
    if (!target) return;
    let detail;
    try {
      detail = await formatDetail(target);
    } catch (err) {
      showError(it, err);
      return;
    }
    if (it.targetSel.value !== target) return;
    const input = it.inputSel.value;
    for (const [name, spec] of Object.entries(INPUT_OPTIONS)) {
      if (!spec.only.includes(input)) continue;
      const field = document.createElement("div");
      field.className = "field";
      const label = document.createElement("label");
      label.htmlFor = "item-" + it.id + "-opt-" + name;
      label.textContent = spec.label;
      const control = document.createElement("input");
      control.type = "text";
      control.id = label.htmlFor;
      control.maxLength = spec.maxLength;
      control.spellcheck = false;
      control.autocomplete = "off";
      control.placeholder = "default";
      control.dataset.option = name;
      control.dataset.text = "true";
      field.append(label, control);
      it.optionFields.appendChild(field);
    }
    for (const name of detail.options) {
      const spec = OPTION_INPUTS[name];
      if (spec && spec.only && !spec.only.includes(input)) continue;
      const tr = TRANSFORMS[name];
      if (tr && (!IMAGE_INPUTS.includes(input) || (name === "background" && !["jpeg", "ppm"].includes(target)))) continue;
      const field = document.createElement("div");
      field.className = "field";
      const label = document.createElement("label");
      const fid = "item-" + it.id + "-opt-" + name;
      label.htmlFor = fid;
      let control;
      if (name === "fit") {
        label.textContent = "Fit (needs width and height)";
        control = document.createElement("select");
        option(control, "", "default (contain)");
        for (const v of ["contain", "cover", "fill"]) option(control, v, v);
      } else if (spec && spec.text) {
        label.textContent = spec.label;
        control = document.createElement("input");
        control.type = "text";
        control.maxLength = spec.maxLength;
        control.spellcheck = false;
        control.autocomplete = "off";
        control.placeholder = "default";
        control.dataset.text = "true";
      } else if (tr && tr.choices) {
        label.textContent = tr.label;
        control = document.createElement("select");
        for (const [v, text] of tr.choices) option(control, v, text);
        if (tr.number) control.dataset.number = "true";
      } else if (tr && tr.text) {
        label.textContent = tr.label;
        control = document.createElement("input");
        control.type = "text";
        control.spellcheck = false;
        control.autocomplete = "off";
        control.placeholder = "none";
        control.dataset.text = "true";
      } else if (tr && tr.check !== undefined) {
        field.classList.add("check");
        label.textContent = tr.label;
        control = document.createElement("input");
        control.type = "checkbox";
        control.dataset.checked = JSON.stringify(tr.check);
      } else if (name === "lossless") {
        field.classList.add("check");
        label.textContent = "Lossless";
        control = document.createElement("input");
        control.type = "checkbox";
      } else {
        label.textContent = spec ? spec.label : name;
        control = document.createElement("input");
        control.type = "number";
        control.inputMode = "numeric";
        if (spec && spec.min !== undefined) control.min = spec.min;
        if (spec && spec.max !== undefined) control.max = spec.max;
        control.placeholder = "default";
      }
      control.id = fid;
      control.dataset.option = name;
      if (control.type === "checkbox") field.append(control, label);
      else field.append(label, control);
      it.optionFields.appendChild(field);
    }
    it.optionsBox.hidden = !it.optionFields.children.length;
    it.optionsBox.dataset.for = input + ">" + target; // what the fields are for, once shown
  }

  // presetName is the preset the item names, or "" (the API refuses options beside a preset).
  function presetName(it) {
    return it.presetIn.value.trim();
  }

  // presetChanged disables the option fields while a preset is named: the preset sets them.
  function presetChanged(it) {
    const named = presetName(it) !== "";
    it.presetHelp.hidden = !named;
    it.optionsBox.disabled = named;
  }

  // rememberPreset offers a preset the API accepted in every item's list from now on.
  function rememberPreset(name) {
    let names = [];
    try {
      names = JSON.parse(sessionStorage.getItem(PRESETS) || "[]");
    } catch (_) {
      names = [];
    }
    if (!Array.isArray(names)) names = [];
    if (!names.includes(name)) names.push(name);
    sessionStorage.setItem(PRESETS, JSON.stringify(names.slice(-50)));
    showPresets();
  }

  function showPresets() {
    let names = [];
    try {
      names = JSON.parse(sessionStorage.getItem(PRESETS) || "[]");
    } catch (_) {
      names = [];
    }
    const list = $("#preset-names");
    list.replaceChildren();
    if (Array.isArray(names)) for (const n of names) if (typeof n === "string") option(list, n, n);
  }

  function readOptions(it) {
    if (presetName(it)) return undefined;
    const opts = {};
    for (const el of it.optionFields.querySelectorAll("[data-option]")) {
      const name = el.dataset.option;
      if (el.type === "checkbox") {
        if (el.checked) opts[name] = el.dataset.checked ? JSON.parse(el.dataset.checked) : true;
      } else if (name === "crop") {
        const n = el.value.split(",").map((v) => Number(v.trim()));
        if (el.value.trim() !== "") opts.crop = n.length === 4 && n.every(Number.isInteger) ? { left: n[0], top: n[1], width: n[2], height: n[3] } : el.value;
      } else if (el.dataset.number) {
        if (el.value) opts[name] = Number(el.value);
      } else if (el.tagName === "SELECT" || el.dataset.text) {
        if (el.value) opts[name] = el.value;
      } else if (el.value !== "") {
        opts[name] = Number(el.value);
      }
    }
    return Object.keys(opts).length ? opts : undefined;
  }

  // ---- a conversion ----

  const STATE_TEXT = {
    created: "Reserved; uploading the file…",
    uploaded: "Uploaded.",
    queued: "Queued: waiting for a worker.",
    running: "Converting…",
    succeeded: "Done.",
    cancelled: "Cancelled.",
  };

  function showJob(it, job) {
    it.job = job;
    let text = STATE_TEXT[job.status] || job.status;
    if (job.status === "failed") {
      const codes = [job.error_code, job.error_reason].filter((c) => c).join(", ");
      text = "Failed: " + (job.error_message || "the conversion failed") + (codes ? " (" + codes + ")" : "");
    }
    if (job.status === "running" && typeof job.progress === "number") {
      text += " " + Math.round(job.progress * 100) + "%";
    }
    const cached = job.status === "succeeded" && job.output && job.output.cached === true;
    if (cached) text = it.uploaded ? "Done: from cache, nothing converted." : "Done: from cache, nothing uploaded or converted.";
    it.state.dataset.cached = cached ? "true" : "";
    it.state.dataset.status = job.status;
    it.state.textContent = text;
  }

  function showError(it, err) {
    it.error.textContent = err.message;
  }

  function setBusy(it, busy) {
    it.busy = busy;
    it.convertBtn.hidden = busy;
    it.cancelBtn.hidden = !busy;
    it.cancelBtn.disabled = false;
    it.removeBtn.disabled = busy;
    it.inputSel.disabled = busy;
    it.targetSel.disabled = busy;
    it.presetIn.disabled = busy;
    for (const el of it.optionFields.querySelectorAll("input, select")) el.disabled = busy;
    updateBatch();
  }

  // HASH_MAX is the largest file whose SHA-256 the page takes: crypto.subtle.digest takes the
  // whole file in memory at once. A larger file is sent without input_sha256.
  const HASH_MAX = 256 * 1024 * 1024;

  // fileSHA256 is the file's SHA-256 in lowercase hex, or "" where the browser cannot take it
  // (no crypto.subtle outside a secure context, a file over HASH_MAX, a read error).
  async function fileSHA256(file) {
    if (!window.crypto || !crypto.subtle || file.size > HASH_MAX) return "";
    try {
      const digest = await crypto.subtle.digest("SHA-256", await file.arrayBuffer());
      return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    } catch (_) {
      return "";
    }
  }

  // resetItem clears what an item showed of its last conversion, before another.
  function resetItem(it) {
    delete it.state.dataset.via;
    delete it.state.dataset.cached;
    it.uploaded = false;
    it.error.textContent = "";
    it.result.hidden = true;
    it.warnings.hidden = true;
    it.warnings.replaceChildren();
    it.cancelled = false;
    it.job = null;
  }

  async function convert(it) {
    resetItem(it);
    if (!apiKey()) {
      showError(it, new APIError("Paste an API key above first."));
      $("#key").focus();
      return;
    }
    setBusy(it, true);
    it.cancelBtn.focus();
    it.state.dataset.status = "";
    it.state.textContent = "Reserving a job…";
    try {
      const body = jobBody(it);
      if (!it.sourceURL) {
        // The file's SHA-256 lets the server answer from its conversion cache at create,
        // so the upload is skipped (and checks the upload against it otherwise).
        it.state.textContent = "Reading the file…";
        const sum = await fileSHA256(it.file);
        if (sum) body.input_sha256 = sum;
        it.state.textContent = "Reserving a job…";
      }
      const res = await api("POST", "/v1/jobs", body, { "Idempotency-Key": randomID() });
      if (body.preset) rememberPreset(body.preset);
      showJob(it, res.job);
      if (it.cancelled) {
        await cancelJob(it);
        return;
      }
      let job = res.job;
      if (!it.sourceURL && !FINISHED.has(job.status)) {
        // A source_url job is queued at create: nothing to upload, no start to call; a job
        // answered from the cache has succeeded already.
        await upload(it, res.upload_url);
        it.uploaded = true;
        if (it.cancelled) return;
        job = await api("POST", "/v1/jobs/" + res.job.id + "/start");
        showJob(it, job);
      }
      await follow(it, job);
    } catch (err) {
      if (!it.cancelled) {
        showError(it, err);
        if (it.job && !FINISHED.has(it.job.status)) {
          await release(it);
        } else if (!it.job) {
          it.state.textContent = "";
        }
      }
    } finally {
      it.xhr = null;
      const refocus = document.activeElement === it.cancelBtn || document.activeElement === document.body;
      setBusy(it, false);
      it.progressRow.hidden = it.progress.value === 0;
      if (refocus) (it.result.hidden ? it.convertBtn : it.link).focus();
    }
  }

  // jobBody is the create body for an item: its formats and size (for a URL, the most the
  // fetch may bring), and its preset or its options.
  function jobBody(it) {
    const body = {
      input_format: it.inputSel.value,
      target_format: it.targetSel.value,
      input_bytes: it.sourceURL ? MAX_INPUT_BYTES : it.file.size,
    };
    if (it.sourceURL) body.source_url = it.sourceURL;
    const preset = presetName(it);
    if (preset) body.preset = preset;
    const opts = readOptions(it);
    if (opts) body.options = opts;
    return body;
  }

  // follow shows the job's states until it finishes, then its result: from the job's event
  // stream (every state change, and a running job's progress), or where the stream cannot be
  // read by polling, each request returning at the job's next move (changed_from).
  async function follow(it, job) {
    try {
      job = await followEvents(it, job);
    } catch (_) {
      job = it.job || job; // the stream broke off or was refused: poll from what is shown
    }
    while (!FINISHED.has(job.status)) {
      job = await api("GET", "/v1/jobs/" + job.id + "?wait=" + WAIT + "&changed_from=" + job.status);
      showJob(it, job);
    }
    if (job.status === "succeeded") await showResult(it, job);
  }

  // followEvents reads GET /v1/jobs/{id}/events (Server-Sent Events, read with fetch so the key
  // goes in the Authorization header) and shows each event's job until the final one.
  async function followEvents(it, job) {
    const resp = await fetch("v1/jobs/" + job.id + "/events", {
      headers: { Authorization: "Bearer " + apiKey(), Accept: "text/event-stream" },
      cache: "no-store",
    });
    if (!resp.ok || !resp.body) throw new APIError("no event stream", "", resp.status);
    it.state.dataset.via = "events";
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return job;
        buf += value;
        let end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
          if (!data) continue; // a comment (heartbeat) or the retry line
          const ev = JSON.parse(data);
          if (!ev.data || !ev.data.job) continue;
          job = ev.data.job;
          showJob(it, job);
          if (FINISHED.has(job.status)) return job;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  // ---- several files as one batch ----

  let batchRunning = false;
  let batchID = "";

  // batchItems are the file items (not URLs) a batch would convert now: every one not busy.
  function batchItems() {
    return Array.from($("#items").children).map((n) => items.get(n)).filter((it) => it && !it.sourceURL && !it.busy);
  }

  // updateBatch shows "Convert all" while two or more files are listed.
  function updateBatch() {
    const n = Array.from($("#items").children).map((n) => items.get(n)).filter((it) => it && !it.sourceURL).length;
    $("#batch").hidden = n < 2 && !batchID;
    const ready = batchItems().length;
    $("#convert-all").textContent = "Convert all " + ready + " files as one batch";
    $("#convert-all").disabled = batchRunning || ready < 2 || ready > MAX_BATCH;
  }

  // convertAll reserves one batch for every listed file (POST /v1/batches, each item the body
  // a single conversion would send), uploads each file, starts the batch, follows it until
  // every job has finished, shows each file's result, and offers the batch's zip.
  async function convertAll() {
    const list = batchItems();
    const state = $("#batch-state");
    const error = $("#batch-error");
    error.textContent = "";
    if (list.length < 2 || batchRunning) return;
    if (!apiKey()) {
      error.textContent = "Paste an API key above first.";
      $("#key").focus();
      return;
    }
    batchRunning = true;
    batchID = "";
    $("#download-all").hidden = true;
    updateBatch();
    for (const it of list) {
      resetItem(it);
      it.progress.value = 0;
      setBusy(it, true);
      it.state.dataset.status = "";
      it.state.textContent = "Reserving in a batch…";
    }
    state.dataset.status = "";
    state.textContent = "Reserving a batch of " + list.length + " jobs…";
    try {
      const bodies = list.map(jobBody);
      const res = await api("POST", "/v1/batches", { jobs: bodies }, { "Idempotency-Key": randomID() });
      batchID = res.id;
      $("#batch").dataset.batchId = res.id;
      for (const b of bodies) if (b.preset) rememberPreset(b.preset);
      list.forEach((it, i) => showJob(it, res.jobs[i].job));
      // Each upload in turn; a file that fails is cancelled (releasing its cent) and the
      // others go on.
      let done = 0;
      for (const [i, it] of list.entries()) {
        state.textContent = "Uploading " + (i + 1) + " of " + list.length + "…";
        if (it.cancelled) continue;
        try {
          await upload(it, res.jobs[i].upload_url);
          it.uploaded = true;
          done++;
        } catch (err) {
          if (!it.cancelled) {
            showError(it, err);
            await release(it);
          }
        }
      }
      state.textContent = "Starting the batch…";
      let batch = await api("POST", "/v1/batches/" + batchID + "/start");
      if (done) await refreshJobs(list);
      let seen = "";
      while (batch.status !== "finished") {
        const c = batch.counts;
        if (c.created && !c.queued && !c.running) break; // uploads that failed and could not be cancelled
        state.textContent = "Converting: " + c.succeeded + " done, " + c.failed + " failed, " + (c.queued + c.running) + " to go, of " + batch.total + ".";
        const counts = JSON.stringify(c);
        if (counts !== seen) {
          seen = counts;
          await refreshJobs(list);
        }
        batch = await api("GET", "/v1/batches/" + batchID + "?wait=5");
      }
      await refreshJobs(list);
      const c = batch.counts;
      state.dataset.status = c.succeeded === batch.total ? "succeeded" : c.succeeded ? "" : "failed";
      state.textContent = "Batch done: " + c.succeeded + " of " + batch.total + " converted" + (c.failed ? ", " + c.failed + " failed" : "") + (c.cancelled ? ", " + c.cancelled + " cancelled" : "") + ".";
      for (const it of list) if (it.job && it.job.status === "succeeded") await showResult(it, it.job);
      if (c.succeeded) {
        const a = $("#download-all");
        a.hidden = false;
        a.textContent = "Download all (zip, " + c.succeeded + (c.succeeded === 1 ? " file)" : " files)");
      }
    } catch (err) {
      error.textContent = err.message;
      state.textContent = batchID ? state.textContent : "";
      for (const it of list) {
        if (!it.job) it.state.textContent = "";
        else if (!FINISHED.has(it.job.status) && !it.cancelled) await release(it);
      }
    } finally {
      batchRunning = false;
      for (const it of list) {
        it.xhr = null;
        setBusy(it, false);
        it.progressRow.hidden = it.progress.value === 0;
      }
      updateBatch();
      if (document.activeElement === document.body || document.activeElement === $("#convert-all")) {
        ($("#download-all").hidden ? $("#convert-all") : $("#download-all")).focus();
      }
    }
  }

  // refreshJobs reads the job of every unfinished item of the batch once.
  async function refreshJobs(list) {
    for (const it of list) {
      if (!it.job || FINISHED.has(it.job.status)) continue;
      showJob(it, await api("GET", "/v1/jobs/" + it.job.id));
    }
  }

  // downloadAll fetches the batch's zip with the key (the archive is an API call, not a signed
  // URL) and saves it from a blob: URL.
  async function downloadAll(e) {
    e.preventDefault();
    const a = $("#download-all");
    const error = $("#batch-error");
    if (!batchID || a.dataset.saving) return;
    a.dataset.saving = "true";
    error.textContent = "";
    try {
      let resp;
      try {
        resp = await fetch("v1/batches/" + encodeURIComponent(batchID) + "/archive", { headers: { Authorization: "Bearer " + apiKey() }, cache: "no-store" });
      } catch (err) {
        throw new APIError("The server did not answer (" + err.message + ").");
      }
      if (!resp.ok) throw errorFrom(resp.status, await resp.text(), resp.headers.get("Retry-After"));
      saveBlob(await resp.blob(), batchID + ".zip");
    } catch (err) {
      error.textContent = err.message;
    } finally {
      delete a.dataset.saving;
    }
  }

  // saveBlob saves data under name through a blob: URL.
  function saveBlob(blob, name) {
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    announce("Saving " + name + ".");
  }

  // upload PUTs the file to the signed URL with XMLHttpRequest, whose upload events give the
  // byte progress that fetch does not.
  function upload(it, url) {
    it.progressRow.hidden = false;
    it.progress.value = 0;
    it.progress.max = it.file.size;
    it.progressText.textContent = "0 of " + bytes(it.file.size);
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      it.xhr = xhr;
      xhr.open("PUT", url);
      xhr.upload.addEventListener("progress", (e) => {
        if (!e.lengthComputable) return;
        it.progress.value = e.loaded;
        it.progressText.textContent = bytes(e.loaded) + " of " + bytes(e.total);
      });
      xhr.addEventListener("load", () => {
        it.xhr = null;
        if (xhr.status >= 200 && xhr.status < 300) {
          it.progress.value = it.file.size;
          it.progressText.textContent = "Uploaded " + bytes(it.file.size) + ".";
          resolve();
        } else {
          reject(errorFrom(xhr.status, xhr.responseText, xhr.getResponseHeader("Retry-After")));
        }
      });
      xhr.addEventListener("error", () => {
        it.xhr = null;
        reject(new APIError("The upload to object storage failed: the network failed, or storage refused this page's origin (" + storageHint() + ")."));
      });
      xhr.addEventListener("abort", () => {
        it.xhr = null;
        reject(new APIError("Upload cancelled.", "cancelled"));
      });
      xhr.send(it.file);
    });
  }

  // release cancels the job a failed step (upload, start, wait) left unfinished, so that its
  // reservation (a cent against the spend cap) is released now rather than at expiry.
  async function release(it) {
    try {
      showJob(it, await api("POST", "/v1/jobs/" + it.job.id + "/cancel"));
      it.state.textContent = "Cancelled, so nothing is charged.";
    } catch (err) {
      if (err.code === "invalid_state") {
        try {
          showJob(it, await api("GET", "/v1/jobs/" + it.job.id)); // it finished meanwhile
        } catch (_) {
          // the job's state stays as last shown
        }
        return;
      }
      it.state.textContent = "The job " + it.job.id + " could not be cancelled (" + err.message + "); it holds its reservation until it expires.";
    }
  }

  // storageHint says where uploads from this page are allowed: the bucket's CORS rule when
  // object storage is S3 (the server says so in index.html), else --cors-origins.
  function storageHint() {
    if (document.body.dataset.objectStorage === "s3") {
      return "the bucket's CORS rule must allow this page's origin, " + location.origin + " (docs/scaling.md, Bucket settings)";
    }
    return "the operator allows it with --cors-origins";
  }

  async function cancelJob(it) {
    try {
      showJob(it, await api("POST", "/v1/jobs/" + it.job.id + "/cancel"));
    } catch (err) {
      if (err.code === "invalid_state") {
        showJob(it, await api("GET", "/v1/jobs/" + it.job.id));
      } else {
        showError(it, err);
      }
    }
  }

  async function cancel(it) {
    it.cancelled = true;
    it.cancelBtn.disabled = true;
    if (it.xhr) it.xhr.abort();
    if (it.job) {
      await cancelJob(it);
    } else {
      it.state.textContent = "Cancelling…";
    }
  }

  // severalPages says whether a pages option may select more than one page ("all", "1-3", "3-"),
  // which makes an image target's output a zip (a TIFF or PDF holds them all).
  function severalPages(pages) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(pages || "");
    return !!pages && !(m && (m[2] === undefined || Number(m[1]) === Number(m[2])));
  }

  function outputName(it, job, list) {
    const f = list.find((f) => f.id === job.target_format);
    let ext = f && f.extensions.length ? f.extensions[0] : job.target_format;
    if (f && f.category === "image" && f.id !== "tiff" && job.options && severalPages(job.options.pages)) ext = "zip";
    const dot = it.file.name.lastIndexOf(".");
    const base = dot > 0 ? it.file.name.slice(0, dot) : it.file.name;
    return (base || job.id) + "." + ext;
  }

  async function showResult(it, job) {
    const name = outputName(it, job, await formats());
    it.outputName = name;
    it.link.href = job.output.url;
    it.link.download = name;
    it.link.textContent = "Download " + name + " (" + bytes(job.output.bytes) + ")";
    // What the conversion could not keep, as the job's output says (issue 23).
    const warnings = job.output.warnings || [];
    it.warnings.replaceChildren(...warnings.map((w) => {
      const li = document.createElement("li");
      li.textContent = "Not kept: " + w.message + " (" + w.code + ")";
      return li;
    }));
    it.warnings.hidden = warnings.length === 0;
    it.result.hidden = false;
  }

  // download saves the output under the input's name with the target's extension: a
  // cross-origin link's download attribute is ignored, so the page fetches the file (object
  // storage allows this origin) and saves it from a blob: URL. Very large files, or a failed
  // fetch, fall back to the link itself (then the file is named after the job).
  async function download(it, e) {
    if (!it.job || !it.job.output || it.job.output.bytes > FETCH_DOWNLOAD_MAX || it.saving) return;
    e.preventDefault();
    it.saving = true;
    it.error.textContent = "";
    try {
      const job = await api("GET", "/v1/jobs/" + it.job.id); // a freshly signed URL
      if (!job.output) throw new APIError("The output is gone (the job expired).");
      it.link.href = job.output.url;
      const resp = await fetch(job.output.url, { cache: "no-store" });
      if (!resp.ok) throw errorFrom(resp.status, await resp.text(), null);
      saveBlob(await resp.blob(), it.outputName);
    } catch (err) {
      showError(it, err);
    } finally {
      it.saving = false;
    }
  }

  setupKey();
  showPresets();
  setupFiles();
})();
