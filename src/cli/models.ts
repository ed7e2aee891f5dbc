import type { AuthProfileStatus, ModelsAuthClearResult, ModelsAuthStatusResult } from "../protocol/payloads.js";
import { withGateway } from "./agent-remote.js";
import { EXIT } from "./exit-codes.js";
import { formatLocalTime } from "./local-time.js";

export interface ModelsCliOptions {
  url?: string;
  token?: string;
  config?: string;
  json?: boolean;
}

/** `loopgate models status [--json]`: each auth profile's state, until when, why, and its last use. */
export async function runModelsStatus(opts: ModelsCliOptions): Promise<number> {
  const result = await withGateway(opts, ["operator.read"], (call) =>
    call<ModelsAuthStatusResult>("models.authStatus", {}),
  );
  process.stdout.write(
    opts.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatAuthStatus(result.profiles, Date.now())}\n`,
  );
  return EXIT.ok;
}

/** `loopgate models auth clear <id>`: ends the profile's cooldowns and disable on every node. */
export async function runModelsAuthClear(id: string, opts: ModelsCliOptions): Promise<number> {
  const result = await withGateway(opts, ["operator.admin"], (call) =>
    call<ModelsAuthClearResult>("models.authClear", { id }),
  );
  process.stdout.write(
    opts.json
      ? `${JSON.stringify(result)}\n`
      : `${id}: ${result.cleared > 0 ? "cooldown cleared, usable again" : "was not cooling down"}\n`,
  );
  return EXIT.ok;
}

/** One line per profile: id, state (with until when and why), the cooling models, the last use. */
export function formatAuthStatus(profiles: readonly AuthProfileStatus[], now: number): string {
  if (profiles.length === 0) return "no auth profiles (set a provider's apiKey, or auth.profiles)";
  const width = Math.max(...profiles.map((p) => p.id.length));
  return profiles
    .map((p) => {
      const state =
        p.state === "ok"
          ? "ok"
          : `${p.state} until ${formatLocalTime(p.until ?? now)} (${left((p.until ?? now) - now)}${p.reason ? `, ${p.reason}` : ""})`;
      const models = p.models && p.state === "cooldown" ? ` models: ${p.models.map((m) => m.model).join(", ")}` : "";
      const used = p.lastUsed !== undefined ? ` · last used ${formatLocalTime(p.lastUsed)}` : "";
      return `${p.id.padEnd(width)}  ${state}${models}${used}`;
    })
    .join("\n");
}

function left(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s left`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s left`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} m left`;
}
