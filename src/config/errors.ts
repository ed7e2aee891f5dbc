export class ConfigError extends Error {
  readonly problems: string[];
  readonly file?: string;
  constructor(problems: string[], file?: string) {
    super(`${file ? `invalid config ${file}` : "invalid config"}:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
    this.file = file;
  }
}
