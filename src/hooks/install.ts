import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, isAbsolute, join, resolve } from "node:path";
import { promisify } from "node:util";
import { parseFrontMatter } from "./front-matter.js";
import { describeError, type HookLogger, isPlainObject } from "./logger.js";
import type { InstallFinding, PluginHookRunner } from "./plugin-hooks.js";
import { resolvePluginEntry } from "./plugins.js";

const run = promisify(execFile);

export type InstallKind = "skill" | "plugin";
export type InstallSourceType = "dir" | "npm";

/**
 * `security.installPolicy`: the operator's allow/deny list. It is applied by this function, so it covers every
 * path that installs or updates material (CLI install, CLI update, gateway methods), unlike a plugin hook.
 */
export interface InstallPolicy {
  /** Name globs (`*` matches anything). When set, a name that matches none is refused. */
  allow?: string[];
  /** Name globs; deny beats allow. */
  deny?: string[];
  allowSources?: InstallSourceType[];
  denySources?: InstallSourceType[];
}

export interface InstallMaterialOptions {
  kind: InstallKind;
  /** A directory, or an npm spec (`name`, `name@1.2.3`, `@scope/name`, a tarball path or URL). */
  source: string;
  /** Material lands in `<destRoot>/<name>`. */
  destRoot: string;
  policy?: InstallPolicy;
  runner?: PluginHookRunner;
  mode: "install" | "update";
  logger: HookLogger;
  /** Fetches `spec` as a tarball into `dir` and returns the tarball's path. Default: `npm pack`. */
  npmPack?: (spec: string, dir: string) => Promise<string>;
  /** Where the staging dir is created; default the OS temp dir. */
  tempDir?: string;
}

export type InstallResult =
  | { ok: true; name: string; path: string; findings: InstallFinding[] }
  | { ok: false; reason: string; findings: InstallFinding[] };

/** A refusal with a reason meant for the operator (no stack trace needed). */
class InstallRefused extends Error {}

/**
 * Installs or updates a skill or plugin. The material is staged in a fresh temp dir and checked there (name,
 * install policy, `before_install` hooks); only material that passed everything is moved into place. Whatever
 * happens, the staging dir is removed, so a refused or failed install leaves nothing behind.
 */
export async function installMaterial(opts: InstallMaterialOptions): Promise<InstallResult> {
  const { kind, source, logger } = opts;
  let findings: InstallFinding[] = [];
  const staging = await mkdtemp(join(opts.tempDir ?? tmpdir(), "loopgate-install-"));
  try {
    const sourceType = await classifySource(source);
    // Refuse a forbidden source before fetching it: no download, no npm run.
    const bySource = checkSourcePolicy(opts.policy, sourceType);
    if (!bySource.allowed) throw new InstallRefused(`refused by security.installPolicy: ${bySource.reason}`);
    const material =
      sourceType === "dir"
        ? await stageDirectory(await realpath(source), staging)
        : await stageNpmPackage(source, staging, opts.npmPack ?? npmPack);
    const { declaredName, name } = await readMaterialName(kind, material, sourceType === "dir" ? source : undefined);
    assertSafeName(name);
    if (kind === "plugin") {
      const entry = await resolvePluginEntry(material);
      if ("error" in entry) throw new InstallRefused(`not a loadable plugin: ${entry.error}`);
    }

    const verdict = checkInstallPolicy(opts.policy, { names: [declaredName, name], sourceType });
    if (!verdict.allowed) throw new InstallRefused(`refused by security.installPolicy: ${verdict.reason}`);

    if (opts.runner?.has("before_install")) {
      const decision = await opts.runner.runBeforeInstall({
        kind,
        name,
        source,
        sourceType,
        stagedPath: material,
        mode: opts.mode,
      });
      findings = decision.findings;
      if (decision.block) {
        const why = decision.blockReason ? `: ${decision.blockReason}` : "";
        throw new InstallRefused(`blocked by plugin "${decision.blockedBy}" (before_install)${why}`);
      }
    }

    const path = await moveIntoPlace(material, opts.destRoot, name, opts.mode);
    logger.info(`${opts.mode === "update" ? "updated" : "installed"} ${kind} "${name}" at ${path}`, {
      kind,
      name,
      path,
    });
    return { ok: true, name, path, findings };
  } catch (err) {
    const reason = err instanceof InstallRefused ? err.message : `${kind} ${opts.mode} failed: ${describeError(err)}`;
    logger.warn(`${kind} ${opts.mode} of ${source} did not happen: ${reason}`, { kind, source });
    return { ok: false, reason, findings };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Policy

export type PolicyVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * Pure so the CLI can explain a refusal before downloading anything. `names` are all the names the material goes
 * by (e.g. `@acme/tool` and its folder name `tool`): deny matches any of them, allow must match one of them.
 */
export function checkInstallPolicy(
  policy: InstallPolicy | undefined,
  subject: { names: string[]; sourceType: InstallSourceType },
): PolicyVerdict {
  if (!policy) return { allowed: true };
  const bySource = checkSourcePolicy(policy, subject.sourceType);
  if (!bySource.allowed) return bySource;
  const names = [...new Set(subject.names)];
  for (const pattern of policy.deny ?? []) {
    const hit = names.find((n) => matchesGlob(pattern, n));
    if (hit !== undefined) return { allowed: false, reason: `"${hit}" matches deny pattern "${pattern}"` };
  }
  if (policy.allow && !policy.allow.some((pattern) => names.some((n) => matchesGlob(pattern, n)))) {
    return { allowed: false, reason: `"${names[0]}" matches no allow pattern` };
  }
  return { allowed: true };
}

/** The source half of the policy, checkable before anything is downloaded. */
export function checkSourcePolicy(policy: InstallPolicy | undefined, sourceType: InstallSourceType): PolicyVerdict {
  if (policy?.denySources?.includes(sourceType)) {
    return { allowed: false, reason: `source type "${sourceType}" is in denySources` };
  }
  if (policy?.allowSources && !policy.allowSources.includes(sourceType)) {
    return { allowed: false, reason: `source type "${sourceType}" is not in allowSources` };
  }
  return { allowed: true };
}

/** `*` matches any run of characters (slashes included, so `@acme/*` works); case-insensitive, so case can't dodge a deny. */
export function matchesGlob(pattern: string, name: string): boolean {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`, "i").test(name);
}

// ---------------------------------------------------------------------------------------------------------------
// Staging

async function classifySource(source: string): Promise<InstallSourceType> {
  if (source.trim() === "") throw new InstallRefused("no source given");
  const info = await stat(source).catch(() => undefined);
  if (info?.isDirectory()) return "dir";
  if (/^(\.{1,2}[\\/]|[\\/]|~)/.test(source) && !info) {
    throw new InstallRefused(`source directory ${source} does not exist`);
  }
  // npm would read a leading dash as one of its own options.
  if (source.startsWith("-")) throw new InstallRefused(`"${source}" is not a valid npm spec`);
  return "npm";
}

/** `sourceDir` is a real path: were it a symlink, the copy would be a link back to the user's folder. */
async function stageDirectory(sourceDir: string, staging: string): Promise<string> {
  const material = join(staging, "material");
  // Symlinks are copied as links, never followed: following one could pull files from outside the source.
  await cp(sourceDir, material, { recursive: true, verbatimSymlinks: true });
  return material;
}

async function stageNpmPackage(
  spec: string,
  staging: string,
  pack: (spec: string, dir: string) => Promise<string>,
): Promise<string> {
  const tarball = await pack(spec, staging);
  const unpacked = join(staging, "unpacked");
  await mkdir(unpacked);
  // GNU tar refuses members with `..` or absolute paths by default; --no-same-owner keeps files owned by us.
  await run("tar", ["-xzf", isAbsolute(tarball) ? tarball : join(staging, tarball), "-C", unpacked, "--no-same-owner"]);
  const top = await readdir(unpacked, { withFileTypes: true });
  // npm tarballs wrap everything in one top folder (normally `package/`).
  if (top.length === 1 && top[0].isDirectory()) return join(unpacked, top[0].name);
  return unpacked;
}

/** Default `npmPack`: the real npm client, without lifecycle scripts (packing must not run the package's code). */
export async function npmPack(spec: string, dir: string): Promise<string> {
  const { stdout } = await run("npm", ["pack", spec, "--pack-destination", dir, "--ignore-scripts", "--json"], {
    cwd: dir,
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const parsed: unknown = JSON.parse(stdout);
  const first = Array.isArray(parsed) ? parsed[0] : undefined;
  if (!isPlainObject(first) || typeof first.filename !== "string") {
    throw new Error(`npm pack ${spec} printed no tarball name`);
  }
  // npm names scoped tarballs `scope-name-1.0.0.tgz`; strip any directory it might prefix.
  return join(dir, basename(first.filename.replace(/^@/, "").replace(/\//g, "-")));
}

async function readMaterialName(
  kind: InstallKind,
  material: string,
  sourceDir: string | undefined,
): Promise<{ declaredName: string; name: string }> {
  if (kind === "skill") {
    const text = await readFile(join(material, "SKILL.md"), "utf8").catch(() => undefined);
    if (text === undefined) throw new InstallRefused("not a skill: SKILL.md is missing");
    const fm = parseFrontMatter(text);
    if (!fm.ok) throw new InstallRefused(`SKILL.md: ${fm.error}`);
    if (typeof fm.data.name !== "string" || fm.data.name.trim() === "") {
      throw new InstallRefused("SKILL.md front matter has no `name`");
    }
    return { declaredName: fm.data.name, name: fm.data.name };
  }
  const pkgText = await readFile(join(material, "package.json"), "utf8").catch(() => undefined);
  if (pkgText !== undefined) {
    let pkg: unknown;
    try {
      pkg = JSON.parse(pkgText);
    } catch (err) {
      throw new InstallRefused(`package.json is not valid JSON: ${describeError(err)}`);
    }
    if (isPlainObject(pkg) && typeof pkg.name === "string" && pkg.name !== "") {
      // A scoped package installs under its bare name; policies can still match the full `@scope/name`.
      const scoped = /^@[^/]+\/([^/]+)$/.exec(pkg.name);
      return { declaredName: pkg.name, name: scoped ? scoped[1] : pkg.name };
    }
  }
  if (!sourceDir) throw new InstallRefused("package.json has no `name`");
  const folder = basename(resolve(sourceDir));
  return { declaredName: folder, name: folder };
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The name becomes a path segment under destRoot, so anything that could climb out or hide is refused. */
function assertSafeName(name: string): void {
  if (!SAFE_NAME.test(name)) {
    throw new InstallRefused(
      `unsafe name ${JSON.stringify(name)}: use letters, digits, ".", "_" or "-", not starting with "." (max 128)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Placing

async function moveIntoPlace(material: string, destRoot: string, name: string, mode: "install" | "update") {
  await mkdir(destRoot, { recursive: true });
  const dest = join(destRoot, name);
  const exists = await stat(dest).then(
    () => true,
    () => false,
  );
  if (mode === "install" && exists)
    throw new InstallRefused(`"${name}" is already installed at ${dest}; use --update to replace it`);
  if (mode === "update" && !exists)
    throw new InstallRefused(`"${name}" is not installed at ${dest}; install it without --update`);

  const suffix = randomBytes(6).toString("hex");
  // Move the material next to its destination first: from there the swap is a same-filesystem rename, which is
  // atomic, even when the temp dir is on another filesystem.
  const incoming = join(destRoot, `.${name}.incoming-${suffix}`);
  try {
    await moveDir(material, incoming);
    if (mode === "install") {
      await rename(incoming, dest);
      return dest;
    }
    const old = join(destRoot, `.${name}.old-${suffix}`);
    await rename(dest, old);
    try {
      await rename(incoming, dest);
    } catch (err) {
      await rename(old, dest);
      throw err;
    }
    await rm(old, { recursive: true, force: true });
    return dest;
  } finally {
    // Gone already after a successful rename; on failure this removes the half-moved copy.
    await rm(incoming, { recursive: true, force: true });
  }
}

async function moveDir(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
    await cp(from, to, { recursive: true, verbatimSymlinks: true });
  }
}
