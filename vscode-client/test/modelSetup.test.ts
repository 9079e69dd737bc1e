import { describe, expect, it } from "vitest";
import { type CancelSignal, type ModelPreparer, type ProgressUi, type ProgressValue, setUpModel, USE_IT } from "../src/modelSetup";
import type { ModelPrepareResult } from "../src/protocol";
import { FakeUi } from "./fakes";

const READY: ModelPrepareResult = {
  model: "qwen2.5-coder-0.5b",
  title: "Qwen2.5-Coder-0.5B-Instruct (AWQ), Q4_K_M",
  path: "/cache/memento/models/qwen.gguf",
  size: 491400064,
  sha256: "1d96",
  license: "Apache-2.0 (/x/LICENSE)",
  runtime: true,
};

/** A cancel signal the test fires, as VS Code's progress notification's Cancel does. */
class Signal implements CancelSignal {
  isCancellationRequested = false;
  private listeners: (() => unknown)[] = [];
  onCancellationRequested(listener: () => unknown) {
    this.listeners.push(listener);
    return { dispose: () => undefined };
  }
  fire() {
    this.isCancellationRequested = true;
    for (const listener of this.listeners) listener();
  }
}

class ProgressFakeUi extends FakeUi implements ProgressUi {
  readonly reports: { title: string; message: string; percentage?: number }[] = [];
  readonly signal = new Signal();
  settings: string[] = [];
  async progress<T>(title: string, work: (report: (message: string, percentage?: number) => void, cancel: CancelSignal) => Promise<T>): Promise<T> {
    return work((message, percentage) => this.reports.push({ title, message, percentage }), this.signal);
  }
  override async openSettings(...query: string[]): Promise<void> {
    this.settings.push(...query);
  }
}

/** A server that reports `steps` as `$/progress`, then answers (or waits for the cancel). */
function server(steps: ProgressValue[], answer: ModelPrepareResult | "wait-for-cancel" | Error): ModelPreparer & { asked: object[]; started: Promise<void> } {
  const asked: object[] = [];
  let started: () => void = () => undefined;
  return {
    asked,
    started: new Promise((resolve) => (started = resolve)),
    prepareModel(params, onProgress, cancel) {
      asked.push(params);
      started();
      for (const step of steps) onProgress(step);
      if (answer === "wait-for-cancel") {
        return new Promise((_, reject) => {
          cancel.onCancellationRequested(() => reject(Object.assign(new Error("request cancelled"), { code: -32800 })));
        });
      }
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
}

describe("Memento: Set Up the Embedded Model", () => {
  it("prepares the picked model with its bytes and percent in the notification, then offers to use it", async () => {
    const ui = new ProgressFakeUi("Qwen2.5-Coder 0.5B");
    ui.notificationAction = USE_IT;
    const steps = [
      { kind: "begin", message: "Qwen2.5-Coder-0.5B, 0.49 GB", percentage: 0 },
      { kind: "report", message: "fetching part 1/6: 0 of 491 MB", percentage: 0 },
      { kind: "report", message: "assembling part 3/6: 250 of 491 MB", percentage: 50 },
      { kind: "end", message: "ready: /cache/memento/models/qwen.gguf" },
    ];
    const fake = server(steps, READY);
    expect(await setUpModel({ server: fake, ui })).toEqual(READY);
    expect(fake.asked).toEqual([{ model: "qwen2.5-coder-0.5b" }]);
    expect(ui.reports.map((r) => [r.message, r.percentage])).toEqual([
      ["Qwen2.5-Coder-0.5B, 0.49 GB", 0],
      ["fetching part 1/6: 0 of 491 MB", 0],
      ["assembling part 3/6: 250 of 491 MB", 50],
    ]);
    expect(ui.messages).toEqual([
      {
        kind: "info",
        message: `Memento: ${READY.title} is ready in ${READY.path} (sha256 checked; Apache-2.0 (/x/LICENSE)). Set "memento.provider.kind" to "local" to use it.`,
        actions: [USE_IT],
      },
    ]);
    expect(ui.settings).toEqual(["memento.provider.kind"]);
  });

  it("Cancel cancels the request and says nothing was kept", async () => {
    const ui = new ProgressFakeUi("Qwen2.5-Coder 1.5B");
    const fake = server([], "wait-for-cancel");
    const done = setUpModel({ server: fake, ui });
    await fake.started;
    ui.signal.fire();
    expect(await done).toBeUndefined();
    expect(ui.messages).toEqual([{ kind: "info", message: "Memento: the model's set-up was cancelled; nothing was kept.", actions: [] }]);
  });

  it("a failed checksum is one error with the server's reason", async () => {
    const ui = new ProgressFakeUi("Qwen2.5-Coder 1.5B");
    const failed = new Error("qwen2.5-coder-1.5b: sha256 ab does not match cc; nothing was kept");
    expect(await setUpModel({ server: server([], failed), ui })).toBeUndefined();
    expect(ui.messages[0]?.kind).toBe("error");
    expect(ui.messages[0]?.message).toContain("could not be set up: qwen2.5-coder-1.5b: sha256 ab does not match cc; nothing was kept");
  });

  it("a model without its runtime says how to get it", async () => {
    const ui = new ProgressFakeUi("Qwen2.5-Coder 0.5B");
    const hint = "the self-contained server does not carry the model's runtime";
    await setUpModel({ server: server([], { ...READY, runtime: false, runtimeHint: hint }), ui });
    expect(ui.messages).toHaveLength(1);
    expect(ui.messages[0]?.kind).toBe("warn");
    expect(ui.messages[0]?.message).toContain(`Its runtime is missing: ${hint}`);
  });

  it("nothing is asked of the server when the pick is dismissed", async () => {
    const fake = server([], READY);
    expect(await setUpModel({ server: fake, ui: new ProgressFakeUi(undefined) })).toBeUndefined();
    expect(fake.asked).toEqual([]);
  });
});
