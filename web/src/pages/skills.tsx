import type { PluginsListResult, SkillsStatusResult, ToggleResult } from "../../../src/protocol/operator";
import type { ConsoleModel } from "../model";
import { ErrorLine, isAdmin, NEEDS_ADMIN, Switch, useAction, useRpc } from "./operator-common";

/** Skills (skills.status / skills.update) and plugins (plugins.list / plugins.setEnabled), each switchable. */
export function SkillsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  const admin = isAdmin(model);
  const skills = useRpc<SkillsStatusResult>(model, "skills.status");
  const plugins = useRpc<PluginsListResult>(model, "plugins.list");
  const action = useAction();
  const toggle = async (method: string, params: unknown, reload: () => Promise<void>) => {
    const ok = await action.run(() => model.gw.call<ToggleResult>(method, params));
    await reload();
    return ok;
  };
  return (
    <section aria-labelledby="skills-h">
      <h1 id="skills-h">Skills and plugins</h1>
      {!admin && <p class="hint">{NEEDS_ADMIN}</p>}
      <ErrorLine error={action.error} />
      <h2>Skills{skills.data ? ` of agent ${skills.data.agentId}` : ""}</h2>
      <p class="hint">A skill switched off is left out of the prompt from the next run.</p>
      <ErrorLine error={skills.error} />
      <table class="list" data-testid="skills">
        <caption class="sr-only">Skills</caption>
        <thead>
          <tr>
            <th scope="col">Skill</th>
            <th scope="col">Description</th>
            <th scope="col">Enabled</th>
          </tr>
        </thead>
        <tbody>
          {(skills.data?.skills ?? []).map((s) => (
            <tr key={s.name} data-testid={`skill-${s.name}`}>
              <td data-label="Skill">
                <div>
                  <strong>{s.name}</strong>
                  <div class="meta op-key">{s.dir}</div>
                </div>
              </td>
              <td data-label="Description">
                <div>
                  {s.description}
                  {s.missingEnv.length > 0 && (
                    <div class="error">held back: needs {s.missingEnv.join(", ")} in the gateway's environment</div>
                  )}
                </div>
              </td>
              <td data-label="Enabled">
                <Switch
                  checked={s.enabled}
                  disabled={!admin}
                  title={admin ? undefined : NEEDS_ADMIN}
                  label={`skill ${s.name}`}
                  on="on"
                  off="off"
                  onChange={(enabled) => toggle("skills.update", { skillKey: s.name, enabled }, skills.reload)}
                />
              </td>
            </tr>
          ))}
          {skills.data && skills.data.skills.length === 0 && (
            <tr>
              <td colSpan={3} class="empty">
                No skills installed (loopgate skills install &lt;dir&gt;).
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {skills.data?.warnings.map((w) => (
        <p key={w} class="hint">
          {w}
        </p>
      ))}
      <h2 class="op-section">Plugins</h2>
      <p class="hint">Plugins are loaded when the gateway starts: a switch takes effect at the next start.</p>
      <ErrorLine error={plugins.error} />
      <table class="list" data-testid="plugins">
        <caption class="sr-only">Plugins</caption>
        <thead>
          <tr>
            <th scope="col">Plugin</th>
            <th scope="col">Now</th>
            <th scope="col">At the next start</th>
          </tr>
        </thead>
        <tbody>
          {(plugins.data?.plugins ?? []).map((p) => (
            <tr key={p.id} data-testid={`plugin-${p.id}`}>
              <td data-label="Plugin">
                <div>
                  <strong>{p.id}</strong>
                  {p.error && <div class="error">{p.error}</div>}
                </div>
              </td>
              <td data-label="Now">
                <span class={`status ${p.loaded ? "ok" : "aborted"}`}>{p.loaded ? "loaded" : "not loaded"}</span>
              </td>
              <td data-label="At the next start">
                <Switch
                  checked={p.enabled}
                  disabled={!admin}
                  title={admin ? undefined : NEEDS_ADMIN}
                  label={`plugin ${p.id}`}
                  on="enabled"
                  off="disabled"
                  onChange={(enabled) => toggle("plugins.setEnabled", { pluginId: p.id, enabled }, plugins.reload)}
                />
              </td>
            </tr>
          ))}
          {plugins.data && plugins.data.plugins.length === 0 && (
            <tr>
              <td colSpan={3} class="empty">
                No plugins (loopgate plugins install &lt;dir&gt;).
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
