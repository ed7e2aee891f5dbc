/**
 * Whether to write ANSI colour to one stream. Decided per stream: the reply may go to a pipe while the tool lines
 * still reach a terminal, and each should look right where it lands.
 *
 * Order: `--no-color` always wins; then FORCE_COLOR (set and not "0"/"false" forces colour on, "0"/"false" forces
 * it off); then NO_COLOR (any non-empty value turns it off); otherwise colour only for a terminal that is not dumb.
 * FORCE_COLOR beats NO_COLOR as in Node itself: it is the more specific request, usually set for one command.
 */
export interface ColorChoice {
  /** false when the user passed --no-color (commander sets `color: false`) */
  flag?: boolean;
  env?: NodeJS.ProcessEnv;
}

export function colorFor(stream: { isTTY?: boolean }, choice: ColorChoice = {}): boolean {
  const env = choice.env ?? process.env;
  if (choice.flag === false) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "") return force !== "0" && force.toLowerCase() !== "false";
  if (env.NO_COLOR) return false;
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** Wraps text in an SGR code when colour is on; a no-op otherwise. */
export function painter(enabled: boolean) {
  const wrap = (code: string) => (s: string) => (enabled ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { dim: wrap("2"), red: wrap("31"), green: wrap("32"), yellow: wrap("33") };
}
