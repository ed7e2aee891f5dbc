/*
 * The console's operator pages in a real browser (issue 31 item 6): Debian's chromium through playwright-core,
 * against a real `loopgate gateway` child (which writes the log the Logs page tails) and the fake model server.
 * Every page fails its test on any console error; each page is checked at 390 × 844 for horizontal overflow; a
 * read-only token sees the pages it may read with every action disabled. LOOPGATE_UPDATE_SCREENSHOTS=1 writes the
 * cron and logs screenshots (desktop and phone) into docs/screenshots.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { FakeModelServer } from "../../src/testing/fake-model-server.js";
import {
  browserAvailable,
  consoleModelServer,
  FULL_TOKEN,
  type GatewayChild,
  launchBrowser,
  READ_TOKEN,
  startGatewayChild,
  watchConsole,
} from "../fixtures/console/browser.js";

const run = browserAvailable();
const SHOTS =
  process.env.LOOPGATE_UPDATE_SCREENSHOTS === "1"
    ? path.resolve(import.meta.dirname, "../../docs/screenshots")
    : fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-operator-shots-"));
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const WAIT = { timeout: 15_000 };
const YEARLY = "0 0 1 1 *";
const PAGES = ["cron", "skills", "config", "exec-policy", "logs"] as const;

describe.runIf(run)("the console's operator pages in chromium", () => {
  let model: FakeModelServer;
  let gw: GatewayChild;
  let browser: Browser;
  let desktop: BrowserContext;
  let page: Page;
  let extras: string;
  const watched: Array<{ name: string; errors: string[] }> = [];

  async function newPage(ctx: BrowserContext, name: string): Promise<Page> {
    const p = await ctx.newPage();
    watched.push({ name, ...watchConsole(p) });
    return p;
  }

  async function login(p: Page, token: string): Promise<void> {
    await p.goto(gw.httpUrl);
    await p.getByLabel("Gateway token").fill(token);
    await p.getByRole("button", { name: "Connect" }).click();
    await p.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor(WAIT);
  }

  async function open(p: Page, name: string, heading: string): Promise<void> {
    await p.evaluate((n) => {
      location.hash = `#/${n}`;
    }, name);
    await p.getByRole("heading", { level: 1, name: heading }).waitFor(WAIT);
  }

  beforeAll(async () => {
    model = await consoleModelServer();
    extras = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-operator-")));
    const skills = path.join(extras, "skills");
    fs.mkdirSync(path.join(skills, "weather"), { recursive: true });
    fs.writeFileSync(
      path.join(skills, "weather", "SKILL.md"),
      "---\nname: weather\ndescription: Tells the weather for a city\n---\nUse curl.\n",
    );
    const plugin = path.join(extras, "greeter");
    fs.mkdirSync(plugin);
    fs.writeFileSync(
      path.join(plugin, "index.js"),
      "export function register(api) { api.logger.info('greeter up'); }\n",
    );
    gw = await startGatewayChild(model, {
      cron: { jobs: [{ id: "from-config", schedule: YEARLY, message: "the config's job" }] },
      skills: { dirs: [skills] },
      plugins: { load: { paths: [plugin] } },
      tools: { exec: { allowlist: ["ls *"] } },
    });
    browser = await launchBrowser();
    desktop = await browser.newContext({ viewport: DESKTOP });
    page = await newPage(desktop, "admin");
    fs.mkdirSync(SHOTS, { recursive: true });
    await login(page, FULL_TOKEN);
  });

  afterAll(async () => {
    await browser?.close();
    await gw?.dispose();
    await model?.close();
    fs.rmSync(extras, { recursive: true, force: true });
    if (process.env.LOOPGATE_UPDATE_SCREENSHOTS !== "1") fs.rmSync(SHOTS, { recursive: true, force: true });
  });

  afterEach(() => {
    const errors = watched.flatMap((w) => w.errors.map((e) => `${w.name}: ${e}`));
    for (const w of watched) w.errors.length = 0;
    expect(errors).toEqual([]);
  });

  it("cron: add a job, run it now, read its history, switch it off", async () => {
    await open(page, "cron", "Cron");
    const jobs = page.getByTestId("cron-jobs");
    await jobs.getByTestId("cron-job-from-config").waitFor(WAIT);
    // a config job is switched in the config, not here
    expect(await page.getByRole("checkbox", { name: "(job from-config)" }).isDisabled()).toBe(true);
    await page.getByLabel("Job id").fill("daily-digest");
    await page.getByLabel("Schedule (cron)").fill("0 7 * * *");
    await page.getByLabel("Message").fill("write the daily digest");
    await page.getByRole("button", { name: "Add job" }).click();
    const row = jobs.getByTestId("cron-job-daily-digest");
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain("0 7 * * *");
    await row.getByRole("button", { name: "Run now" }).click();
    await page.getByRole("status").filter({ hasText: "Job daily-digest started" }).waitFor(WAIT);
    await row.getByRole("button", { name: "History" }).click();
    // the run ends on the fake model at once; the page re-reads the history until it shows
    await page.getByTestId("cron-history").locator(".status.ok").first().waitFor(WAIT);
    await page.screenshot({ path: path.join(SHOTS, "console-cron-desktop.png") });
    const toggle = page.getByRole("checkbox", { name: "(job daily-digest)" });
    expect(await toggle.isChecked()).toBe(true);
    await toggle.uncheck();
    // read back from the gateway: switched off, it has no next run
    await row.locator('td[data-label="Next run"]', { hasText: "—" }).waitFor(WAIT);
    expect(await toggle.isChecked()).toBe(false);
  });

  it("config: every key with its value and the schema's help; secrets are shown as redacted only", async () => {
    await open(page, "config", "Config");
    const port = page.locator('tr[data-key="gateway.port"]');
    await port.waitFor(WAIT);
    // the values (config.get) and the help (config.schema) are two answers: a row may show before its help does
    await expect.poll(() => port.locator(".op-help").textContent(), WAIT).toContain("TCP port the gateway listens on");
    // the value is the config's (the fixture sets a 1 s warn threshold)
    const warn = page.locator('tr[data-key="diagnostics.stuckSessionWarnMs"]');
    expect(await warn.locator(".op-value").textContent()).toBe("1000");
    expect(await warn.locator(".op-help").textContent()).toContain("reported stalled");
    const key = page.locator('tr[data-key="models.providers.fake.apiKey"]');
    expect(await key.textContent()).toContain("redacted");
    const body = (await page.locator("main").textContent()) ?? "";
    expect(body).not.toContain("sk-test");
    expect(body).not.toContain(FULL_TOKEN);
    // help reaches record entries too (plugins.entries.<id>.enabled has "*" in the schema)
    await page.getByLabel("Find a key").fill("cron.runLog");
    expect(await page.locator("tr[data-key]").count()).toBe(1);
    expect(await page.locator('tr[data-key="cron.runLog.keepLines"] .op-help').textContent()).toContain("kept");
  });

  it("skills and plugins: listed with their state, and switched", async () => {
    await open(page, "skills", "Skills and plugins");
    const skill = page.getByRole("checkbox", { name: "(skill weather)" });
    await skill.waitFor(WAIT);
    expect(await skill.isChecked()).toBe(true);
    await skill.uncheck();
    await page.getByTestId("skill-weather").getByText("off").waitFor(WAIT);
    const plugin = page.getByTestId("plugin-greeter");
    expect(await plugin.textContent()).toContain("loaded");
    await page.getByRole("checkbox", { name: "(plugin greeter)" }).uncheck();
    await plugin.getByText("disabled").waitFor(WAIT);
    // switched back, so the other tests see the gateway as it was
    await page.getByRole("checkbox", { name: "(plugin greeter)" }).check();
    await page.getByRole("checkbox", { name: "(skill weather)" }).check();
    await page.getByTestId("skill-weather").getByText("on").waitFor(WAIT);
  });

  it("exec policy: the config's side is shown, allowlist patterns are saved and read back", async () => {
    await open(page, "exec-policy", "Exec policy");
    const config = page.getByTestId("exec-config");
    await config.waitFor(WAIT);
    expect(await config.textContent()).toContain("ls *");
    await page.getByLabel("Allowlist patterns").fill("git status\n\nnpm test *\n");
    await page.getByRole("button", { name: "Save allowlist" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor(WAIT);
    const file = JSON.parse(fs.readFileSync(path.join(gw.stateDir, "exec-approvals.json"), "utf8"));
    expect(file.allowlist).toEqual(["git status", "npm test *"]);
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Exec policy" }).waitFor(WAIT);
    await page.getByTestId("exec-config").waitFor(WAIT);
    expect(await page.getByLabel("Allowlist patterns").inputValue()).toBe("git status\nnpm test *");
  });

  it("logs: the gateway's log, live, and the level filter", async () => {
    await open(page, "logs", "Logs");
    const lines = page.getByTestId("log-lines");
    await lines.getByText("connect").first().waitFor(WAIT);
    // a request for another host name is refused and logged as a warning while the page watches
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = http.get(
        { host: "127.0.0.1", port: gw.port, path: "/", headers: { host: "elsewhere.example" } },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on("error", reject);
    });
    expect(status).toBe(421);
    await lines.getByText("request refused").first().waitFor(WAIT);
    await lines.locator("li.warn").first().waitFor(WAIT);
    expect(await lines.locator("li.info").count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(SHOTS, "console-logs-desktop.png") });
    await page.getByLabel("Level").selectOption("warn");
    await lines.locator("li.warn").first().waitFor(WAIT);
    expect(await lines.locator("li.info").count()).toBe(0);
    expect(await lines.textContent()).not.toContain(FULL_TOKEN);
    await page.getByLabel("Level").selectOption("info");
  });

  it("at 390 × 844 no operator page is wider than the screen", async () => {
    const phone = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const p = await newPage(phone, "phone");
    await login(p, FULL_TOKEN);
    const headings = {
      cron: "Cron",
      skills: "Skills and plugins",
      config: "Config",
      "exec-policy": "Exec policy",
      logs: "Logs",
    };
    for (const name of PAGES) {
      await open(p, name, headings[name]);
      await p.waitForLoadState("networkidle");
      if (name === "cron") {
        await p.getByTestId("cron-job-daily-digest").waitFor(WAIT);
        await p.getByTestId("cron-job-daily-digest").getByRole("button", { name: "History" }).click();
        await p.getByTestId("cron-history").locator(".status.ok").first().waitFor(WAIT);
      }
      if (name === "logs") await p.getByTestId("log-lines").locator("li.info").first().waitFor(WAIT);
      if (name === "config") await p.locator('tr[data-key="gateway.port"]').waitFor(WAIT);
      const width = await p.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        client: document.documentElement.clientWidth,
      }));
      expect(width.scroll, `#/${name} overflows`).toBeLessThanOrEqual(width.client);
      if (name === "cron" || name === "logs")
        await p.screenshot({ path: path.join(SHOTS, `console-${name}-phone.png`) });
    }
    await phone.close();
  });

  it("a read-only token sees cron, skills and plugins with every action disabled, and not the admin pages", async () => {
    const ctx = await browser.newContext({ viewport: DESKTOP });
    const p = await newPage(ctx, "read-only");
    await login(p, READ_TOKEN);
    const nav = p.getByRole("navigation", { name: "Console pages" });
    await nav.getByRole("link", { name: "Cron" }).waitFor(WAIT);
    for (const hidden of ["Config", "Exec policy", "Logs"]) {
      expect(await nav.getByRole("link", { name: hidden }).count(), hidden).toBe(0);
    }
    await open(p, "cron", "Cron");
    const row = p.getByTestId("cron-job-daily-digest");
    await row.waitFor(WAIT);
    expect(await row.getByRole("button", { name: "Run now" }).isDisabled()).toBe(true);
    expect(await row.getByRole("button", { name: "Remove" }).isDisabled()).toBe(true);
    expect(await p.getByRole("checkbox", { name: "(job daily-digest)" }).isDisabled()).toBe(true);
    expect(await p.getByRole("button", { name: "Add job" }).isDisabled()).toBe(true);
    // history is a read: it opens
    await row.getByRole("button", { name: "History" }).click();
    await p.getByTestId("cron-history").locator(".status.ok").first().waitFor(WAIT);
    await open(p, "skills", "Skills and plugins");
    await p.getByRole("checkbox", { name: "(skill weather)" }).waitFor(WAIT);
    expect(await p.getByRole("checkbox", { name: "(skill weather)" }).isDisabled()).toBe(true);
    expect(await p.getByRole("checkbox", { name: "(plugin greeter)" }).isDisabled()).toBe(true);
    // an admin page reached by its address says what it needs instead of failing
    for (const name of ["config", "exec-policy", "logs"] as const) {
      await p.evaluate((n) => {
        location.hash = `#/${n}`;
      }, name);
      await p.getByTestId("admin-only").waitFor(WAIT);
      expect(await p.getByTestId("admin-only").textContent()).toContain("operator.admin");
    }
    await ctx.close();
  });
});
