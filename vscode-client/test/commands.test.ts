import { describe, expect, it } from "vitest";
import { CHOICES } from "../src/checkpointModel";
import * as commands from "../src/commands";
import type { CheckpointItem, CheckpointPreviewResult } from "../src/protocol";
import * as names from "../src/protocolNames";
import { FakeServer, FakeUi } from "./fakes";

const NOW = new Date("2026-12-01T10:00:00Z");
const CHECKPOINTS: CheckpointItem[] = [
  { id: "c2", label: "Make it two", createdAt: "2026-12-01T09:55:00Z", files: ["a.txt"], kind: "auto" },
  { id: "c1", label: "before the edit", createdAt: "2026-12-01T09:00:00Z", files: ["a.txt", "b.py"], kind: "manual" },
];

const BACK = "the conversation goes back to that point: 4 messages after it leave the context (a summary says what they did)";

/** A preview as the server words it (its choices: the rewinds that would change anything). */
function preview(
  files: CheckpointPreviewResult["files"],
  choices: CheckpointPreviewResult["choices"],
  movesConversation = true,
): CheckpointPreviewResult {
  return { checkpointId: "c1", files, movesConversation, messagesDropped: 4, choices };
}

function deps(server: FakeServer, ui: FakeUi) {
  return { server, ui, now: () => NOW };
}

describe("Rewind to Checkpoint…", () => {
  it("picks a checkpoint, names the files that will change and rewinds in the mode chosen", async () => {
    const server = new FakeServer()
      .answer(names.CHECKPOINT_LIST, { checkpoints: CHECKPOINTS })
      .answer(
        names.CHECKPOINT_PREVIEW,
        preview(
          [{ path: "a.txt", action: "restore" }, { path: "b.py", action: "conflict" }],
          [
            { mode: "all", force: false, effect: `puts back a.txt; leaves b.py as you changed it; ${BACK}` },
            { mode: "conversation", force: false, effect: `${BACK}; the files stay as they are` },
            { mode: "files", force: false, effect: "puts back a.txt; leaves b.py as you changed it; the conversation stays as it is" },
            { mode: "all", force: true, effect: `puts back a.txt and b.py, overwriting your edits to b.py; ${BACK}` },
          ],
        ),
      )
      .answer(names.CMD_CHECKPOINT_REWIND, { restored: ["a.txt"], conflicts: [], mode: "files" });
    const ui = new FakeUi("before the edit", CHOICES.files);
    const result = await commands.rewind(deps(server, ui));

    const [pick] = ui.picks;
    expect(pick.items.map((i) => [i.label, i.description, i.detail])).toEqual([
      ["Make it two", "5 minutes ago · before the agent's edits", "1 file changed since: a.txt"],
      ["before the edit", "1 hour ago · by hand", "2 files changed since: a.txt, b.py"],
    ]);
    const [question] = ui.questions;
    expect(question.message).toBe("Rewind to “before the edit” (1 hour ago)?");
    // Each button's line says what that rewind does, in the server's words: Files Only keeps
    // the conversation, Conversation Only the files.
    expect(question.detail.split("\n")).toEqual([
      `${CHOICES.all}: puts back a.txt; leaves b.py as you changed it; ${BACK}.`,
      `${CHOICES.conversation}: ${BACK}; the files stay as they are.`,
      `${CHOICES.files}: puts back a.txt; leaves b.py as you changed it; the conversation stays as it is.`,
      `${CHOICES.overwrite}: puts back a.txt and b.py, overwriting your edits to b.py; ${BACK}.`,
    ]);
    expect(question.buttons).toEqual([CHOICES.all, CHOICES.conversation, CHOICES.files, CHOICES.overwrite]);
    expect(server.named(names.CHECKPOINT_PREVIEW)[0].params).toEqual({ checkpointId: "c1" });
    expect(server.named(names.CMD_CHECKPOINT_REWIND)[0].params).toEqual({ checkpointId: "c1", mode: "files", force: false });
    expect(result?.restored).toEqual(["a.txt"]);
    expect(ui.messages).toEqual([{ kind: "info", message: "Memento: Files rewound; restored a.txt.", actions: [commands.UNDO] }]);
  });

  it("offers only the rewinds that change something, and overwriting only when the user edited too", async () => {
    const server = new FakeServer()
      .answer(names.CHECKPOINT_LIST, { checkpoints: CHECKPOINTS })
      .answer(
        names.CHECKPOINT_PREVIEW,
        preview(
          [{ path: "a.txt", action: "unchanged" }],
          [{ mode: "all", force: false, effect: "no file changes; the conversation is already at that point" }],
          false,
        ),
      );
    const ui = new FakeUi(undefined); // the user cancels
    expect(await commands.rewind(deps(server, ui), "c2")).toBeUndefined();
    expect(ui.picks).toEqual([]); // the tree's inline action gave the checkpoint
    expect(ui.questions[0].buttons).toEqual([CHOICES.all]);
    expect(ui.questions[0].detail).toBe(`${CHOICES.all}: no file changes; the conversation is already at that point.`);
    expect(server.named(names.CMD_CHECKPOINT_REWIND)).toEqual([]);
  });

  it("overwrites the user's edits only when asked, and Undo from the report undoes", async () => {
    const server = new FakeServer()
      .answer(names.CHECKPOINT_LIST, { checkpoints: CHECKPOINTS })
      .answer(
        names.CHECKPOINT_PREVIEW,
        preview(
          [{ path: "b.py", action: "conflict" }],
          [
            { mode: "all", force: false, effect: `leaves b.py as you changed it; ${BACK}` },
            { mode: "conversation", force: false, effect: `${BACK}; the files stay as they are` },
            { mode: "all", force: true, effect: `puts back b.py, overwriting your edits to b.py; ${BACK}` },
          ],
        ),
      )
      .answer(names.CMD_CHECKPOINT_REWIND, { restored: ["b.py"], conflicts: [] })
      .answer(names.CMD_CHECKPOINT_UNDO_REWIND, { restored: ["b.py"], conflicts: [], mode: "all" });
    const ui = new FakeUi(CHOICES.overwrite);
    ui.notificationAction = commands.UNDO;
    await commands.rewind(deps(server, ui), "c1");
    expect(server.named(names.CMD_CHECKPOINT_REWIND)[0].params).toMatchObject({ mode: "all", force: true });
    await expect.poll(() => server.named(names.CMD_CHECKPOINT_UNDO_REWIND).length).toBe(1);
  });

  it("says so when the checkpoint is unknown or the server refuses", async () => {
    const server = new FakeServer().answer(names.CHECKPOINT_LIST, { checkpoints: CHECKPOINTS });
    const ui = new FakeUi();
    await commands.rewind(deps(server, ui), "nope");
    server.answer(names.CHECKPOINT_PREVIEW, new Error("cannot preview the rewind: a turn is running"));
    await commands.rewind(deps(server, ui), "c1");
    expect(ui.messages.map((m) => m.message)).toEqual([
      "Memento: there is no checkpoint nope in this session.",
      "Memento: cannot preview the rewind: cannot preview the rewind: a turn is running",
    ]);
  });
});

describe("the other palette commands", () => {
  it("Create Checkpoint sends the label, or none; Escape creates nothing", async () => {
    const server = new FakeServer().answer(names.CMD_CHECKPOINT_CREATE, { id: "c9" });
    const ui = new FakeUi("  before the refactoring ", "", undefined);
    expect(await commands.createCheckpoint(deps(server, ui))).toBe("c9");
    await commands.createCheckpoint(deps(server, ui));
    expect(await commands.createCheckpoint(deps(server, ui))).toBeUndefined();
    expect(server.named(names.CMD_CHECKPOINT_CREATE).map((c) => c.params)).toEqual([{ label: "before the refactoring" }, {}]);
  });

  it("Send Prompt sends the text and ignores an empty one", async () => {
    const server = new FakeServer().answer(names.PROMPT, { turnId: "t1" });
    expect(await commands.sendPrompt(deps(server, new FakeUi("Fix the test")))).toBe("t1");
    expect(await commands.sendPrompt(deps(server, new FakeUi("   ")))).toBeUndefined();
    expect(server.named(names.PROMPT).map((c) => c.params)).toEqual([{ text: "Fix the test" }]);
  });

  it("Compact Context and Stop report what happened", async () => {
    const server = new FakeServer()
      .answer(names.COMPACT, { tokensBefore: 52_000, tokensAfter: 9_400, compacted: true })
      .answer(names.ABORT, { aborted: false });
    const ui = new FakeUi("  Keep the parser decisions ");
    await commands.compactContext(deps(server, ui));
    expect(server.named(names.COMPACT).map((c) => c.params)).toEqual([{ instructions: "Keep the parser decisions" }]);
    expect(await commands.stop(deps(server, ui))).toBe(false);
    expect(ui.messages.map((m) => m.message)).toEqual([
      "Memento: context compacted, 52k → 9.4k tokens.",
      "Memento: no turn is running.",
    ]);
  });

  it("Compact Context that compacted nothing says the server's reason, with no before → after", async () => {
    const why = "not compacted: a summary would not make the context smaller: the 312 tokens old enough to summarise would become a 405-token summary";
    const server = new FakeServer().answer(names.COMPACT, { tokensBefore: 2_012, tokensAfter: 2_012, compacted: false, why });
    const ui = new FakeUi("");
    await commands.compactContext(deps(server, ui));
    expect(server.named(names.COMPACT).map((c) => c.params)).toEqual([{}]);
    expect(ui.messages.map((m) => m.message)).toEqual([`Memento: ${why}.`]);
  });

  it("Pin picks one of the latest entries or a file, and Unpin takes a pin back", async () => {
    const result = { kind: "entry", target: "e7", what: "result of read(path='a.py') [call c1]: alpha", entryId: "e7" };
    const file = { kind: "file", target: "src/b.py", what: "not read in this conversation yet" };
    const server = new FakeServer()
      .answer(names.PINS, { pins: [], candidates: [{ entryId: "e7", what: result.what }] }, { pins: [result, file] })
      .answer(names.PIN, (params: object) => ({ pin: "file" in params ? file : result, pins: [result] }))
      .answer(names.UNPIN, { unpinned: true, pins: [result] });
    const ui = new FakeUi(result.what, "A file…", " src/b.py ", "src/b.py");
    await commands.pin(deps(server, ui));
    await commands.pin(deps(server, ui));
    expect(server.named(names.PIN).map((c) => c.params)).toEqual([{ entryId: "e7" }, { file: "src/b.py" }]);
    expect(ui.messages.map((m) => m.message)).toEqual([`Memento: pinned ${result.what}.`, "Memento: pinned src/b.py."]);
    expect((await commands.unpin(deps(server, ui)))?.unpinned).toBe(true);
    expect(server.named(names.UNPIN).map((c) => c.params)).toEqual([{ file: "src/b.py" }]);
  });

  it("Compact Context cancelled at its focus question compacts nothing", async () => {
    const server = new FakeServer();
    const ui = new FakeUi(undefined);
    expect(await commands.compactContext(deps(server, ui))).toBeUndefined();
    expect(server.named(names.COMPACT)).toEqual([]);
  });

  it("Ask Mode and Act Mode set the server's mode and say what it means; a refusal is shown", async () => {
    const server = new FakeServer()
      .answer(names.MODE, (params: object) => params);
    const ui = new FakeUi();
    expect(await commands.setMode(deps(server, ui), "ask")).toBe("ask");
    expect(await commands.setMode(deps(server, ui), "act")).toBe("act");
    expect(server.named(names.MODE).map((c) => c.params)).toEqual([{ mode: "ask" }, { mode: "act" }]);
    const refusing = new FakeServer().answer(names.MODE, new Error("Unhandled method memento/mode"));
    expect(await commands.setMode(deps(refusing, ui), "ask")).toBeUndefined();
    expect(ui.messages.map((m) => [m.kind, m.message])).toEqual([
      ["info", "Memento: ask mode: read-only, the agent changes no file."],
      ["info", "Memento: act mode: the agent may change files."],
      ["error", "Memento: cannot switch to ask mode: Unhandled method memento/mode"],
    ]);
  });

  it("Open Session lists sessions by title and opens the one picked", async () => {
    const server = new FakeServer()
      .answer(names.SESSION_LIST, {
        sessions: [
          { id: "s1", path: "/d/s1.jsonl", title: "Fix the loader", updatedAt: "2026-12-01T08:00:00Z" },
          { id: "s2", path: "/d/s2.jsonl", updatedAt: "2026-11-30T10:00:00Z" },
        ],
      })
      .answer(names.SESSION_OPEN, ({ id }: { id?: string }) => ({ id }));
    const ui = new FakeUi("s2");
    expect(await commands.openSession(deps(server, ui))).toBe("s2");
    expect(ui.picks[0].items.map((i) => [i.label, i.description])).toEqual([
      ["Fix the loader", "2 hours ago"],
      ["s2", "1 day ago"],
    ]);
  });

  it("/omfg shows the candidate, saves it once confirmed, and asks before overwriting", async () => {
    const rule = { name: "no-bare-except", content: "---\ncondition: except:\n---\nNever." };
    const server = new FakeServer()
      .answer(names.OMFG, { rule, validated: true, attempts: 1 })
      .answer(names.OMFG, new Error("/omfg: .memento/rules/no-bare-except.md exists; confirm overwriting it"))
      .answer(names.OMFG, { rule: { ...rule, path: ".memento/rules/no-bare-except.md" }, validated: true, attempts: 0 });
    const ui = new FakeUi("it keeps using bare except", commands.SAVE, commands.OVERWRITE);
    expect(await commands.makeRule(deps(server, ui))).toBe(".memento/rules/no-bare-except.md");
    expect(ui.texts).toEqual([{ title: "no-bare-except.md", content: rule.content, language: "markdown" }]);
    expect(server.named(names.OMFG).map((c) => c.params)).toEqual([
      { complaint: "it keeps using bare except" },
      { rule, write: true, overwrite: false },
      { rule, write: true, overwrite: true },
    ]);
  });

  it("Trust asks, records trust through memento/trust and says what came of it", async () => {
    const server = new FakeServer()
      .answer(names.TRUST, { trusted: true, configPath: ".memento/config.toml", sha256: "ab12" })
      .answer(names.TRUST, { trusted: false, configPath: ".memento/config.toml", reason: "VS Code reports the workspace untrusted" })
      .answer(names.TRUST, new Error("Unhandled method memento/trust"));
    const ui = new FakeUi("Trust", "Trust", undefined, "Trust");
    expect((await commands.trustWorkspace(deps(server, ui)))?.trusted).toBe(true);
    await commands.trustWorkspace(deps(server, ui));
    expect(await commands.trustWorkspace(deps(server, ui))).toBeUndefined(); // the user said no
    await commands.trustWorkspace(deps(server, ui));
    expect(server.named(names.TRUST)).toHaveLength(3);
    expect(ui.messages.map((m) => [m.kind, m.message])).toEqual([
      ["info", "Memento: .memento/config.toml is trusted as it is now."],
      ["warn", "Memento: .memento/config.toml is not trusted: VS Code reports the workspace untrusted."],
      ["error", "Memento: the server did not record trust: Unhandled method memento/trust"],
    ]);
  });

  it("Show Effective Settings opens what memento/settings answers", async () => {
    const settings = { settings: { tools: { bash: "ask" } }, sources: { "tools.bash": "default" }, ignoredKeys: ["tools.bash"] };
    const server = new FakeServer().answer(names.SETTINGS, settings);
    const ui = new FakeUi();
    await commands.showSettings(deps(server, ui));
    expect(ui.texts).toEqual([{ title: "memento-settings.json", content: `${JSON.stringify(settings, null, 2)}\n`, language: "json" }]);
  });
});
