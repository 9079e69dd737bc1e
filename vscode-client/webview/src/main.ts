/**
 * The chat panel's page. Messages from the extension are queued and applied to the model
 * once per animation frame, and the view redraws what changed in that same frame: however
 * fast deltas arrive, the page does at most one DOM update per frame.
 */
import { parseEntries, type FromPage, type Notice, type RewindMode, type SessionItem, type ToPage } from "../../src/webviewProtocol";
import { Channel } from "./api";
import { PAGE } from "./early";
import { el, relativeTime } from "./dom";
import { meterLevel, meterText, renderContextView } from "./contextView";
import { LazyHighlighter, loadHighlighter, warmLanguages } from "./highlight";
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
  highlighter,
});
const state = channel.state;
let queued: ToPage[] = [];
let frame = 0;
let tailRequest = -1;
let olderRequest = -1;
let status: string | undefined;
let historyShown = false;
let highlighterRequested = false;

function post(message: FromPage): void {
  channel.post(message);
}

function requestTail(): void {
  tailRequest = channel.requestId();
  post({ type: "history", requestId: tailRequest, limit: PAGE, tail: true });
}

list.onTop = () => {
  if (!model.hasOlder || olderRequest >= 0) return;
  olderRequest = channel.requestId();
  post({ type: "history", requestId: olderRequest, cursor: model.olderCursor, limit: PAGE, tail: false });
};

channel.listen((message) => {
  queued.push(message);
  if (frame === 0) frame = requestAnimationFrame(flush);
});

/** Everything that arrived since the last frame, applied at once; then one redraw. */
function flush(): void {
  frame = 0;
  const messages = queued;
  queued = [];
  let syncTail = false;
  let checkpointsMoved = false;
  for (const message of messages) {
    const effect = receive(message);
    syncTail ||= effect === "sync";
    checkpointsMoved ||= effect === "checkpoints";
  }
  list.setRows(model.rows, model.structural, model.dirty);
  if (checkpointsMoved) list.refreshAll();
  model.settle();
  drawChrome();
  if (syncTail) requestTail();
  // The highlighter waits until the first rows are on screen (or a turn streams): this
  // frame paints first, then it loads.
  if (!highlighterRequested && (historyShown || model.running !== undefined)) {
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

function receive(message: ToPage): "sync" | "checkpoints" | undefined {
  switch (message.type) {
    case "notices": {
      let effect: "sync" | "checkpoints" | undefined;
      for (const notice of message.notices) {
        model.apply(notice);
        if (endsTurn(notice)) effect = "sync";
        else if (notice.kind === "compaction" && notice.phase === "finished" && model.running === undefined) effect = "sync";
        else if (notice.kind === "checkpoints" && effect === undefined) effect = "checkpoints";
      }
      return effect;
    }
    case "history": {
      const older = message.requestId === olderRequest;
      if (older) olderRequest = -1;
      let entries: Record<string, unknown>[];
      try {
        entries = parseEntries(message.entriesJson);
      } catch (error) {
        console.warn(`memento panel: ignored a history page: ${String(error)}`);
        return undefined;
      }
      historyShown = true;
      if (older) model.prependPage(entries, message.nextCursor, message.relief);
      else if (message.requestId === tailRequest || message.tail) model.loadTail(entries, message.nextCursor, message.running, message.relief);
      return undefined;
    }
    case "sessions":
      fillSessions(message.sessions, message.current);
      return undefined;
    case "sessionChanged":
      model.reset();
      status = undefined;
      requestTail();
      post({ type: "listSessions", requestId: channel.requestId() });
      return undefined;
    case "prompted":
      return undefined;
    case "rewound":
      status = message.conflicts.length > 0
        ? `Restored ${message.restored.length} file(s); left as you changed them: ${message.conflicts.join(", ")}`
        : `Restored ${message.restored.length} file(s).`;
      return undefined;
    case "failed":
      if (message.op === "history") olderRequest = -1;
      if (message.op === "prompt" || message.op === "steer") model.failPrompt(message.message);
      else status = `${message.op} failed: ${message.message}`;
      return undefined;
    case "showContext":
      setContextOpen(true);
      return undefined;
  }
}

/** The conversation's turn ended (a subagent's own turn is not the conversation's). */
function endsTurn(notice: Notice): boolean {
  return notice.kind === "turn" && notice.state !== "started" && notice.state !== "retrying" && notice.subagentId === undefined;
}

// -- chrome: composer, banner, meter, context view --------------------------------------

/** Writes only what changed: a frame of streaming text touches none of this. */
let chromeKey = "";
function drawChrome(): void {
  const running = model.running !== undefined;
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
  if (model.running !== undefined) {
    model.addPrompt(text, true);
    post({ type: "steer", requestId, text });
  } else {
    model.addPrompt(text);
    post({ type: "prompt", requestId, text });
  }
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
  } else if (event.key === "Escape" && model.running !== undefined) {
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
ui.session.addEventListener("focus", () => post({ type: "listSessions", requestId: channel.requestId() }));
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
      model.addPrompt(text);
      post({ type: "prompt", requestId: channel.requestId(), text });
      break;
    }
    case "compact":
      return post({ type: "compact" });
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
} else {
  post({ type: "ready" });
  requestTail();
  post({ type: "listSessions", requestId: channel.requestId() });
}
// While the extension answers: the markdown renderer, which the first rows need.
prepareMarkdown();
drawChrome();
// Only while still waiting: once the answer is in, the first rows warm the renderer up
// themselves, and a sample rendered first would only put off their frame.
requestIdleCallback(() => {
  if (!historyShown && queued.length === 0) warmUp();
});
