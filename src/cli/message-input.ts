import fs from "node:fs";
import { CliError } from "./exit-codes.js";

export interface MessageSources {
  /** every -m/--message given, in order (commander collects them) */
  message?: string[];
  messageFile?: string;
}

/** Reads a whole stream as UTF-8 (stdin for `-m -`). */
async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The text `loopgate agent` sends: `-m <text>`, `-m -` (stdin, for pipes and long text) or `--message-file <path>`.
 * Exactly one source: a second -m used to replace the first silently, so two are an error naming the flag, as are
 * both kinds at once. An empty message (blank stdin or file) is refused here, before anything connects.
 */
export async function readMessage(src: MessageSources, stdin?: NodeJS.ReadableStream): Promise<string> {
  const given = src.message ?? [];
  if (given.length > 1) {
    throw new CliError(
      `-m/--message: given ${given.length} times; give it once (for longer text use --message-file <path> or -m - to read stdin)`,
    );
  }
  if (given.length === 1 && src.messageFile !== undefined) {
    throw new CliError("-m/--message and --message-file: give one of them, not both");
  }
  let text: string;
  let from: string;
  if (src.messageFile !== undefined) {
    from = `--message-file ${src.messageFile}`;
    try {
      text = fs.readFileSync(src.messageFile, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new CliError(`${from}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`);
    }
  } else if (given[0] === "-") {
    from = "-m - (stdin)";
    // process.stdin only here: the getter builds the stream (and loads fs's stream classes), which -m <text> never reads
    const input = stdin ?? process.stdin;
    // typed at a terminal, the end of the message is not obvious: say how to finish it
    if ((input as { isTTY?: boolean }).isTTY) process.stderr.write("(type the message; end it with Ctrl-D)\n");
    text = await readAll(input);
  } else if (given.length === 1) {
    from = "-m/--message";
    text = given[0] as string;
  } else {
    throw new CliError("-m/--message is required (the text to send; -m - reads stdin, or use --message-file <path>)");
  }
  if (!text.trim()) throw new CliError(`${from}: the message is empty`);
  // a file or a pipe ends with the newline its editor or `echo` added; that newline is not part of the message
  return given[0] === "-" || src.messageFile !== undefined ? text.replace(/\r?\n$/, "") : text;
}
