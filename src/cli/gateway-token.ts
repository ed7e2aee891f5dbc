import fs from "node:fs";
import { CliError } from "./exit-codes.js";

export interface GatewayTokenSources {
  /** `--token`: convenient, but every user of the machine sees it in the process list */
  flag?: string;
  /** `--token-file PATH`: the token is the file's content, without the trailing newline */
  file?: string;
  env: NodeJS.ProcessEnv;
  /** gateway.auth.token, secret references already resolved */
  config?: string;
}

/** `--token` > `--token-file` > `LOOPGATE_GATEWAY_TOKEN` > `gateway.auth.token`; undefined when none is set. */
export function resolveGatewayToken(src: GatewayTokenSources): string | undefined {
  if (src.flag) return src.flag;
  if (src.file !== undefined) return readTokenFile(src.file);
  const fromEnv = src.env.LOOPGATE_GATEWAY_TOKEN?.trim();
  return fromEnv || src.config || undefined;
}

function readTokenFile(file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new CliError(`--token-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const token = text.replace(/\r?\n$/, "");
  if (token.trim() === "") throw new CliError(`--token-file ${file}: the file is empty; put the gateway token in it`);
  if (/[\r\n]/.test(token)) throw new CliError(`--token-file ${file}: expected the token on one line`);
  return token;
}

/** Said when `--token` is used on a bind other machines can reach: the one place it matters who can read `ps`. */
export function tokenFlagWarning(host: string): string {
  return (
    `warning: --token on ${host} shows the gateway token in the process list (ps) to every user of this machine; ` +
    "use LOOPGATE_GATEWAY_TOKEN or --token-file PATH instead"
  );
}
