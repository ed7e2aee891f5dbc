import { useMemo, useState } from "preact/hooks";
import type { ConfigSchemaResult } from "../../../src/protocol/operator";
import type { ConsoleModel } from "../model";
import { AdminOnly, ErrorLine, useRpc } from "./operator-common";

interface ConfigGet {
  config: unknown;
  redacted: string[];
  /** the config file the gateway watches (absent when it was not started from one) */
  path?: string;
}

interface Leaf {
  path: string;
  value: string;
  redacted: boolean;
  help?: string;
}

/** "models.providers.fake.apiKey" → "models.providers.*.apiKey"; "agents.list[0].id" → "agents.list[].id" */
function helpFor(help: Record<string, string>, path: string): string | undefined {
  const generic = path.replace(/\[\d+\]/g, "[]");
  if (help[generic]) return help[generic];
  // record entries: try each segment as "*", nearest first
  const parts = generic.split(".");
  for (let i = parts.length - 2; i >= 0; i--) {
    const candidate = [...parts.slice(0, i), "*", ...parts.slice(i + 1)].join(".");
    if (help[candidate]) return help[candidate];
  }
  return undefined;
}

function leaves(value: unknown, at: string, out: Leaf[], redacted: Set<string>, help: Record<string, string>) {
  if (Array.isArray(value) && value.some((v) => v !== null && typeof v === "object")) {
    value.forEach((v, i) => void leaves(v, `${at}[${i}]`, out, redacted, help));
    return;
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) out.push({ path: at, value: "{}", redacted: false, help: helpFor(help, at) });
    for (const [k, v] of entries) leaves(v, at ? `${at}.${k}` : k, out, redacted, help);
    return;
  }
  out.push({ path: at, value: JSON.stringify(value), redacted: redacted.has(at), help: helpFor(help, at) });
}

/** The effective config, redacted as config.get sends it, one key per row with the schema's help (read-only). */
export function ConfigPage(props: { model: ConsoleModel }) {
  return (
    <AdminOnly model={props.model} title="Config">
      <ConfigView model={props.model} />
    </AdminOnly>
  );
}

function ConfigView(props: { model: ConsoleModel }) {
  const config = useRpc<ConfigGet>(props.model, "config.get");
  const schema = useRpc<ConfigSchemaResult>(props.model, "config.schema");
  const [q, setQ] = useState("");
  const rows = useMemo(() => {
    if (!config.data) return [];
    const out: Leaf[] = [];
    leaves(config.data.config, "", out, new Set(config.data.redacted), schema.data?.help ?? {});
    return out;
  }, [config.data, schema.data]);
  const needle = q.trim().toLowerCase();
  const shown = needle
    ? rows.filter((r) => r.path.toLowerCase().includes(needle) || r.help?.toLowerCase().includes(needle))
    : rows;
  return (
    <section aria-labelledby="config-h">
      <h1 id="config-h">Config</h1>
      <p class="hint">
        The gateway's effective config (defaults filled in). Secrets are shown as [redacted]. Read-only here: edit the
        config file{config.data?.path ? ` (${config.data.path})` : ""} and the gateway applies it to the next run; keys
        that need a restart are named in its log.
      </p>
      <ErrorLine error={config.error ?? schema.error} />
      <div class="filters">
        <label>
          Find a key
          <input type="search" value={q} placeholder="cron, port, exec…" onInput={(e) => setQ(e.currentTarget.value)} />
        </label>
        <span class="hint">
          {shown.length} of {rows.length} keys
        </span>
      </div>
      <table class="list" data-testid="config-keys">
        <caption class="sr-only">Config keys and values</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
            <th scope="col">What it does</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={r.path} data-key={r.path}>
              <td data-label="Key" class="op-key">
                {r.path}
              </td>
              <td data-label="Value" class="op-value">
                {r.redacted ? <span class="badge">redacted</span> : r.value}
              </td>
              <td data-label="What it does" class="op-help">
                {r.help ?? ""}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
