// The advisor's quick fixes run server commands through the language client. Two of them
// change things the user should see first: a rewind goes through the rewind confirmation,
// and "make a rule" shows the candidate before it is saved.

import * as commands from "./commands";
import type { OmfgResult } from "./protocol";
import * as names from "./protocolNames";

export type Next = (command: string, args: unknown[]) => unknown;

export function interceptCommand(deps: () => commands.Deps | undefined) {
  return async (command: string, args: unknown[], next: Next): Promise<unknown> => {
    const live = deps();
    if (live !== undefined && command === names.CMD_CHECKPOINT_REWIND) {
      const argument = args[0] as { checkpointId?: unknown } | undefined;
      const id = typeof argument?.checkpointId === "string" ? argument.checkpointId : undefined;
      return commands.rewind(live, id);
    }
    const result = await next(command, args);
    if (live !== undefined && command === names.CMD_ADVISOR_TO_RULE) return commands.saveCandidate(live, result as OmfgResult);
    return result;
  };
}
