// What pi itself makes of a session file: `node context.mjs FILE` loads FILE with pi's own
// SessionManager (which migrates an old-version file and rewrites it in place, as pi does
// when it resumes one) and prints, as JSON, the messages pi would send to the model next
// (its session context through its convertToLlm), with what the load did to the file.
import { readFileSync } from "node:fs";
import { SessionManager, convertToLlm } from "@mariozechner/pi-coding-agent";

const file = process.argv[2];
const before = readFileSync(file);
const manager = SessionManager.open(file);
const after = readFileSync(file);
const context = manager.buildSessionContext();
const result = {
    sessionId: manager.getSessionId(),
    version: manager.getHeader()?.version ?? null,
    rewritten: !before.equals(after),
    entries: manager.getEntries().length,
    leafId: manager.getLeafId(),
    messages: convertToLlm(context.messages),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
