/**
 * The messages between the chat panel's page and the extension: one typed union each way,
 * checked on receipt on both sides.
 *
 * Each message type is declared once, as a schema; its TypeScript type is inferred from
 * that schema, so the type and the check cannot drift. The schema kit below is a dozen
 * lines of combinators rather than a library: the extension and the page both import this
 * file by relative path, so it must not need a runtime dependency of either package, and
 * the messages are a small closed union discriminated by `type`.
 *
 * Field names follow Memento's LSP surface (camelCase, ARCHITECTURE §5); server payloads
 * pass through unchanged, extra fields are dropped by the check.
 */

import type { Op, TranscriptPage } from "./transcript";

// -- the schema kit ---------------------------------------------------------------------

export class ProtocolError extends Error {}

export interface Schema<T> {
  readonly parse: (value: unknown, path: string) => T;
  readonly optional?: true;
}
export type Infer<S> = S extends Schema<infer T> ? T : never;

const fail = (path: string, wanted: string, value: unknown): never => {
  const got = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  throw new ProtocolError(`${path}: expected ${wanted}, got ${got}`);
};

export const str: Schema<string> = {
  parse: (v, p) => (typeof v === "string" ? v : fail(p, "a string", v)),
};
export const num: Schema<number> = {
  parse: (v, p) => (typeof v === "number" && Number.isFinite(v) ? v : fail(p, "a number", v)),
};
export const bool: Schema<boolean> = {
  parse: (v, p) => (typeof v === "boolean" ? v : fail(p, "a boolean", v)),
};
/** Any JSON object, kept as it is (the transcript's items, which the page's copy checks). */
export const record: Schema<Record<string, unknown>> = {
  parse: (v, p) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : fail(p, "an object", v),
};

export function lit<const T extends readonly (string | number | boolean)[]>(
  ...values: T
): Schema<T[number]> {
  return {
    parse: (v, p) =>
      values.includes(v as T[number]) ? (v as T[number]) : fail(p, values.join(" | "), v),
  };
}

export function arr<T>(item: Schema<T>, max = 100_000): Schema<T[]> {
  return {
    parse: (v, p) => {
      if (!Array.isArray(v)) return fail(p, "an array", v);
      if (v.length > max) throw new ProtocolError(`${p}: more than ${max} items`);
      return v.map((x, i) => item.parse(x, `${p}[${i}]`));
    },
  };
}

/** Absent or null both read as undefined (the server omits None; JSON has no undefined). */
export function opt<T>(inner: Schema<T>): Schema<T | undefined> & { optional: true } {
  return {
    optional: true,
    parse: (v, p) => (v === undefined || v === null ? undefined : inner.parse(v, p)),
  };
}

type Shape = Record<string, Schema<unknown>>;
type OptionalKeys<S extends Shape> = { [K in keyof S]: S[K] extends { optional: true } ? K : never }[keyof S];
type Simplify<T> = { [K in keyof T]: T[K] };
export type ObjectOf<S extends Shape> = Simplify<
  { [K in Exclude<keyof S, OptionalKeys<S>>]: Infer<S[K]> } & {
    [K in OptionalKeys<S>]?: Infer<S[K]>;
  }
>;

export function obj<S extends Shape>(shape: S): Schema<ObjectOf<S>> {
  return {
    parse: (v, p) => {
      const source = record.parse(v, p);
      const out: Record<string, unknown> = {};
      for (const [key, schema] of Object.entries(shape)) {
        const value = schema.parse(source[key], `${p}.${key}`);
        if (value !== undefined) out[key] = value;
      }
      return out as ObjectOf<S>;
    },
  };
}

/** A union of object schemas told apart by the string field `tag`. */
export function tagged<K extends string, M extends Record<string, Shape>>(
  tag: K,
  members: M,
): Schema<{ [T in keyof M]: Simplify<{ [P in K]: T } & ObjectOf<M[T]>> }[keyof M]> {
  const schemas = new Map(Object.entries(members).map(([name, shape]) => [name, obj(shape)]));
  return {
    parse: (v, p) => {
      const kind = record.parse(v, p)[tag];
      const schema = typeof kind === "string" ? schemas.get(kind) : undefined;
      if (schema === undefined) return fail(`${p}.${tag}`, [...schemas.keys()].join(" | "), kind);
      return { [tag]: kind, ...schema.parse(v, p) } as never;
    },
  };
}

// -- what the server says (forwarded LSP notifications) ---------------------------------

const checkpoint = obj({
  id: str,
  label: str,
  createdAt: str,
  entryId: opt(str),
  files: arr(str),
  messageCount: opt(num),
  kind: opt(str),
});
export type CheckpointItem = Infer<typeof checkpoint>;

/** `current`: the server's own session (the one the transcript is of). */
const session = obj({ id: str, path: str, title: opt(str), updatedAt: str, current: opt(bool) });
export type SessionItem = Infer<typeof session>;

/** A subagent's own turn notices carry `subagentId` (the page leaves them to the card). */
const childTag = { subagentId: opt(str), parentTurnId: opt(str) };

const OPS = new Set(["append", "update", "text", "remove", "reset"]);

/** A transcript op (`memento/transcript/patch`), as the generated contract types it. Only its
 * `op` is checked here: the page's copy checks what each op leans on as it applies it. */
const op: Schema<Op> = {
  parse: (v, p) => {
    const value = record.parse(v, p);
    return OPS.has(value["op"] as string) ? (value as unknown as Op) : fail(`${p}.op`, [...OPS].join(" | "), value["op"]);
  },
};

/** What the server says that the page hears, in arrival order (`kind` names the LSP method).
 * The conversation itself comes only as transcript patches. */
const noticeShapes = {
  /** `memento/transcript/patch`: ops to apply in order (`seq`: where the transcript is after them). */
  patch: { sessionId: str, seq: num, ops: arr(op) },
  /** `memento/turn`: the page knows a turn runs (Stop, Steer) before its reply shows. */
  turn: {
    turnId: str,
    state: lit("started", "retrying", "finished", "aborted", "error"),
    ...childTag,
  },
  /** `memento/tool/progress`: how far a running tool got (an MCP server's progress). */
  toolProgress: {
    turnId: str,
    toolCallId: str,
    progress: num,
    total: opt(num),
    message: opt(str),
    ...childTag,
  },
  context: { tokens: num, contextWindow: num, percent: num, stablePrefixTokens: num, windowOrigin: opt(str) },
  checkpoints: { checkpoints: arr(checkpoint) },
} satisfies Record<string, Shape>;

export const noticeSchema = tagged("kind", noticeShapes);
export type Notice = Infer<typeof noticeSchema>;
export type NoticeOf<K extends Notice["kind"]> = Extract<Notice, { kind: K }>;
export type PatchNotice = NoticeOf<"patch">;

/** A page of `memento/transcript` as one JSON text: a single string crosses into the webview
 * in one copy, where thousands of nested objects are cloned one by one (twice, in VS Code's
 * relay). */
export function parseTranscriptPage(json: string): TranscriptPage {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new ProtocolError(`message.pageJson: not JSON (${String(error)})`);
  }
  return pageSchema.parse(value, "message.pageJson") as unknown as TranscriptPage;
}

/** The page's frame; its items are the server's, drawn by the page's copy. */
const pageSchema = obj({ sessionId: str, seq: num, items: arr(record), nextCursor: opt(str) });

// -- extension → page -------------------------------------------------------------------

export const toPageSchema = tagged("type", {
  /** Coalesced notifications, in arrival order (at most one message per flush). */
  notices: { notices: arr(noticeSchema) },
  /** A page of `memento/transcript`, oldest first (`parseTranscriptPage`); `nextCursor`
   * pages further back. */
  transcript: { requestId: num, pageJson: str },
  sessions: { requestId: num, sessions: arr(session), current: opt(str) },
  /** The session changed (new, opened, or rewound): the page drops its timeline. */
  sessionChanged: { id: opt(str) },
  prompted: { requestId: num, turnId: str },
  rewound: { restored: arr(str), conflicts: arr(str) },
  failed: { requestId: opt(num), op: str, message: str },
  /** `memento.openContextView`: show the context view. */
  showContext: {},
  /** `memento/relief/audit {id}`'s answer, as the server gives it (the page draws it). */
  audit: { requestId: num, id: str, audit: record },
  /** The undo of `id` is over, done or declined (its patch, when done, came before this). */
  undoSettled: { id: str },
  /** The pin or unpin of `entryId` is over, done or refused (a done one's patch came first). */
  pinSettled: { entryId: str },
});
export type ToPage = Infer<typeof toPageSchema>;

// -- page → extension -------------------------------------------------------------------

export const rewindModes = ["all", "conversation", "files"] as const;
export type RewindMode = (typeof rewindModes)[number];

export const fromPageSchema = tagged("type", {
  /** The page is listening: the extension sends the checkpoint list. */
  ready: {},
  prompt: { requestId: num, text: str },
  steer: { requestId: num, text: str },
  abort: {},
  /** A subagent card's Stop: `memento/subagent/abort {id}`. */
  abortSubagent: { id: str },
  /** `memento/transcript`: the newest items, or those before `cursor`. */
  transcript: { requestId: num, cursor: opt(str), limit: num },
  listSessions: { requestId: num },
  newSession: { requestId: num },
  openSession: { requestId: num, id: str },
  advisor: { action: lit("apply", "dismiss", "toRule"), noteId: str },
  rewind: { checkpointId: str, mode: lit(...rewindModes) },
  openDiff: { path: str, checkpointId: opt(str) },
  openFile: { path: str, line: opt(num) }, // 1-based
  compact: {},
  /** `memento/relief/audit {id}`: the audit of the relief step a divider shows. */
  audit: { requestId: num, id: str },
  /** Undo the relief step `id` (the Compactions view's undo, with its "does not fit" choice). */
  undoRelief: { id: str },
  /** `memento/pin {entryId}`: a message, a reply or a tool result kept through every relief step. */
  pin: { entryId: str },
  /** `memento/unpin {entryId}`. */
  unpin: { entryId: str },
});
export type FromPage = Infer<typeof fromPageSchema>;

/** Checks a received message; a bad one throws `ProtocolError` naming the field. */
export function parseToPage(value: unknown): ToPage {
  return toPageSchema.parse(value, "message");
}
export function parseFromPage(value: unknown): FromPage {
  return fromPageSchema.parse(value, "message");
}
export function parseNotice(value: unknown): Notice {
  return noticeSchema.parse(value, "notice");
}
