/**
 * The chat panel's page. Messages from the extension are queued and applied to the model
 * once per animation frame, and the view redraws what changed in that same frame: however
 * fast deltas arrive, the page does at most one DOM update per frame.
 */
import { parseTranscriptPage, type FromPage, type RewindMode, type SessionItem, type ToPage } from "../../src/webviewProtocol";
import type { ReliefAudit } from "../../src/protocol";
import type { TranscriptPage } from "../../src/transcript";
import { Channel } from "./api";
import { PAGE } from "./early";
import { el, relativeTime } from "./dom";
import { meterLevel, meterText, renderContextView } from "./contextView";
import { LazyHighlighter, loadHighlighter, warmLanguages } from "./highlight";
import { pinIntent } from "./pins";
import { prepareMarkdown, warmUp } from "./markdown";
import { TimelineList } from "./list";
import { retryText, Timeline } from "./model";

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const ui = {
  session: $<HTMLSelectElement>("session"),
  newSession: $<HTMLButtonElement>("new-session"),
  toggleContext: $<HTMLButtonElement>("toggle-context"),
  meter: $<HTMLSpanElement>("meter-label"),
  context: $<HTMLElement>("context"),
  banner: $<HTMLElement>("banner"),
  timeline: $<HTMLElement>("timeline"),
  spacer: $<HTMLElement>("timeline-spacer"),
  composer: $<HTMLFormElement>("composer"),
  input: $<HTMLTextAreaElement>("input"),
  stop: $<HTMLButtonElement>("stop"),
  send: $<HTMLButtonElement>("send"),
};

const channel = new Channel();
const model = new Timeline();
const highlighter = new LazyHighlighter(ui.timeline);
const list = new TimelineList(ui.timeline, ui.spacer, {
  checkpointFor: (row) => model.checkpointFor(row),
  diffBaseFor: (row) => model.diffBaseFor(row),
  highlighter,
});
const state = channel.state;
let queued: ToPage[] = [];
let frame = 0;
let tailRequest = -1;
let olderRequest = -1;
let sessionsRequest = -1;
let status: string | undefined;
let historyShown = false;
let highlighterRequested = false;
/** Audits asked of the extension, by request id (a refusal names only the request). */
const auditRequests = new Map<number, string>();
/** The entry whose Pin button had the keyboard when clicked: it gets it back when redrawn. */
let pinFocus: string | undefined;

/** The last prompt sent (a refused one is offered again). */
let lastPrompt: string | undefined;

function post(message: FromPage): void {
  channel.post(message);
}

/** The newest page of the transcript; patches heard meanwhile are in it (the page's copy
 * skips them until the page is in). */
function requestTail(): void {
  tailRequest = channel.requestId();
  post({ type: "transcript", requestId: tailRequest, limit: PAGE });
}

function requestSessions(): void {
  sessionsRequest = channel.requestId();
  post({ type: "listSessions", requestId: sessionsRequest });
}

list.onTop = () => {
  if (!model.hasOlder || olderRequest >= 0) return;
  olderRequest = channel.requestId();
  post({ type: "transcript", requestId: olderRequest, cursor: model.olderCursor, limit: PAGE });
};

/** A panel opened before the server runs: the first reads are asked again until they are
 * answered (0.5 s, then doubling up to 5 s), and the banner says what it waits for. */
let retries = 0;
let retryTimer = 0;
function retryStart(message: string): void {
  status = `Waiting for the Memento server: ${message}`;
  if (retryTimer !== 0) return;
  const delay = Math.min(5000, 500 * 2 ** retries);
  retries += 1;
  retryTimer = window.setTimeout(() => {
    retryTimer = 0;
    if (!historyShown) {
      post({ type: "ready" }); // the checkpoint list, which failed too
      requestTail();
    }
    requestSessions();
  }, delay);
}

channel.listen((message) => {
  queued.push(message);
  if (frame === 0) frame = requestAnimationFrame(flush);
});

/** Everything that arrived since the last frame, applied at once; then one redraw. */
function flush(): void {
  frame = 0;
  const messages = queued;
  queued = [];
  let reload = false;
  let checkpointsMoved = false;
  for (const message of messages) {
    const effect = receive(message);
    reload ||= effect === "reload";
    checkpointsMoved ||= effect === "checkpoints";
  }
  for (const id of model.wantedAudits()) {
    const requestId = channel.requestId();
    auditRequests.set(requestId, id);
    post({ type: "audit", requestId, id });
  }
  // A divider redrawn (its audit in, its step undone) keeps the keyboard's place.
  const focused = document.activeElement instanceof HTMLElement && document.activeElement.dataset["action"] === "toggle-audit"
    ? document.activeElement.dataset["key"] : undefined;
  list.setRows(model.rows, model.structural, model.dirty);
  if (focused !== undefined && (document.activeElement === null || document.activeElement === document.body)) {
    ui.timeline.querySelector<HTMLElement>(`[data-action="toggle-audit"][data-key="${CSS.escape(focused)}"]`)?.focus();
  }
  if (pinFocus !== undefined) {
    // Once answered, the button is enabled again: it gets the keyboard back, once.
    if (document.activeElement === null || document.activeElement === document.body) {
      ui.timeline.querySelector<HTMLButtonElement>(`.pin-toggle[data-entry="${CSS.escape(pinFocus)}"]:not(:disabled)`)?.focus();
    }
    if (!model.pinPending(pinFocus)) pinFocus = undefined;
  }
  if (checkpointsMoved) list.refreshAll();
  model.settle();
  drawChrome();
  if (reload) requestTail();
  // The highlighter waits until the first rows are on screen (or a turn streams): this
  // frame paints first, then it loads.
  if (!highlighterRequested && (historyShown || model.running)) {
    highlighterRequested = true;
    setTimeout(startHighlighter, 0);
  }
}

function startHighlighter(): void {
  void loadHighlighter().then((ok) => {
    if (!ok) return;
    highlighter.loaded();
    warmLanguages((task) => requestIdleCallback(task));
  });
}

function receive(message: ToPage): "reload" | "checkpoints" | undefined {
  switch (message.type) {
    case "notices": {
      let effect: "reload" | "checkpoints" | undefined;
      for (const notice of message.notices) {
        if (notice.kind === "patch") {
          if (model.applyPatch(notice) === "reload" && tailRequest < 0) effect = "reload";
          continue;
        }
        model.apply(notice);
        if (notice.kind === "checkpoints" && effect === undefined) effect = "checkpoints";
      }
      return effect;
    }
    case "transcript": {
      const older = message.requestId === olderRequest;
      if (older) olderRequest = -1;
      else if (message.requestId === tailRequest) tailRequest = -1;
      else return undefined; // an answer overtaken by a newer read
      let page: TranscriptPage;
      try {
        page = parseTranscriptPage(message.pageJson);
      } catch (error) {
        console.warn(`memento panel: ignored a transcript page: ${String(error)}`);
        return undefined;
      }
      if (!historyShown) status = undefined;
      historyShown = true;
      const before = model.sessionId;
      if (older) model.prependPage(page);
      else if (!model.loadTail(page)) return "reload"; // read before a reset heard since
      // Another session (opened elsewhere, or resumed): the picker names it.
      if (!older && before !== undefined && before !== page.sessionId && sessionsRequest < 0) requestSessions();
      return "checkpoints"; // the rows the checkpoints go on may have moved
    }
    case "sessions":
      if (message.requestId === sessionsRequest) sessionsRequest = -1;
      retries = 0;
      fillSessions(message.sessions, message.sessions.find((s) => s.current === true)?.id ?? message.current ?? model.sessionId);
      return undefined;
    case "sessionChanged":
      model.reset();
      status = undefined;
      requestTail();
      requestSessions();
      return undefined;
    case "prompted":
      return undefined;
    case "rewound":
      status = message.conflicts.length > 0
        ? `Restored ${message.restored.length} file(s); left as you changed them: ${message.conflicts.join(", ")}`
        : `Restored ${message.restored.length} file(s).`;
      return undefined;
    case "audit":
      if (auditRequests.delete(message.requestId)) model.setAudit(message.id, { audit: message.audit as unknown as ReliefAudit });
      return undefined;
    case "undoSettled":
      model.undoSettled(message.id);
      return undefined;
    case "pinSettled":
      model.pinSettled(message.entryId);
      return undefined;
    case "failed":
      if (message.op === "audit" && message.requestId !== undefined) {
        const id = auditRequests.get(message.requestId);
        auditRequests.delete(message.requestId);
        if (id !== undefined) model.setAudit(id, { error: message.message });
        return undefined;
      }
      if (message.op === "transcript" && message.requestId === olderRequest) olderRequest = -1;
      else if (message.op === "transcript" && message.requestId === tailRequest && !historyShown) retryStart(message.message);
      else if (message.op === "listSessions" && message.requestId === sessionsRequest && !historyShown) retryStart(message.message);
      else if (message.op === "prompt" || message.op === "steer") model.failPrompt(message.message, lastPrompt);
      else status = `${message.op} failed: ${message.message}`;
      if (message.op === "transcript" && message.requestId === tailRequest) tailRequest = -1;
      if (message.op === "listSessions" && message.requestId === sessionsRequest) sessionsRequest = -1;
      return undefined;
    case "showContext":
      setContextOpen(true);
      return undefined;
  }
}

// -- chrome: composer, banner, meter, context view --------------------------------------

/** Writes only what changed: a frame of streaming text touches none of this. */
let chromeKey = "";
function drawChrome(): void {
  const running = model.running;
  const meter = meterText(model.context);
  const key = `${running}\u0000${meter}\u0000${model.banner === undefined ? "" : JSON.stringify(model.banner)}\u0000${status ?? ""}`;
  if (key !== chromeKey) {
    chromeKey = key;
    ui.stop.hidden = !running;
    ui.send.textContent = running ? "Steer" : "Send";
    ui.send.setAttribute("aria-label", running ? "Send as steering to the running turn" : "Send");
    ui.input.placeholder = running ? "Steer the running turn…" : "Ask Memento… (Enter to send, Shift+Enter for a new line)";
    ui.meter.textContent = meter;
    ui.meter.dataset["level"] = meterLevel(model.context);
    drawBanner();
  }
  if (!ui.context.hidden && drawnContext !== model.contextVersion) {
    drawnContext = model.contextVersion;
    renderContextView(ui.context, model.context, model.series());
  }
}
let drawnContext = -1;

let bannerTimer = 0;
function drawBanner(): void {
  const banner = model.banner;
  window.clearTimeout(bannerTimer);
  if (banner === undefined && status === undefined) {
    ui.banner.hidden = true;
    return;
  }
  ui.banner.hidden = false;
  if (banner === undefined) {
    ui.banner.className = "banner info";
    ui.banner.replaceChildren(el("span", {}, status ?? ""), el("button", { type: "button", "aria-label": "Dismiss", "data-action": "dismiss-status" }, "×"));
    return;
  }
  const { text, nextMs } = retryText(banner, Date.now());
  ui.banner.className = "banner retrying";
  ui.banner.textContent = text;
  if (nextMs !== undefined) bannerTimer = window.setTimeout(drawBanner, nextMs);
}

function setContextOpen(open: boolean): void {
  ui.context.hidden = !open;
  ui.toggleContext.setAttribute("aria-expanded", String(open));
  state.contextOpen = open;
  channel.save(state);
  if (open) renderContextView(ui.context, model.context, model.series());
}

function fillSessions(sessions: SessionItem[], current: string | undefined): void {
  const sorted = [...sessions].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  const selected = current ?? ui.session.value;
  ui.session.replaceChildren(
    ...sorted.map((s) => el("option", { value: s.id, selected: s.id === selected }, `${s.title ?? s.id} · ${relativeTime(s.updatedAt)}`)),
  );
}

// -- input ------------------------------------------------------------------------------

function submit(): void {
  const text = ui.input.value.trim();
  if (text === "") return;
  const requestId = channel.requestId();
  lastPrompt = text;
  // The prompt shows when the server has it (its patch comes within the same moment).
  post({ type: model.running ? "steer" : "prompt", requestId, text });
  ui.input.value = "";
  state.draft = "";
  channel.save(state);
  list.scrollToEnd();
  if (frame === 0) frame = requestAnimationFrame(flush);
}

ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  submit();
});
ui.input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit();
  } else if (event.key === "Escape" && model.running) {
    post({ type: "abort" });
  }
});
ui.input.addEventListener("input", () => {
  state.draft = ui.input.value;
  channel.save(state);
});
ui.stop.addEventListener("click", () => post({ type: "abort" }));
ui.newSession.addEventListener("click", () => post({ type: "newSession", requestId: channel.requestId() }));
ui.session.addEventListener("change", () => post({ type: "openSession", requestId: channel.requestId(), id: ui.session.value }));
ui.session.addEventListener("focus", requestSessions);
ui.toggleContext.addEventListener("click", () => setContextOpen(ui.context.hidden));

/** Every card button, in one listener (rows come and go with the virtual list). */
document.addEventListener("click", (event) => {
  const target = (event.target as HTMLElement).closest<HTMLElement>("[data-action]");
  if (target === null) return;
  const data = target.dataset;
  switch (data["action"]) {
    case "open-diff":
      return post({ type: "openDiff", path: data["path"] ?? "", checkpointId: data["checkpoint"] });
    case "open-file":
      return post({ type: "openFile", path: data["path"] ?? "", line: data["line"] === undefined ? undefined : Number(data["line"]) });
    case "advisor-apply":
    case "advisor-dismiss":
    case "advisor-toRule": {
      const action = data["action"].slice("advisor-".length) as "apply" | "dismiss" | "toRule";
      post({ type: "advisor", action, noteId: data["note"] ?? "" });
      model.resolveNote(data["note"] ?? "", action);
      break;
    }
    case "rewind":
      target.closest("details")?.removeAttribute("open");
      return post({ type: "rewind", checkpointId: data["checkpoint"] ?? "", mode: (data["mode"] ?? "all") as RewindMode });
    case "retry": {
      const text = data["text"] ?? "";
      lastPrompt = text;
      post({ type: "prompt", requestId: channel.requestId(), text });
      break;
    }
    case "compact":
      return post({ type: "compact" });
    case "toggle-audit": {
      // The summary's own toggle runs after this click; the redraw keeps what the model says.
      const open = target.closest("details")?.open !== true;
      model.toggleAudit(data["key"] ?? "", open);
      break;
    }
    case "undo-relief":
      if (target instanceof HTMLButtonElement) {
        target.disabled = true;
        target.textContent = "Undoing…";
      }
      return post({ type: "undoRelief", id: data["audit"] ?? "" });
    case "pin":
    case "unpin": {
      // The button waits for the answer; the row shows pinned when the server's patch says so.
      const intent = pinIntent(data["action"], data);
      if (intent === undefined) break;
      model.pinRequested(intent.entryId, data["key"] ?? "", intent.type);
      pinFocus = document.activeElement === target ? intent.entryId : undefined;
      post(intent);
      break;
    }
    case "abort-subagent":
      if (target instanceof HTMLButtonElement) {
        target.disabled = true;
        target.textContent = "Stopping…";
      }
      return post({ type: "abortSubagent", id: data["subagent"] ?? "" });
    case "dismiss-status":
      status = undefined;
      break;
  }
  if (frame === 0) frame = requestAnimationFrame(flush);
});

// -- start ------------------------------------------------------------------------------

ui.input.value = state.draft;
if (state.contextOpen) setContextOpen(true);
if (channel.earlyTail !== undefined) {
  tailRequest = channel.earlyTail; // the inline start asked already
  sessionsRequest = channel.earlySessions ?? -1;
} else {
  post({ type: "ready" });
  requestTail();
  requestSessions();
}
// While the extension answers: the markdown renderer, which the first rows need.
prepareMarkdown();
drawChrome();
// Only while still waiting: once the answer is in, the first rows warm the renderer up
// themselves, and a sample rendered first would only put off their frame.
requestIdleCallback(() => {
  if (!historyShown && queued.length === 0) warmUp();
});
