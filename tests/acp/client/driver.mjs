// The client side of the ACP tests: the official TypeScript SDK's `client()` (the app API
// that replaced `ClientSideConnection` in SDK 2.0) connected to `memento acp`, steered by
// the Python test over this process's stdin and reporting over its stdout, one JSON object
// a line.
//
// Commands in:  {"id": n, "op": "initialize" | "new" | "load" | "prompt" | "setMode" |
//               "cancel" | "answer" (the permission option to pick) | "buffer" (an unsaved
//               buffer: fs requests for its path read and write it, not the disk), ...}
// Reports out:  {"event": "result", "id": n, "result" | "error"}, {"event": "update", ...}
//               (each session/update), {"event": "permission", ...}, {"event": "read" |
//               "write", ...} (fs requests), {"event": "wire", "message"} (every message the
//               agent sent, for the schema check), {"event": "exit", "code"}.
//
// argv: the agent's command line (for example: python -m memento acp).

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const report = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

const [command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
agent.on("exit", (code) => {
  report({ event: "exit", code });
  process.exit(0);
});

// Every line the agent writes is reported before the SDK reads it (the schema check).
const tapped = new TransformStream({
  transform(chunk, controller) {
    controller.enqueue(chunk);
  },
});
let pending = "";
const decoder = new TextDecoder();
const tapWriter = tapped.writable.getWriter();
Readable.toWeb(agent.stdout).pipeTo(
  new WritableStream({
    async write(chunk) {
      pending += decoder.decode(chunk, { stream: true });
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.trim()) {
          try {
            report({ event: "wire", message: JSON.parse(line) });
          } catch {
            report({ event: "wire", unparsed: line });
          }
        }
        newline = pending.indexOf("\n");
      }
      await tapWriter.write(chunk).catch(() => {}); // the SDK stopped reading: closing down
    },
    close() {
      return tapWriter.close().catch(() => {});
    },
  }),
);

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), tapped.readable);

let permissionAnswer = "reject-once"; // the option the next permission requests get
let fsOffered = false;
const terminals = new Map(); // terminalId -> { child, output, exit, exited }
const buffers = new Map(); // path -> text: the "unsaved" buffers this client holds

const app = acp
  .client({ name: "memento-acp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    report({ event: "update", sessionId: params.sessionId, update: params.update });
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    report({ event: "permission", params, answer: permissionAnswer });
    if (permissionAnswer === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: permissionAnswer } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    report({ event: "read", params });
    return { content: buffers.get(params.path) ?? readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    const terminalId = `term-${terminals.size + 1}`;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const terminal = { output: "", exit: null };
    terminal.exited = new Promise((resolve) => {
      child.on("exit", (exitCode, signal) => {
        terminal.exit = { exitCode, signal };
        resolve(terminal.exit);
      });
    });
    child.stdout.on("data", (data) => (terminal.output += data));
    child.stderr.on("data", (data) => (terminal.output += data));
    terminal.child = child;
    terminals.set(terminalId, terminal);
    report({ event: "terminal", params, terminalId });
    return { terminalId };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    return await terminals.get(params.terminalId).exited;
  })
  .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
    const terminal = terminals.get(params.terminalId);
    return { output: terminal.output, truncated: false, ...(terminal.exit ? { exitStatus: terminal.exit } : {}) };
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    terminals.get(params.terminalId).child.kill();
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    const terminal = terminals.get(params.terminalId);
    if (terminal.exit === null) terminal.child.kill();
    report({ event: "released", terminalId: params.terminalId });
    return {};
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    if (!fsOffered) throw new Error("fs/write_text_file was not offered");
    report({ event: "write", params });
    if (buffers.has(params.path)) buffers.set(params.path, params.content);
    else writeFileSync(params.path, params.content);
    return {};
  });

async function run(ctx, message) {
  switch (message.op) {
    case "initialize":
      fsOffered = Boolean(message.fs);
      return ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: fsOffered, writeTextFile: fsOffered },
          terminal: Boolean(message.terminal),
          ...(message.session ? { session: message.session } : {}),
        },
        clientInfo: { name: "memento-acp-test", version: "1.0.0" },
      });
    case "new":
      return ctx.request(acp.methods.agent.session.new, { cwd: message.cwd, mcpServers: message.mcpServers ?? [] });
    case "load":
      return ctx.request(acp.methods.agent.session.load, {
        cwd: message.cwd,
        sessionId: message.sessionId,
        mcpServers: [],
      });
    case "prompt":
      return ctx.request(acp.methods.agent.session.prompt, {
        sessionId: message.sessionId,
        prompt: [{ type: "text", text: message.text }],
      });
    case "setMode":
      return ctx.request(acp.methods.agent.session.setMode, {
        sessionId: message.sessionId,
        modeId: message.modeId,
      });
    case "cancel":
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId: message.sessionId });
      return {};
    case "answer":
      permissionAnswer = message.answer;
      return {};
    case "buffer":
      buffers.set(message.path, message.text);
      return {};
    default:
      throw new Error(`unknown op ${message.op}`);
  }
}

await app.connectWith(stream, async (ctx) => {
  const lines = createInterface({ input: process.stdin });
  const running = [];
  for await (const line of lines) {
    if (!line.trim()) continue;
    const message = JSON.parse(line);
    running.push(
      run(ctx, message).then(
        (result) => report({ event: "result", id: message.id, result: result ?? {} }),
        (error) => report({ event: "result", id: message.id, error: { message: String(error?.message ?? error), code: error?.code } }),
      ),
    );
  }
  await Promise.allSettled(running);
});
// The workflow is over: end the agent's input, and this process with the agent.
if (!agent.stdin.writableEnded) agent.stdin.end();
