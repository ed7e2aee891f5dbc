import { readFileSync } from "node:fs";

let cached: string | undefined;

/** The package version both ends report (`hello-ok.server.version`, `connect.client.version`). */
export function loopgateVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string })
    .version;
  return cached;
}
