export const EXIT = { ok: 0, runError: 1, usage: 2, timeout: 124, interrupted: 130 } as const;

/** A user-facing failure: printed as one line (no stack) and mapped to an exit code. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.usage) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}
