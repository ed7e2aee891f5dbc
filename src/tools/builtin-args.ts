import { z } from "zod";

/**
 * The built-in tools' arguments as zod objects. Imported by a tool's first call that its written-out JSON Schema
 * does not plainly accept (tools/validate.ts), so that a process whose calls are all well-formed never loads zod
 * (issue 34: zod's load and these schemas cost a one-shot CLI turn ~10 ms). Each tool's `parameters` is
 * `modelSchema` of its object here, written out; tools/builtin.test.ts holds them equal.
 */

// the default is read.ts's, passed in: importing it from there would make the bundler split read.ts into a chunk
// of its own, shared with this one (scripts/bundle-cli.mjs), one more file for every CLI start to load
export const readArgs = (defaultLimit: number) =>
  z.strictObject({
    path: z.string().describe("Path relative to the workspace"),
    offset: z.int().min(1).optional().describe("1-based line to start at"),
    limit: z.int().min(1).optional().describe(`Max lines (default ${defaultLimit})`),
  });

export const writeArgs = () =>
  z.strictObject({
    path: z.string().describe("Path relative to the workspace"),
    content: z.string().describe("Full new file content"),
  });

export const editArgs = () =>
  z.strictObject({
    path: z.string().describe("Path relative to the workspace"),
    oldText: z.string().min(1).describe("Exact text to replace, including whitespace"),
    newText: z.string().describe("Replacement text"),
  });

/** The largest timeout is an option, so the schema is made per tool instance. */
export const execArgs = (opts: { maxTimeoutSeconds: number; defaultTimeoutSeconds: number }) =>
  z.strictObject({
    command: z.string().min(1).describe("Shell command"),
    timeoutSeconds: z
      .number()
      .gt(0)
      .max(opts.maxTimeoutSeconds)
      .optional()
      .describe(`Kill after this many seconds (default ${opts.defaultTimeoutSeconds})`),
  });

export const messageArgs = () => z.strictObject({ text: z.string().describe("The message text") });

type Builders = {
  readArgs: typeof readArgs;
  writeArgs: typeof writeArgs;
  editArgs: typeof editArgs;
  execArgs: typeof execArgs;
  messageArgs: typeof messageArgs;
};
/** What a built-in's `execute` gets: the parsed output of its zod object. */
export type ArgsOf<K extends keyof Builders> = z.output<ReturnType<Builders[K]>>;
