// Session entries (pi v3) made up for the tests and benchmarks.

let clock = Date.parse("2026-01-01T00:00:00Z");

function entry(id, parentId, fields) {
  clock += 1000;
  return { id, parentId, timestamp: new Date(clock).toISOString(), ...fields };
}

/** `turns` turns of user → assistant (every third with a tool call and its result), with
 * ids `${prefix}${turn}.${k}`: 2–4 messages a turn, the same ids for the same turn. */
export function conversation(turns, { prefix = "e", first = 0 } = {}) {
  const out = [];
  let n = 0;
  let turn = first;
  let parent = null;
  const push = (fields) => {
    const id = `${prefix}${turn}.${n++}`;
    out.push(entry(id, parent, fields));
    parent = id;
    return id;
  };
  for (let t = first; t < first + turns; t += 1) {
    turn = t;
    n = 0;
    push({ type: "message", message: { role: "user", content: `Question ${t}: how does part ${t} work?`, timestamp: clock } });
    const tool = t % 3 === 0;
    const content = [{ type: "text", text: `Answer ${t}. Part ${t} reads the config and **returns** a value.\n\n- first point\n- second point` }];
    if (tool) content.push({ type: "toolCall", id: `call${t}`, name: "read", arguments: { path: `src/part${t}.py` } });
    push({
      type: "message",
      message: {
        role: "assistant", content, api: "openai", provider: "scripted", model: "m", stopReason: tool ? "toolUse" : "stop",
        usage: { input: 1000 + t * 10, output: 50, cacheRead: 800 + t * 8, cacheWrite: 0, totalTokens: 0 }, timestamp: clock,
      },
    });
    if (tool) {
      push({ type: "message", message: { role: "toolResult", toolCallId: `call${t}`, toolName: "read", content: [{ type: "text", text: `def part_${t}():\n    return ${t}\n` }], isError: false, timestamp: clock } });
      push({ type: "message", message: { role: "assistant", content: [{ type: "text", text: `Done with part ${t}.` }], stopReason: "stop", usage: { input: 1100 + t * 10, cacheRead: 900 + t * 8 }, timestamp: clock } });
    }
  }
  return out;
}

/** A history of about `messages` messages (the benchmark's 10,000). */
export function bigHistory(messages) {
  return conversation(Math.ceil((messages * 3) / 8)); // 8 messages every 3 turns
}
