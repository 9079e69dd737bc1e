// Transcripts made up for the tests and benchmarks: items and patches as the server sends
// them (`memento/transcript`, `memento/transcript/patch`; the types are ../../src/transcript.ts).

/** `turns` turns of user → reply (every third with a read tool call, its result and a closing
 * text): 2–4 messages a turn, the same keys for the same turn. */
export function conversation(turns, { prefix = "", first = 0 } = {}) {
  const out = [];
  for (let t = first; t < first + turns; t += 1) {
    const id = `${prefix}${t}`;
    const reply = `r:u:${id}`;
    out.push({ kind: "user", key: `u:${id}`, entryId: id, text: `Question ${t}: how does part ${t} work?`, steer: false });
    const parts = [{ kind: "text", key: `${reply}/0.0`, text: `Answer ${t}. Part ${t} reads the config and **returns** a value.\n\n- first point\n- second point` }];
    if (t % 3 === 0) {
      parts.push(
        { kind: "tool", key: `${reply}/0.1`, toolCallId: `call${t}`, name: "read", args: JSON.stringify({ path: `src/part${t}.py` }), target: `src/part${t}.py`, status: "done", output: `def part_${t}():\n    return ${t}\n`, subagents: [] },
        { kind: "text", key: `${reply}/1.0`, text: `Done with part ${t}.` },
      );
    }
    out.push({ kind: "reply", key: reply, state: "done", parts, context: { tokens: 1800 + t * 18, stablePrefixTokens: 800 + t * 8 } });
  }
  return out;
}

/** A transcript of about `messages` messages (the benchmark's 10,000: 8 messages every 3 turns). */
export function bigHistory(messages) {
  return conversation(Math.ceil((messages * 3) / 8));
}

/** A session's patches, numbered as the server numbers them (`seq`). */
export class Patches {
  constructor(sessionId = "s1", seq = 0) {
    this.sessionId = sessionId;
    this.seq = seq;
  }

  /** The `memento/transcript/patch` notice of `ops`, as the page hears it. */
  patch(...ops) {
    this.seq += 1;
    return { kind: "patch", sessionId: this.sessionId, seq: this.seq, ops };
  }

  /** A page of `items` at the current seq. */
  page(items, nextCursor) {
    return { sessionId: this.sessionId, seq: this.seq, items, ...(nextCursor === undefined ? {} : { nextCursor }) };
  }
}

/** The ops (`item`: the top-level item's key). */
export const op = {
  item: (node) => ({ op: "append", item: node.key, node }),
  part: (item, parent, node) => ({ op: "append", item, parent, node }),
  text: (item, key, text) => ({ op: "text", item, key, text }),
  update: (item, node) => ({ op: "update", item, node }),
  remove: (item, key) => ({ op: "remove", item, key }),
};

/** A tool part as it starts streaming. */
export const toolPart = (key, toolCallId, name, more = {}) => ({ kind: "tool", key, toolCallId, name, args: "", status: "streaming", subagents: [], ...more });
