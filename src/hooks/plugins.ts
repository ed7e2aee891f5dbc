import { readFile, stat } from "node:fs/promises";
import { basename, extname, isAbsolute, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Tool } from "../tools/types.js";
import { describeError, type HookLogger, isPlainObject, prefixLogger } from "./logger.js";
import {
  isPluginHookName,
  type PluginHookHandler,
  type PluginHookName,
  type PluginHookOptions,
  type PluginHookRunner,
} from "./plugin-hooks.js";

/** What a plugin's `register(api)` receives. Everything it registers is attributed to `id`. */
export interface PluginApi {
  id: string;
  /** Unknown hook names are warned about (naming the plugin), not thrown, so one typo does not sink the plugin. */
  on<K extends PluginHookName>(
    hookName: K,
    handler: PluginHookHandler<K>,
    opts?: Omit<PluginHookOptions, "pluginId">,
  ): void;
  registerTool(tool: Tool): void;
  /** Lines are prefixed with `[plugin:<id>]`. */
  logger: HookLogger;
  /** `plugins.entries.<id>.config`, when the operator set one. */
  config?: Record<string, unknown>;
}

export interface PluginEntryConfig {
  enabled?: boolean;
  config?: Record<string, unknown>;
}

export interface PluginsConfig {
  /** Module files (ESM) or directories (package.json `main`, else `index.js`). */
  paths: string[];
  entries?: Record<string, PluginEntryConfig>;
  /** Base for relative paths; default the working directory. */
  baseDir?: string;
}

export interface PluginLoaderDeps {
  runner: PluginHookRunner;
  /** throws to refuse the tool (a bad or taken name); may return a function that removes it again */
  registerTool: (tool: Tool, pluginId: string) => undefined | (() => void);
  logger: HookLogger;
}

export interface PluginLoadReport {
  loaded: string[];
  disabled: string[];
  failures: Array<{ path: string; id?: string; error: string }>;
}

/**
 * Loads plugins one by one. Each is isolated: a plugin that fails to import or whose `register` throws is logged
 * (naming its path) and leaves nothing registered; the others still load. Disabled plugins are not imported when
 * their id is known from the path, so their top-level code never runs.
 */
export async function loadPlugins(config: PluginsConfig, deps: PluginLoaderDeps): Promise<PluginLoadReport> {
  const report: PluginLoadReport = { loaded: [], disabled: [], failures: [] };
  const entries = config.entries ?? {};
  const isDisabled = (id: string) => entries[id]?.enabled === false;
  const seen = new Set<string>();

  for (const rawPath of config.paths) {
    const path = isAbsolute(rawPath) ? rawPath : resolve(config.baseDir ?? process.cwd(), rawPath);
    const fail = (error: string, id?: string) => {
      deps.logger.error(`plugin ${path} failed to load: ${error}`, { path, plugin: id });
      report.failures.push({ path, id, error });
    };

    const resolved = await resolveEntryFile(path);
    if ("error" in resolved) {
      fail(resolved.error);
      continue;
    }
    if (isDisabled(resolved.defaultId)) {
      report.disabled.push(resolved.defaultId);
      continue;
    }

    let mod: Record<string, unknown>;
    try {
      mod = await import(pathToFileURL(resolved.file).href);
    } catch (err) {
      fail(`import failed: ${describeError(err)}`, resolved.defaultId);
      continue;
    }
    const shape = pluginShape(mod);
    if (!shape) {
      fail("module exports no register(api) function (named `register` or a default export with `register`)");
      continue;
    }
    const id = shape.id ?? resolved.defaultId;
    if (isDisabled(id)) {
      report.disabled.push(id);
      continue;
    }
    if (seen.has(id)) {
      fail(`another plugin already uses the id "${id}"`, id);
      continue;
    }

    const staged = stagePluginApi(id, entries[id]?.config, deps);
    try {
      await shape.register(staged.api);
    } catch (err) {
      staged.rollback();
      fail(`register() threw: ${describeError(err)}`, id);
      continue;
    }
    try {
      staged.commit();
    } catch (err) {
      // the host refused something it registered (e.g. a tool name providers reject): nothing of it stays
      staged.rollback();
      fail(describeError(err), id);
      continue;
    }
    seen.add(id);
    report.loaded.push(id);
    deps.logger.info(`plugin "${id}" loaded from ${path}`, { plugin: id, path });
  }
  return report;
}

/**
 * Registrations made during `register()` are held back and applied only once it returns, so a plugin that throws
 * halfway leaves no hooks or tools behind. Calls made later (after an await the plugin did not return) go straight
 * through.
 */
function stagePluginApi(id: string, config: Record<string, unknown> | undefined, deps: PluginLoaderDeps) {
  const logger = prefixLogger(deps.logger, `[plugin:${id}]`);
  const pendingHooks: Array<() => () => void> = [];
  const pendingTools: Tool[] = [];
  const unregister: Array<() => void> = [];
  let committed = false;

  const api: PluginApi = {
    id,
    logger,
    config,
    on(hookName, handler, opts) {
      if (!isPluginHookName(hookName)) {
        deps.logger.warn(`plugin "${id}" registered unknown hook "${String(hookName)}"; ignored`, {
          plugin: id,
          hook: hookName,
        });
        return;
      }
      if (typeof handler !== "function") {
        deps.logger.warn(`plugin "${id}" registered hook ${hookName} without a handler function; ignored`, {
          plugin: id,
          hook: hookName,
        });
        return;
      }
      const add = () => deps.runner.on(hookName, handler, { ...opts, pluginId: id });
      if (committed) unregister.push(add());
      else pendingHooks.push(add);
    },
    registerTool(tool) {
      if (!committed) pendingTools.push(tool);
      else {
        const remove = deps.registerTool(tool, id);
        if (remove) unregister.push(remove);
      }
    },
  };

  return {
    api,
    commit() {
      // Tools first: the host may refuse one (e.g. a duplicate name), and then no hook has been added yet.
      for (const tool of pendingTools) {
        const remove = deps.registerTool(tool, id);
        if (remove) unregister.push(remove);
      }
      for (const add of pendingHooks) unregister.push(add());
      committed = true;
    },
    rollback() {
      for (const off of unregister) off();
      unregister.length = 0;
    },
  };
}

interface PluginShape {
  id?: string;
  register: (api: PluginApi) => unknown;
}

function pluginShape(mod: Record<string, unknown>): PluginShape | undefined {
  const def = mod.default;
  const named = typeof mod.id === "string" ? mod.id : undefined;
  if (typeof mod.register === "function") {
    return { id: named, register: mod.register as PluginShape["register"] };
  }
  if (isPlainObject(def) && typeof def.register === "function") {
    const id = typeof def.id === "string" ? def.id : named;
    return { id, register: def.register.bind(def) as PluginShape["register"] };
  }
  return undefined;
}

async function resolveEntryFile(path: string): Promise<{ file: string; defaultId: string } | { error: string }> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch {
    return { error: "path does not exist" };
  }
  if (!info.isDirectory()) return { file: path, defaultId: basename(path, extname(path)) };
  const entry = await resolvePluginEntry(path);
  return "error" in entry ? entry : { file: entry.file, defaultId: basename(path) };
}

/**
 * The module a plugin folder loads: package.json `main`, else `index.js`. Shared with `plugins install`, which
 * refuses a folder this cannot resolve instead of installing something that would only fail at the next start.
 */
export async function resolvePluginEntry(dir: string): Promise<{ file: string } | { error: string }> {
  let main: string | undefined;
  try {
    const pkg: unknown = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
    if (isPlainObject(pkg) && typeof pkg.main === "string" && pkg.main !== "") main = pkg.main;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
      return { error: `package.json is unreadable: ${describeError(err)}` };
    }
  }
  const file = resolve(dir, main ?? "index.js");
  // `main` is the plugin's own claim; it must not point the loader at code outside the plugin's folder.
  const inside = relative(dir, file);
  if (inside.startsWith("..") || isAbsolute(inside)) {
    return { error: `package.json main "${main}" points outside the plugin folder` };
  }
  const isFile = await stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
  if (isFile) return { file };
  return {
    error: main
      ? `entry file ${main} (package.json "main") not found`
      : `no entry file: looked for package.json "main" and index.js`,
  };
}
