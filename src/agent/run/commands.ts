/** Slash commands are handled before the model. */
export type SlashCommandName = "new" | "reset" | "stop";

export interface SlashCommand {
  command: SlashCommandName;
  /** text after the command: `/new hello` starts a new session and runs `hello` in it */
  rest: string;
}

export function parseSlashCommand(message: string): SlashCommand | undefined {
  const m = message.trim().match(/^\/(new|reset|stop)(?:\s+([\s\S]*))?$/i);
  if (!m) return undefined;
  return { command: m[1].toLowerCase() as SlashCommandName, rest: (m[2] ?? "").trim() };
}
