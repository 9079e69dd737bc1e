/**
 * The page's copy of the server's transcript (`memento/transcript`): the items of the pages
 * it read, changed only by the ops of `memento/transcript/patch`, as the server's own copy
 * is (`core/transcript_state.py`). Pure data: which top-level items an op touched comes out,
 * the rows are drawn from them (`itemRows.ts`).
 */
import type { Item, Op, TranscriptNode } from "../../src/transcript";

/** An op that does not fit the copy (a key taken or missing): the page reads it again. */
export class TranscriptError extends Error {}

type Node = TranscriptNode;

/** The list a node's children live in (undefined for a node that has none). */
function childrenOf(node: Node): Node[] | undefined {
  switch (node.kind) {
    case "reply":
      return node.parts;
    case "tool":
      return node.subagents;
    case "subagent":
      return node.items;
    default:
      return undefined;
  }
}

const CHILD_FIELDS = new Set(["parts", "subagents", "items"]);

export class Transcript {
  items: Item[] = [];
  private readonly nodes = new Map<string, Node>();
  private readonly parents = new Map<string, string | undefined>();

  constructor(items: readonly Item[] = []) {
    this.put(items, "end");
  }

  has(key: string): boolean {
    return this.nodes.has(key);
  }

  /** A page's items, after (`end`) or before (`start`, an older page) those held. Items
   * already held are left as they are (the copy of them is newer). */
  put(items: readonly Item[], at: "start" | "end"): Item[] {
    const fresh = items.filter((item) => !this.nodes.has(item.key));
    for (const item of fresh) this.index(item, undefined);
    this.items = at === "end" ? [...this.items, ...fresh] : [...fresh, ...this.items];
    return fresh;
  }

  private index(node: Node, parent: string | undefined): void {
    this.nodes.set(node.key, node);
    this.parents.set(node.key, parent);
    for (const child of childrenOf(node) ?? []) this.index(child, node.key);
  }

  private forget(node: Node): void {
    this.nodes.delete(node.key);
    this.parents.delete(node.key);
    for (const child of childrenOf(node) ?? []) this.forget(child);
  }

  /** Applies one op; returns the key of the top-level item it changed (undefined: an item
   * this copy does not hold, older than its pages, or a `reset`). Ops arrive as JSON the
   * page checked only loosely, so every shape they lean on is checked here. */
  apply(op: Op): string | undefined {
    switch (op.op) {
      case "append":
        return this.append(op.item, op.parent, op.node);
      case "update":
        return this.update(op.item, op.node);
      case "text":
        return this.text(op.item, op.key, op.text);
      case "remove":
        return this.remove(op.item, op.key);
      case "reset":
        return undefined;
    }
  }

  private append(top: string, parent: string | undefined, node: Node): string | undefined {
    if (this.nodes.has(node.key)) throw new TranscriptError(`append: key ${node.key} is taken`);
    const copy = structuredClone(node);
    if (parent === undefined) {
      this.items.push(copy as Item);
      this.index(copy, undefined);
      return copy.key;
    }
    if (!this.nodes.has(top)) return undefined; // a change to an item on a page not read
    const owner = this.nodes.get(parent);
    const list = owner === undefined ? undefined : childrenOf(owner);
    if (list === undefined) throw new TranscriptError(`append: no container ${parent}`);
    list.push(copy);
    this.index(copy, parent);
    return top;
  }

  private update(top: string, fields: { key: string; kind: string }): string | undefined {
    const node = this.nodes.get(fields.key);
    if (node === undefined) {
      if (!this.nodes.has(top)) return undefined;
      throw new TranscriptError(`update: no node ${fields.key}`);
    }
    if (node.kind !== fields.kind) throw new TranscriptError(`update: ${fields.key} is a ${node.kind}`);
    const target = node as unknown as Record<string, unknown>;
    // Fields the update leaves out are unset (the server sends the whole node less its children).
    for (const name of Object.keys(target)) if (!CHILD_FIELDS.has(name) && !(name in fields)) delete target[name];
    for (const [name, value] of Object.entries(fields)) if (!CHILD_FIELDS.has(name)) target[name] = value;
    return top;
  }

  private text(top: string, key: string, text: string): string | undefined {
    const node = this.nodes.get(key);
    if (node === undefined) {
      if (!this.nodes.has(top)) return undefined;
      throw new TranscriptError(`text: no part ${key}`);
    }
    if (node.kind === "text" || node.kind === "thinking") node.text += text;
    else if (node.kind === "tool") node.args += text;
    else throw new TranscriptError(`text: ${key} is a ${node.kind}`);
    return top;
  }

  private remove(top: string, key: string): string | undefined {
    const node = this.nodes.get(key);
    if (node === undefined) {
      if (!this.nodes.has(top)) return undefined;
      throw new TranscriptError(`remove: no node ${key}`);
    }
    const parent = this.parents.get(key);
    const owner = parent === undefined ? undefined : this.nodes.get(parent);
    const list: Node[] | undefined = parent === undefined ? this.items : owner === undefined ? undefined : childrenOf(owner);
    const at = list?.indexOf(node) ?? -1;
    if (list !== undefined && at >= 0) list.splice(at, 1);
    this.forget(node);
    return parent === undefined ? key : top;
  }
}
