import type { Item, Op, TranscriptPage, ToolPart, TranscriptNode } from "../../src/transcript";

export function conversation(turns: number, options?: { prefix?: string; first?: number }): Item[];
export function bigHistory(messages: number): Item[];
export class Patches {
  constructor(sessionId?: string, seq?: number);
  sessionId: string;
  seq: number;
  patch(...ops: Op[]): { kind: "patch"; sessionId: string; seq: number; ops: Op[] };
  page(items: Item[], nextCursor?: string): TranscriptPage;
}
export const op: {
  item(node: Item): Op;
  part(item: string, parent: string, node: TranscriptNode): Op;
  text(item: string, key: string, text: string): Op;
  update(item: string, node: Record<string, unknown>): Op;
  remove(item: string, key: string): Op;
};
export function toolPart(key: string, toolCallId: string, name: string, more?: Partial<ToolPart>): ToolPart;
