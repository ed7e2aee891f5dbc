import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { checkInstallPolicy, type InstallMaterialOptions, installMaterial } from "./install.js";
import type { HookLogger } from "./logger.js";
import { PluginHookRunner } from "./plugin-hooks.js";

const run = promisify(execFile);
const MATERIAL = resolve(import.meta.dirname, "../../test/fixtures/hooks/install");

const silent: HookLogger = { info: () => {}, warn: () => {}, error: () => {} };

let root: string;
let destRoot: string;
let tempDir: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "loopgate-install-test-"));
  destRoot = join(root, "skills");
  tempDir = join(root, "tmp");
  await mkdir(tempDir);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function options(overrides: Partial<InstallMaterialOptions>): InstallMaterialOptions {
  return {
    kind: "skill",
    source: join(MATERIAL, "skill-weather"),
    destRoot,
    mode: "install",
    logger: silent,
    tempDir,
    ...overrides,
  };
}

async function list(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

/** Packs a fixture folder the way npm does (everything under `package/`), standing in for `npm pack`. */
function fakeNpmPack(fixture: string) {
  return vi.fn(async (_spec: string, dir: string) => {
    const src = await mkdtemp(join(root, "pack-"));
    await cp(join(MATERIAL, fixture), join(src, "package"), { recursive: true });
    const tarball = join(dir, "acme-audit-log-1.0.0.tgz");
    await run("tar", ["-czf", tarball, "-C", src, "package"]);
    return tarball;
  });
}

describe("installMaterial", () => {
  it("installs a skill from a directory under the name its SKILL.md declares", async () => {
    const result = await installMaterial(options({}));

    expect(result).toEqual({ ok: true, name: "weather", path: join(destRoot, "weather"), findings: [] });
    expect((await list(join(destRoot, "weather"))).sort()).toEqual(["SKILL.md", "helper.sh"]);
    expect(await list(destRoot)).toEqual(["weather"]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("a skill denied by the install policy is refused and nothing is left behind", async () => {
    const result = await installMaterial(options({ policy: { allow: ["*"], deny: ["wea*"] } }));

    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain('"weather" matches deny pattern "wea*"');
    expect(await list(destRoot)).toEqual([]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("an allow list refuses anything it does not name", async () => {
    const result = await installMaterial(options({ policy: { allow: ["calendar", "mail-*"] } }));
    expect(!result.ok && result.reason).toContain("matches no allow pattern");
    expect(await list(destRoot)).toEqual([]);
  });

  it("a source type outside allowSources is refused", async () => {
    const result = await installMaterial(options({ policy: { allowSources: ["npm"] } }));
    expect(!result.ok && result.reason).toContain('source type "dir" is not in allowSources');
  });

  it("the policy also guards updates: a denied update leaves the installed version in place", async () => {
    await installMaterial(options({}));
    const result = await installMaterial(
      options({ source: join(MATERIAL, "skill-weather-v2"), mode: "update", policy: { deny: ["weather"] } }),
    );

    expect(result.ok).toBe(false);
    expect(await readFile(join(destRoot, "weather", "SKILL.md"), "utf8")).toContain("version 1");
    expect(await list(tempDir)).toEqual([]);
  });

  it("a before_install block refuses the install, returns every finding, and leaves nothing behind", async () => {
    const runner = new PluginHookRunner({ logger: silent });
    const stagedContents: string[][] = [];
    const lowerScanner = vi.fn(() => ({ findings: [{ message: "never runs" }] }));
    runner.on(
      "before_install",
      async (event) => {
        stagedContents.push((await readdir(event.stagedPath)).sort());
        return { findings: [{ message: "runs curl", severity: "info" as const }] };
      },
      { pluginId: "inventory", priority: 10 },
    );
    runner.on(
      "before_install",
      () => ({ block: true, blockReason: "downloads at run time", findings: [{ message: "network access" }] }),
      { pluginId: "scanner", priority: 5 },
    );
    runner.on("before_install", lowerScanner, { pluginId: "late", priority: 1 });

    const result = await installMaterial(options({ runner }));

    expect(result).toEqual({
      ok: false,
      reason: 'blocked by plugin "scanner" (before_install): downloads at run time',
      findings: [
        { message: "runs curl", severity: "info", pluginId: "inventory" },
        { message: "network access", pluginId: "scanner" },
      ],
    });
    // Hooks saw the staged copy, before anything was installed.
    expect(stagedContents).toEqual([["SKILL.md", "helper.sh"]]);
    expect(lowerScanner).not.toHaveBeenCalled();
    expect(await list(destRoot)).toEqual([]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("update replaces the installed skill with the new version, leaving no old copy around", async () => {
    await installMaterial(options({}));
    const result = await installMaterial(options({ source: join(MATERIAL, "skill-weather-v2"), mode: "update" }));

    expect(result).toMatchObject({ ok: true, name: "weather" });
    expect(await readFile(join(destRoot, "weather", "SKILL.md"), "utf8")).toContain("version 2");
    // helper.sh existed only in version 1: the update is a replacement, not a merge.
    expect(await list(join(destRoot, "weather"))).toEqual(["SKILL.md"]);
    expect(await list(destRoot)).toEqual(["weather"]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("install refuses to overwrite an installed skill, and update refuses one that is not installed", async () => {
    const update = await installMaterial(options({ mode: "update" }));
    expect(!update.ok && update.reason).toContain("is not installed");
    expect(await list(destRoot)).toEqual([]);

    await installMaterial(options({}));
    const again = await installMaterial(options({ source: join(MATERIAL, "skill-weather-v2") }));
    expect(!again.ok && again.reason).toContain("already installed");
    expect(await readFile(join(destRoot, "weather", "SKILL.md"), "utf8")).toContain("version 1");
    expect(await list(tempDir)).toEqual([]);
  });

  it("a skill whose name would escape the install directory is rejected", async () => {
    const result = await installMaterial(options({ source: join(MATERIAL, "skill-evil-name") }));

    expect(!result.ok && result.reason).toContain('unsafe name "../escaped"');
    expect(await list(root)).toEqual(["tmp"]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("installs a scoped npm plugin under its bare name; policies match the full package name", async () => {
    const npmPack = fakeNpmPack("plugin-audit");
    const pluginsRoot = join(root, "plugins");
    const result = await installMaterial(
      options({
        kind: "plugin",
        source: "@acme/audit-log@1.0.0",
        destRoot: pluginsRoot,
        npmPack,
        policy: { allow: ["@acme/*"], allowSources: ["npm"] },
      }),
    );

    expect(result).toMatchObject({ ok: true, name: "audit-log", path: join(pluginsRoot, "audit-log") });
    expect(npmPack).toHaveBeenCalledWith("@acme/audit-log@1.0.0", expect.any(String));
    expect((await list(join(pluginsRoot, "audit-log"))).sort()).toEqual(["index.js", "package.json"]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("a denied source is refused before anything is downloaded", async () => {
    const npmPack = fakeNpmPack("plugin-audit");
    const result = await installMaterial(
      options({ kind: "plugin", source: "@acme/audit-log", npmPack, policy: { denySources: ["npm"] } }),
    );
    expect(!result.ok && result.reason).toContain('source type "npm" is in denySources');
    expect(npmPack).not.toHaveBeenCalled();
  });

  it("a failing download is reported and leaves nothing behind", async () => {
    const npmPack = vi.fn(async () => {
      throw new Error("404 Not Found - @acme/nope");
    });
    const result = await installMaterial(options({ kind: "plugin", source: "@acme/nope", npmPack }));

    expect(!result.ok && result.reason).toContain("404 Not Found");
    expect(await list(destRoot)).toEqual([]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("a plugin directory without a package.json name installs under its folder name", async () => {
    const src = join(root, "my-plugin");
    await mkdir(src);
    await cp(join(MATERIAL, "plugin-audit", "index.js"), join(src, "index.js"));
    const result = await installMaterial(options({ kind: "plugin", source: src }));
    expect(result).toMatchObject({ ok: true, name: "my-plugin" });
    expect((await stat(join(destRoot, "my-plugin", "index.js"))).isFile()).toBe(true);
  });

  it("refuses a plugin folder with no loadable entry, saying what it looked for, and leaves nothing behind", async () => {
    const bare = join(root, "not-a-plugin");
    await mkdir(bare);
    await writeFile(join(bare, "README.md"), "just notes\n");
    const result = await installMaterial(options({ kind: "plugin", source: bare }));
    expect(!result.ok && result.reason).toBe(
      'not a loadable plugin: no entry file: looked for package.json "main" and index.js',
    );
    expect(await list(destRoot)).toEqual([]);
    expect(await list(tempDir)).toEqual([]);
  });

  it("refuses a plugin whose package.json main names a file that is not there", async () => {
    const broken = join(root, "broken-plugin");
    await mkdir(broken);
    await writeFile(join(broken, "package.json"), JSON.stringify({ name: "broken", main: "dist/plugin.js" }));
    const result = await installMaterial(options({ kind: "plugin", source: broken }));
    expect(!result.ok && result.reason).toBe(
      'not a loadable plugin: entry file dist/plugin.js (package.json "main") not found',
    );
    expect(await list(destRoot)).toEqual([]);
  });

  it("an install over an installed one says to use --update", async () => {
    await installMaterial(options({}));
    const again = await installMaterial(options({}));
    expect(!again.ok && again.reason).toContain("is already installed at");
    expect(!again.ok && again.reason).toContain("use --update to replace it");
  });

  it("a missing source directory is a clear error, not an npm lookup", async () => {
    const npmPack = vi.fn(async () => "never");
    const result = await installMaterial(options({ source: "./no/such/skill", npmPack }));
    expect(!result.ok && result.reason).toContain("does not exist");
    expect(npmPack).not.toHaveBeenCalled();
  });
});

describe("checkInstallPolicy", () => {
  it("deny beats allow", () => {
    expect(
      checkInstallPolicy({ allow: ["*"], deny: ["evil-*"] }, { names: ["evil-skill"], sourceType: "dir" }),
    ).toEqual({ allowed: false, reason: '"evil-skill" matches deny pattern "evil-*"' });
  });

  it("cannot be dodged by changing the name's case", () => {
    expect(checkInstallPolicy({ deny: ["crypto-*"] }, { names: ["Crypto-Miner"], sourceType: "npm" }).allowed).toBe(
      false,
    );
  });

  it("treats glob metacharacters other than * literally", () => {
    expect(checkInstallPolicy({ allow: ["a.b"] }, { names: ["axb"], sourceType: "dir" }).allowed).toBe(false);
    expect(checkInstallPolicy({ allow: ["a.b"] }, { names: ["a.b"], sourceType: "dir" }).allowed).toBe(true);
  });
});
