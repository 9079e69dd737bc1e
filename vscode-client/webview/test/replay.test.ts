/**
 * The transcript's property through the page's copy: every recording of a real run
 * (`tests/data/transcript/*.json`, see `tests/transcript/README.md`) replayed as the page
 * lives it — the first page, each patch in order, the page read again after a reset — ends
 * with the server's live transcript, and draws the rows the transcript read back after a
 * restart draws (less the items shown live only). Replayed again with the patches merged at
 * random boundaries, as the extension host's coalescer sends them, it ends the same.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { coalesce } from "../../src/panel/coalescer";
import type { Item, Patch, ReplyItem, TranscriptPage } from "../../src/transcript";
import type { Notice } from "../../src/webviewProtocol";
import { Timeline } from "../src/model";
import type { Row } from "../src/rows";

const FOLDER = join(__dirname, "..", "..", "..", "tests", "data", "transcript");

interface Recording {
  start: TranscriptPage;
  patches: Patch[];
  pages: Record<string, TranscriptPage>;
  live: TranscriptPage;
  stored: TranscriptPage;
}

const recordings = readdirSync(FOLDER)
  .filter((name) => name.endsWith(".json"))
  .map((name) => [name, JSON.parse(readFileSync(join(FOLDER, name), "utf8")) as Recording] as const);

/** As the page lives it: a patch that asks for a new read gets the page read then. */
function replay(recording: Recording, batches: Patch[]): Timeline {
  const t = new Timeline(() => 0);
  t.loadTail(recording.start);
  const pages = Object.values(recording.pages).sort((a, b) => a.seq - b.seq);
  for (const patch of batches) {
    if (t.applyPatch(patch) !== "reload") continue;
    const page = pages.find((p) => p.seq >= patch.seq);
    if (page === undefined) throw new Error(`no page read after the reset of seq ${patch.seq}`);
    t.loadTail(page);
  }
  return t;
}

/** `tests/transcript/recording.py`'s `without_transient`: the items storage has. */
function withoutTransient(items: readonly Item[]): Item[] {
  return items
    .filter((item) => !(item.kind === "relief" && item.transient === true))
    .map((item) => (item.kind !== "reply" ? item : { ...item, parts: item.parts.map(partWithoutTransient) }));
}

function partWithoutTransient(part: ReplyItem["parts"][number]): ReplyItem["parts"][number] {
  if (part.kind !== "tool" || part.subagents.length === 0) return part;
  return { ...part, subagents: part.subagents.map((card) => ({ ...card, items: withoutTransient(card.items) })) };
}

/** What the rows show: everything but the version that tells views to redraw. */
function drawing(t: Timeline, keep: (key: string) => boolean = () => true): unknown[] {
  return t.rows.filter((r) => keep(r.key)).map(({ version: _, ...shown }: Row) => ({ ...shown, restore: t.checkpointFor(shown as Row)?.id, diff: t.diffBaseFor(shown as Row) }));
}

/** A small seeded generator (the same batches on every run). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** The patches merged as the coalescer merges them, at random boundaries. A reset goes alone
 * (merged, it would ask for a page newer than the recording read then: the coalescer's own
 * tests cover that merge). */
function batched(patches: readonly Patch[], seed: number): Patch[] {
  const next = random(seed);
  const out: Patch[] = [];
  let queue: Notice[] = [];
  for (const patch of patches) {
    const reset = patch.ops.some((op) => op.op === "reset");
    if (reset) {
      out.push(...queue.map((n) => n as Patch & { kind: "patch" }));
      queue = [];
    }
    queue = coalesce([...queue, { kind: "patch", ...patch }]);
    if (reset || next() < 0.3) {
      out.push(...queue.map((n) => n as Patch & { kind: "patch" }));
      queue = [];
    }
  }
  out.push(...queue.map((n) => n as Patch & { kind: "patch" }));
  return out.map(({ kind: _, ...patch }: Patch & { kind?: string }) => patch);
}

describe("recordings of real runs, replayed through the page's copy", () => {
  it("there are recordings to replay", () => {
    expect(recordings.length).toBeGreaterThanOrEqual(2);
  });

  for (const [name, recording] of recordings) {
    it(`${name}: the copy ends with the server's transcript, and draws what a restart draws`, () => {
      const t = replay(recording, recording.patches);
      expect(t.items).toEqual(recording.live.items);
      const transient = new Set(recording.live.items.filter((i) => i.kind === "relief" && i.transient === true).map((i) => i.key));
      const stored = new Timeline(() => 0);
      stored.loadTail(recording.stored);
      expect(withoutTransient(recording.live.items)).toEqual(withoutTransient(recording.stored.items));
      expect(drawing(t, (key) => !transient.has(key))).toEqual(drawing(stored));
    });

    it(`${name}: the same with the patches coalesced at random boundaries`, () => {
      for (const seed of [1, 2, 3, 4, 5]) {
        const t = replay(recording, batched(recording.patches, seed));
        expect(t.items).toEqual(recording.live.items);
      }
    });
  }
});
