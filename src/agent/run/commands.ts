/** Slash commands are handled before the model. */
export type SlashCommandName = "new" | "reset" | "stop" | "compact";

export interface SlashCommand {
  command: SlashCommandName;
  /** text after the command: `/new hello` starts a new session and runs `hello` in it; `/compact focus on X`
   * gives the summarizer instructions */
  rest: string;
}

export function parseSlashCommand(message: string): SlashCommand | undefined {
  const m = message.trim().match(/^\/(new|reset|stop|compact)(?:\s+([\s\S]*))?$/i);
  if (!m) return undefined;
  return { command: m[1].toLowerCase() as SlashCommandName, rest: (m[2] ?? "").trim() };
}
