// The command palette's handlers. Each takes the server and the window as ports, so the
// flows (quick pick → preview → confirmation → command → report) are unit tested.

import { rewindPickItems, rewindQuestion, rewindReport } from "./checkpointModel";
import { compactReport } from "./compactionModel";
import { relativeTime } from "./format";
import { errorMessage, type MementoServer, type Ui } from "./ports";
import type {
  AbortResult,
  AdvisorToggleResult,
  CheckpointListResult,
  CheckpointPreviewResult,
  CheckpointRewindResult,
  CompactResult,
  ModeResult,
  OmfgResult,
  PinResult,
  PinsResult,
  PromptResult,
  SessionListResult,
  SessionRef,
  TrustResult,
  UnpinResult,
} from "./protocol";
import * as names from "./protocolNames";

export const UNDO = "Undo";

export interface Deps {
  server: MementoServer;
  ui: Ui;
  now?: () => Date;
}

const clock = (deps: Deps) => (deps.now ?? (() => new Date()))();

async function guarded<T>(deps: Deps, what: string, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    await deps.ui.error(`Memento: ${what}: ${errorMessage(error)}`);
    return undefined;
  }
}

export async function sendPrompt(deps: Deps, text?: string): Promise<string | undefined> {
  const prompt = text ?? (await deps.ui.input({ title: "Memento: Send Prompt", prompt: "What should the agent do?" }));
  if (!prompt?.trim()) return undefined;
  const result = await guarded(deps, "the prompt was not sent", () =>
    deps.server.request<PromptResult>(names.PROMPT, { text: prompt }),
  );
  return result?.turnId;
}

export async function createCheckpoint(deps: Deps): Promise<string | undefined> {
  const label = await deps.ui.input({
    title: "Memento: Create Checkpoint",
    prompt: "A label for the checkpoint (optional)",
    placeholder: "e.g. before the refactoring",
  });
  if (label === undefined) return undefined;
  const created = await guarded(deps, "cannot create a checkpoint", () =>
    deps.server.execute<{ id: string }>(names.CMD_CHECKPOINT_CREATE, label.trim() ? { label: label.trim() } : {}),
  );
  if (created) void deps.ui.info(`Memento: checkpoint ${label.trim() ? `“${label.trim()}”` : created.id} created.`);
  return created?.id;
}

/** Rewind: pick a checkpoint (unless given), see what would change, choose how far back. */
export async function rewind(deps: Deps, checkpointId?: string): Promise<CheckpointRewindResult | undefined> {
  const { server, ui } = deps;
  const now = clock(deps);
  const list = await guarded(deps, "cannot list the checkpoints", () =>
    server.request<CheckpointListResult>(names.CHECKPOINT_LIST),
  );
  if (!list) return undefined;
  let item = checkpointId ? list.checkpoints.find((c) => c.id === checkpointId) : undefined;
  if (checkpointId && !item) {
    await ui.error(`Memento: there is no checkpoint ${checkpointId} in this session.`);
    return undefined;
  }
  if (!item) {
    if (!list.checkpoints.length) {
      await ui.info("Memento: this session has no checkpoints yet.");
      return undefined;
    }
    item = await ui.pick(rewindPickItems(list.checkpoints, now), {
      title: "Memento: Rewind to Checkpoint",
      placeholder: "The checkpoint to go back to",
    });
    if (!item) return undefined;
  }
  const target = item;
  const preview = await guarded(deps, "cannot preview the rewind", () =>
    server.request<CheckpointPreviewResult>(names.CHECKPOINT_PREVIEW, { checkpointId: target.id }),
  );
  if (!preview) return undefined;
  const question = rewindQuestion(target, preview, now);
  const answer = await ui.confirm(
    question.message,
    question.detail,
    question.choices.map((c) => c.title),
  );
  const choice = question.choices.find((c) => c.title === answer);
  if (!choice) return undefined;
  const result = await guarded(deps, "cannot rewind", () =>
    server.execute<CheckpointRewindResult>(names.CMD_CHECKPOINT_REWIND, {
      checkpointId: target.id,
      mode: choice.mode,
      force: choice.force,
    }),
  );
  if (result) {
    void ui.info(`Memento: ${rewindReport(result.restored, result.conflicts, choice.mode)}`, UNDO).then((action) => {
      if (action === UNDO) void undoRewind(deps);
    });
  }
  return result;
}

export async function undoRewind(deps: Deps): Promise<CheckpointRewindResult | undefined> {
  const result = await guarded(deps, "cannot undo the rewind", () =>
    deps.server.execute<CheckpointRewindResult>(names.CMD_CHECKPOINT_UNDO_REWIND, {}),
  );
  if (result) void deps.ui.info(`Memento: rewind undone. ${rewindReport(result.restored, result.conflicts, result.mode ?? "all")}`);
  return result;
}

/** Compact Context: asks what the summary should focus on (optional; Escape cancels). */
export async function compactContext(deps: Deps, instructions?: string): Promise<CompactResult | undefined> {
  const focus =
    instructions ??
    (await deps.ui.input({
      title: "Memento: Compact Context",
      prompt: "What should the summary keep or focus on? (optional)",
      placeholder: "e.g. the failing test and the decisions about the parser",
    }));
  if (focus === undefined) return undefined;
  const result = await guarded(deps, "cannot compact", () =>
    deps.server.request<CompactResult>(names.COMPACT, focus.trim() ? { instructions: focus.trim() } : {}),
  );
  if (result) void deps.ui.info(compactReport(result));
  return result;
}

const A_FILE = "\0file";

/** Pin: a message or tool result picked from the latest ones, or a file; no relief step drops it. */
export async function pin(deps: Deps): Promise<PinResult | undefined> {
  const listed = await guarded(deps, "cannot list what to pin", () =>
    deps.server.request<PinsResult>(names.PINS, { candidates: true }),
  );
  if (!listed) return undefined;
  const choice = await deps.ui.pick(
    [
      ...(listed.candidates ?? []).map((c) => ({ label: c.what, value: c.entryId })),
      { label: "A file…", description: "keep its latest read", value: A_FILE },
    ],
    { title: "Memento: Pin", placeholder: "What every compaction must keep, word for word" },
  );
  if (choice === undefined) return undefined;
  let params: { entryId: string } | { file: string } = { entryId: choice };
  if (choice === A_FILE) {
    const file = await deps.ui.input({ title: "Memento: Pin a File", prompt: "The file, relative to the workspace" });
    if (!file?.trim()) return undefined;
    params = { file: file.trim() };
  }
  const result = await guarded(deps, "cannot pin", () => deps.server.request<PinResult>(names.PIN, params));
  if (result) void deps.ui.info(`Memento: pinned ${result.pin.kind === "file" ? result.pin.target : result.pin.what}.`);
  return result;
}

/** Unpin: pick one of the pins in force. */
export async function unpin(deps: Deps): Promise<UnpinResult | undefined> {
  const listed = await guarded(deps, "cannot list the pins", () => deps.server.request<PinsResult>(names.PINS, {}));
  if (!listed) return undefined;
  if (!listed.pins.length) {
    await deps.ui.info("Memento: nothing is pinned.");
    return undefined;
  }
  const chosen = await deps.ui.pick(
    listed.pins.map((p) => ({ label: p.kind === "file" ? p.target : p.what, description: p.kind === "file" ? p.what : undefined, value: p })),
    { title: "Memento: Unpin" },
  );
  if (!chosen) return undefined;
  const params = chosen.kind === "file" ? { file: chosen.target } : { entryId: chosen.target };
  return guarded(deps, "cannot unpin", () => deps.server.request<UnpinResult>(names.UNPIN, params));
}

export async function stop(deps: Deps): Promise<boolean> {
  const result = await guarded(deps, "cannot stop the turn", () => deps.server.request<AbortResult>(names.ABORT));
  if (result && !result.aborted) void deps.ui.info("Memento: no turn is running.");
  return result?.aborted ?? false;
}

export async function newSession(deps: Deps): Promise<string | undefined> {
  const ref = await guarded(deps, "cannot start a new session", () => deps.server.request<SessionRef>(names.SESSION_NEW));
  if (ref) void deps.ui.info("Memento: new session started.");
  return ref?.id;
}

export async function openSession(deps: Deps): Promise<string | undefined> {
  const now = clock(deps);
  const list = await guarded(deps, "cannot list the sessions", () =>
    deps.server.request<SessionListResult>(names.SESSION_LIST),
  );
  if (!list) return undefined;
  if (!list.sessions.length) {
    await deps.ui.info("Memento: there are no sessions for this workspace yet.");
    return undefined;
  }
  const id = await deps.ui.pick(
    list.sessions.map((s) => ({ label: s.title?.trim() || s.id, description: relativeTime(s.updatedAt, now), detail: s.path, value: s.id })),
    { title: "Memento: Open Session", placeholder: "The session to continue" },
  );
  if (!id) return undefined;
  const ref = await guarded(deps, "cannot open the session", () =>
    deps.server.request<SessionRef>(names.SESSION_OPEN, { id }),
  );
  return ref?.id;
}

export async function toggleAdvisor(deps: Deps): Promise<boolean | undefined> {
  // The server says "Advisor on/off" itself (window/showMessage).
  const result = await guarded(deps, "cannot toggle the advisor", () =>
    deps.server.request<AdvisorToggleResult>(names.ADVISOR_TOGGLE, {}),
  );
  return result?.enabled;
}

const MODE_SAID: Record<ModeResult["mode"], string> = {
  ask: "ask mode: read-only, the agent changes no file.",
  act: "act mode: the agent may change files.",
};

/** memento/mode: switch to ask (read-only) or act; the meter shows the mode from the server's notice. */
export async function setMode(deps: Deps, mode: ModeResult["mode"]): Promise<ModeResult["mode"] | undefined> {
  const result = await guarded(deps, `cannot switch to ${mode} mode`, () =>
    deps.server.request<ModeResult>(names.MODE, { mode }),
  );
  if (result) void deps.ui.info(`Memento: ${MODE_SAID[result.mode]}`);
  return result?.mode;
}

export const SAVE = "Save Rule";
export const OVERWRITE = "Overwrite";

/** /omfg: a complaint becomes a candidate rule; the user reads it and saves it, or not. */
export async function makeRule(deps: Deps, complaint?: string): Promise<string | undefined> {
  const text =
    complaint ??
    (await deps.ui.input({
      title: "Memento: Make Rule from Complaint (/omfg)",
      prompt: "What did the agent do that it should never do again?",
      placeholder: "e.g. it keeps using bare except clauses",
    }));
  if (!text?.trim()) return undefined;
  const result = await guarded(deps, "/omfg failed", () =>
    deps.server.request<OmfgResult>(names.OMFG, { complaint: text.trim() }),
  );
  return result ? saveCandidate(deps, result) : undefined;
}

/** Show a candidate rule and write it once the user confirms; returns the written path. */
export async function saveCandidate(deps: Deps, result: OmfgResult): Promise<string | undefined> {
  const { server, ui } = deps;
  const rule = result.rule;
  if (!rule) {
    await ui.error(`Memento: no usable rule came back (${result.attempts} attempts). ${(result.feedback ?? []).join(" ")}`.trim());
    return undefined;
  }
  await ui.showText(`${rule.name}.md`, rule.content, "markdown");
  const checked = result.validated
    ? "It matches the conversation that prompted it."
    : `It did not match the conversation that prompted it. ${(result.feedback ?? []).join(" ")}`.trim();
  if ((await ui.confirm(`Save the rule “${rule.name}”?`, checked, [SAVE])) !== SAVE) return undefined;
  const write = (overwrite: boolean) =>
    server.request<OmfgResult>(names.OMFG, { rule: { name: rule.name, content: rule.content }, write: true, overwrite });
  let saved: OmfgResult;
  try {
    saved = await write(false);
  } catch (error) {
    const message = errorMessage(error);
    if (!/exists/.test(message)) {
      await ui.error(`Memento: the rule was not saved: ${message}`);
      return undefined;
    }
    if ((await ui.confirm(`Replace the existing rule “${rule.name}”?`, message, [OVERWRITE])) !== OVERWRITE) return undefined;
    const again = await guarded(deps, "the rule was not saved", () => write(true));
    if (!again) return undefined;
    saved = again;
  }
  void ui.info(`Memento: rule saved to ${saved.rule?.path ?? rule.name}.`);
  return saved.rule?.path;
}

/** `memento/trust`: trust the workspace's `.memento/config.toml` as it is now (its sha256). */
export async function trustWorkspace(deps: Deps): Promise<TrustResult | undefined> {
  const answer = await deps.ui.confirm(
    "Trust this workspace's Memento settings?",
    "Memento will then apply the program, provider, path and permission settings of .memento/config.toml in this workspace, as its content is now; a later change to the file needs trust again.",
    ["Trust"],
  );
  if (answer !== "Trust") return undefined;
  const result = await guarded(deps, "the server did not record trust", () =>
    deps.server.request<TrustResult>(names.TRUST, {}),
  );
  if (result === undefined) return undefined;
  if (result.trusted) {
    const applied = result.ignoredKeys?.length ? ` Still ignored: ${result.ignoredKeys.join(", ")}.` : "";
    void deps.ui.info(`Memento: ${result.configPath} is trusted as it is now.${applied}`);
  } else {
    void deps.ui.warn(`Memento: ${result.configPath} is not trusted: ${result.reason ?? "the server did not say why"}.`);
  }
  return result;
}

/** `memento/settings`: every effective setting, where it came from, and what was ignored. */
export async function showSettings(deps: Deps): Promise<void> {
  const result = await guarded(deps, "cannot read the settings", () =>
    deps.server.request<Record<string, unknown>>(names.SETTINGS, {}),
  );
  if (result !== undefined) await deps.ui.showText("memento-settings.json", `${JSON.stringify(result, null, 2)}\n`, "json");
}
