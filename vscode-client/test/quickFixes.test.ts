import { describe, expect, it } from "vitest";
import { CHOICES } from "../src/checkpointModel";
import * as names from "../src/protocolNames";
import { interceptCommand } from "../src/quickFixes";
import { FakeServer, FakeUi } from "./fakes";

describe("the advisor's quick fixes", () => {
  const checkpoint = { id: "c1", label: "Make it two", createdAt: "2026-12-01T09:00:00Z", files: ["a.txt"] };

  it("ask before rewinding instead of rewinding at once", async () => {
    const server = new FakeServer()
      .answer(names.CHECKPOINT_LIST, { checkpoints: [checkpoint] })
      .answer(names.CHECKPOINT_PREVIEW, {
        checkpointId: "c1",
        files: [{ path: "a.txt", action: "restore" }],
        movesConversation: true,
        messagesDropped: 2,
        choices: [
          { mode: "all", force: false, effect: "puts back a.txt; the conversation goes back" },
          { mode: "conversation", force: false, effect: "the conversation goes back; the files stay as they are" },
          { mode: "files", force: false, effect: "puts back a.txt; the conversation stays as it is" },
        ],
      })
      .answer(names.CMD_CHECKPOINT_REWIND, { restored: ["a.txt"], conflicts: [] });
    const ui = new FakeUi(CHOICES.conversation);
    const sent: string[] = [];
    const intercept = interceptCommand(() => ({ server, ui }));
    await intercept(names.CMD_CHECKPOINT_REWIND, [{ checkpointId: "c1" }], (command) => sent.push(command));
    expect(sent).toEqual([]); // not straight to the server
    expect(ui.questions).toHaveLength(1);
    expect(server.named(names.CMD_CHECKPOINT_REWIND)[0].params).toEqual({ checkpointId: "c1", mode: "conversation", force: false });
  });

  it("show the rule made from a note and save it only when confirmed; others pass through", async () => {
    const server = new FakeServer();
    const ui = new FakeUi(undefined); // the user closes the question
    const intercept = interceptCommand(() => ({ server, ui }));
    const candidate = { rule: { name: "bounded-loops", content: "Bound every loop." }, validated: true, attempts: 1 };
    expect(await intercept(names.CMD_ADVISOR_TO_RULE, [{ noteId: "n1" }], () => candidate)).toBeUndefined();
    expect(ui.texts.map((t) => t.title)).toEqual(["bounded-loops.md"]);
    expect(server.calls).toEqual([]); // nothing written
    expect(await intercept(names.CMD_ADVISOR_APPLY, [{ noteId: "n1" }], () => ({ applied: true }))).toEqual({ applied: true });
  });
});
