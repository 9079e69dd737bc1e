// Memento: Set Up the Embedded Model. The user picks one of the catalog's models; the server
// assembles it (`memento/model/prepare`: fetched, checked by size and sha256) while a progress
// notification shows its bytes and percent, with Cancel (the request's cancellation: the
// server stops and keeps nothing). The answer says where the model is and whether the
// runtime that serves it is there, and how to get it when it is not.

import { errorMessage, type Disposable, type Ui } from "./ports";
import type { ModelPrepareResult } from "./protocol";

export interface CancelSignal {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): Disposable;
}

export interface ProgressValue {
  kind?: string;
  message?: string;
  percentage?: number;
}

export interface ModelPreparer {
  /** `memento/model/prepare` with a work-done token whose `$/progress` values go to
   * `onProgress`; `cancel` cancels the request. */
  prepareModel(params: { model: string }, onProgress: (value: ProgressValue) => void, cancel: CancelSignal): Promise<ModelPrepareResult>;
}

export interface ProgressUi extends Ui {
  /** A cancellable progress notification around `work`; `report` takes the total percent. */
  progress<T>(title: string, work: (report: (message: string, percentage?: number) => void, cancel: CancelSignal) => Promise<T>): Promise<T>;
}

export const MODELS = [
  { label: "Qwen2.5-Coder 1.5B", description: "1.1 GB, the default", detail: "Q4_K_M; better answers", value: "qwen2.5-coder-1.5b" },
  { label: "Qwen2.5-Coder 0.5B", description: "0.5 GB", detail: "Q4_K_M; faster on a small machine", value: "qwen2.5-coder-0.5b" },
];

const TITLE = "Memento: Set Up the Embedded Model";
export const USE_IT = "Use It";

/** vscode-jsonrpc's code for a request cancelled by the client, and the server's for one it stopped. */
const CANCELLED = -32800;

function cancelled(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error && error.code === CANCELLED;
}

export async function setUpModel(deps: { server: ModelPreparer; ui: ProgressUi }): Promise<ModelPrepareResult | undefined> {
  const { server, ui } = deps;
  const model = await ui.pick(MODELS, { title: TITLE, placeholder: "Which model? It is fetched once, then works offline." });
  if (model === undefined) return undefined;
  let result: ModelPrepareResult;
  try {
    result = await ui.progress(`${TITLE}: ${model}`, (report, cancel) =>
      server.prepareModel(
        { model },
        (value) => {
          if (value.kind !== "end" && value.message) report(value.message, value.percentage);
        },
        cancel,
      ),
    );
  } catch (error) {
    if (cancelled(error)) {
      await ui.info("Memento: the model's set-up was cancelled; nothing was kept.");
    } else {
      await ui.error(`Memento: the embedded model could not be set up: ${errorMessage(error)}`);
    }
    return undefined;
  }
  const where = `${result.title} is ready in ${result.path} (sha256 checked; ${result.license}).`;
  if (!result.runtime) {
    await ui.warn(`Memento: ${where} Its runtime is missing: ${result.runtimeHint ?? "install the local extra"}`);
    return result;
  }
  const action = await ui.info(`Memento: ${where} Set "memento.provider.kind" to "local" to use it.`, USE_IT);
  if (action === USE_IT) await ui.openSettings("memento.provider.kind");
  return result;
}
