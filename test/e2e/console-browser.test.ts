/*
 * The web console in a real browser (issue 15): Debian's chromium through playwright-core, against a real
 * `loopgate gateway` child and the fake model server. One browser for the file; the main page is reused from test to
 * test (they run in order: the later ones look at sessions the earlier ones made). Every page fails its test on any
 * console error. The screenshots in docs/screenshots/ are written here.
 */
import fs from "node:fs";
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
  MARKDOWN_REPLY,
  READ_TOKEN,
  runCliAgent,
  startGatewayChild,
  startProxy,
  watchConsole,
} from "../fixtures/console/browser.js";

const run = browserAvailable();
/** LOOPGATE_UPDATE_SCREENSHOTS=1 writes them into docs/screenshots (the README shows two); else a temp dir */
const SHOTS =
  process.env.LOOPGATE_UPDATE_SCREENSHOTS === "1"
    ? path.resolve(import.meta.dirname, "../../docs/screenshots")
    : fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-console-shots-"));
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
/** every wait is bounded: a broken console fails a test instead of hanging the suite */
const WAIT = { timeout: 15_000 };

describe.runIf(run)("the web console in chromium", () => {
  let model: FakeModelServer;
  let gw: GatewayChild;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
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

  async function openSession(key: string): Promise<void> {
    await page.evaluate((k) => {
      location.hash = `#/session/${encodeURIComponent(k)}`;
    }, key);
    await page
      .getByRole("heading", { level: 1 })
      .filter({ hasText: key.replace(/^agent:main:/, "") })
      .waitFor(WAIT);
  }

  async function send(text: string, mode = "followup"): Promise<void> {
    await page.getByLabel("Queue mode").selectOption(mode);
    await page.getByLabel("Message").fill(text);
    await page.getByRole("button", { name: "Send" }).click();
  }

  beforeAll(async () => {
    model = await consoleModelServer();
    gw = await startGatewayChild(model);
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: DESKTOP });
    page = await newPage(context, "main");
    fs.mkdirSync(SHOTS, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await gw?.dispose();
    await model?.close();
    if (process.env.LOOPGATE_UPDATE_SCREENSHOTS === "1") console.log(`console screenshots: ${SHOTS}`);
    else fs.rmSync(SHOTS, { recursive: true, force: true });
  });

  afterEach(() => {
    const errors = watched.flatMap((w) => w.errors.map((e) => `${w.name}: ${e}`));
    for (const w of watched) w.errors.length = 0;
    expect(errors).toEqual([]);
  });

  it("refuses a wrong token and says so", async () => {
    const ctx = await browser.newContext({ viewport: DESKTOP });
    const p = await newPage(ctx, "wrong-token");
    await p.goto(gw.httpUrl);
    await p.getByLabel("Gateway token").fill("not-the-token");
    await p.getByRole("button", { name: "Connect" }).click();
    const alert = p.getByRole("alert");
    await alert.waitFor(WAIT);
    expect(await alert.textContent()).toContain("The gateway refused this token");
    expect(await alert.textContent()).toContain("invalid token");
    // the form is back for another try, and nothing was kept
    expect(await p.getByLabel("Gateway token").isVisible()).toBe(true);
    expect(await p.evaluate(() => sessionStorage.getItem("loopgate.console.token"))).toBeNull();
    await ctx.close();
  });

  it("logs in with the token once: a reload keeps the session's token and signs the connect with the device key", async () => {
    await login(page, FULL_TOKEN);
    const fcp = await page.evaluate(
      () => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? Number.NaN,
    );
    console.log(`console first-contentful-paint: ${fcp.toFixed(0)} ms`);
    expect(Number.isFinite(fcp)).toBe(true);
    await page.reload();
    await page.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor(WAIT);
    expect(await page.getByLabel("Gateway token").count()).toBe(0);
    // the device key is in IndexedDB, made with WebCrypto Ed25519, and its private half cannot be exported
    const device = await page.evaluate(async () => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const r = indexedDB.open("loopgate-console");
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      const pair = await new Promise<CryptoKeyPair>((resolve, reject) => {
        const r = db.transaction("device").objectStore("device").get("ed25519");
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      return { alg: pair.privateKey.algorithm.name, extractable: pair.privateKey.extractable };
    });
    expect(device).toEqual({ alg: "Ed25519", extractable: false });
  });

  it("shows a session appear when a CLI run starts", async () => {
    await page.evaluate(() => {
      location.hash = "#/sessions";
    });
    await page.getByRole("heading", { name: "Sessions" }).waitFor(WAIT);
    const row = page.locator('tr[data-session="agent:main:from-cli"]');
    expect(await row.count()).toBe(0);
    const cli = runCliAgent(gw, ["-s", "from-cli", "-m", "hello from the cli"]);
    await row.waitFor(WAIT);
    const result = await cli.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Echo: hello from the cli");
    // the list filters and searches
    await page.getByLabel("Search").fill("from-cli");
    expect(await page.locator("tr[data-session]").count()).toBe(1);
    await page.getByLabel("Search").fill("");
  });

  it("streams the reply's text as it comes, then shows it in the transcript", async () => {
    await openSession("agent:main:stream-demo");
    await send("slow please");
    await page.getByTestId("receipt").filter({ hasText: "started a run" }).waitFor(WAIT);
    // seen mid-stream: some chunks shown while the run still runs and the last chunk has not arrived
    await page.waitForFunction(() => {
      const run = document.querySelector('[data-testid="live-run"]');
      const text = run?.querySelector('[data-testid="live-text"]')?.textContent ?? "";
      return run?.classList.contains("running") && text.includes("chunk-2") && !text.includes("chunk-10");
    }, WAIT);
    await page.getByTestId("assistant-message").filter({ hasText: "chunk-10" }).waitFor(WAIT);
    expect(await page.getByTestId("user-message").filter({ hasText: "slow please" }).count()).toBe(1);
    // /new starts a new transcript generation: the page follows it, the old rows stay in the store
    await page.getByRole("button", { name: "/new" }).click();
    await page.locator(".meta").filter({ hasText: "generation 2" }).waitFor(WAIT);
    expect(await page.getByTestId("user-message").count()).toBe(0);
    await page.getByLabel("Generation").selectOption("1");
    await page.getByTestId("user-message").filter({ hasText: "slow please" }).waitFor(WAIT);
    await page.getByLabel("Generation").selectOption("2");
    await expect.poll(() => page.getByTestId("user-message").count(), WAIT).toBe(0);
  });

  it("keeps a keyboard focus order through the composer, with labelled controls", async () => {
    await page.getByLabel("Message").focus();
    await page.keyboard.press("Tab");
    expect(
      await page.evaluate(
        () =>
          document.activeElement?.getAttribute("aria-label") ?? document.activeElement?.closest("label")?.textContent,
      ),
    ).toContain("Queue mode");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Send");
    // every form control has an accessible name
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll("input, select, textarea, button")]
        .filter(
          (el) =>
            !(el as HTMLElement).textContent?.trim() &&
            !(el as HTMLInputElement).labels?.length &&
            !el.getAttribute("aria-label"),
        )
        .map((el) => el.outerHTML),
    );
    expect(unnamed).toEqual([]);
  });

  it("sends messages in collect mode while a run is busy and shows the collected turn", async () => {
    await openSession("agent:main:collect-demo");
    await send("slow first");
    await page.locator('[data-testid="live-run"].running').waitFor(WAIT);
    await send("alpha", "collect");
    await page.getByTestId("receipt").filter({ hasText: "queued (collect)" }).waitFor(WAIT);
    await send("beta", "collect");
    const receipt = page.getByTestId("receipt");
    await receipt
      .filter({ hasText: /collect.*· run/ })
      .filter({ hasNotText: "position 1" })
      .waitFor(WAIT);
    const turn = page.getByTestId("collected-turn");
    await turn.waitFor(WAIT);
    expect(await turn.textContent()).toContain("Collected turn · 2 messages");
    expect(await turn.textContent()).toMatch(/alpha[\s\S]*beta/);
    await page.getByTestId("assistant-message").filter({ hasText: "Queued #2 beta" }).waitFor(WAIT);
    await page.screenshot({ path: path.join(SHOTS, "console-session-desktop.png") });
  });

  it("shows the model's reasoning collapsed, when the message asks to stream it", async () => {
    await openSession("agent:main:think-demo");
    await page.getByLabel("Stream reasoning").check();
    await send("think first");
    const answer = page.getByTestId("assistant-message").filter({ hasText: "Decided." });
    await answer.waitFor(WAIT);
    const reasoning = answer.locator("details.thinking");
    expect(await reasoning.getAttribute("open")).toBeNull();
    expect(await reasoning.locator("pre").isVisible()).toBe(false);
    await reasoning.locator("summary").click();
    expect(await reasoning.locator("pre").textContent()).toBe("Weighing the options.");
    await page.getByLabel("Stream reasoning").uncheck();
  });

  it("stops a running run", async () => {
    await openSession("agent:main:stop-demo");
    await send("stall here");
    // the model has answered nothing yet (it stalls): the run is running all the same
    await page.locator('[data-testid="live-run"].running').waitFor(WAIT);
    const stop = page.getByRole("button", { name: "Stop" });
    await expect.poll(() => stop.isEnabled(), WAIT).toBe(true);
    await stop.click();
    await page.getByTestId("receipt").filter({ hasText: "stopped 1 run(s)" }).waitFor(WAIT);
    // the stopped run stays in the transcript, after a reload too (issue 31 item 1)
    const stopped = page.getByTestId("failed-run").filter({ hasText: "Stopped" });
    await stopped.waitFor(WAIT);
    await page.reload();
    await stopped.waitFor(WAIT);
    expect(await page.getByTestId("live-run").count()).toBe(0);
  });

  it("keeps a failed run in the transcript after a reload, with its error and retries", async () => {
    await openSession("agent:main:broken-demo");
    await send("broken please");
    // live: the retry, then the error
    const live = page.locator('[data-testid="live-run"]');
    await page.getByTestId("failed-run").filter({ hasText: "Failed" }).waitFor(WAIT);
    expect(await live.count()).toBe(0);
    const failure = page.getByTestId("run-failure");
    expect(await failure.textContent()).toMatch(/Failed · .*upstream is down/);
    await page.reload();
    await page.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor(WAIT);
    await page.getByTestId("user-message").filter({ hasText: "broken please" }).waitFor(WAIT);
    expect(await page.getByTestId("run-failure").textContent()).toMatch(/Failed · .*upstream is down/);
    // the run's details open in place, under the failed answer
    await page.getByRole("button", { name: "Run details" }).click();
    const detail = page.getByTestId("failed-run").getByTestId("run-detail");
    await detail
      .getByTestId("retries")
      .filter({ hasText: /^[1-9]$/ })
      .waitFor(WAIT);
    expect(await detail.textContent()).toContain("upstream is down");
  });

  it("shows every session's status on the sessions page, on a desktop and on a phone", async () => {
    await openSession("agent:main:busy-demo");
    await send("long answer");
    await page.locator('[data-testid="live-run"].running').waitFor(WAIT);
    await page.evaluate(() => {
      location.hash = "#/sessions";
    });
    await page.locator('tr[data-session="agent:main:busy-demo"] .status.running').waitFor(WAIT);
    await page.locator('tr[data-session="agent:main:stop-demo"] .status.idle').waitFor(WAIT);
    await page.screenshot({ path: path.join(SHOTS, "console-sessions-desktop.png") });
    const phone = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const p = await newPage(phone, "phone");
    await login(p, FULL_TOKEN);
    await p.locator('tr[data-session="agent:main:busy-demo"] .status.running').waitFor(WAIT);
    // no sideways scrolling on a phone
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await p.screenshot({ path: path.join(SHOTS, "console-sessions-phone.png") });
    await p.locator('tr[data-session="agent:main:collect-demo"] a').click();
    await p.getByTestId("collected-turn").waitFor(WAIT);
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await p.screenshot({ path: path.join(SHOTS, "console-session-phone.png") });
    await phone.close();
  });

  it("lets a read-scope token see everything but not send or stop", async () => {
    const ctx = await browser.newContext({ viewport: DESKTOP });
    const p = await newPage(ctx, "read-only");
    await login(p, READ_TOKEN);
    await p.getByTestId("read-only").waitFor(WAIT);
    await p.locator('tr[data-session="agent:main:collect-demo"] a').click();
    await p.getByTestId("collected-turn").waitFor(WAIT);
    await p.getByTestId("read-only-note").waitFor(WAIT);
    expect(await p.getByLabel("Message").isDisabled()).toBe(true);
    expect(await p.getByRole("button", { name: "Send" }).isDisabled()).toBe(true);
    expect(await p.getByRole("button", { name: "Stop" }).isDisabled()).toBe(true);
    // approvals need operator.approvals: the page is not offered
    expect(await p.getByRole("link", { name: /Approvals/ }).count()).toBe(0);
    await ctx.close();
  });

  it("renders a markdown reply (code with a copy button, list, table, safe links) and runs none of the model's HTML", async () => {
    const res = await page.request.get(gw.httpUrl);
    expect(res.headers()["content-security-policy"]).toContain("script-src 'self'");
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gw.httpUrl });
    await openSession("agent:main:chat-demo");
    // any CSP violation the page reports, and the handlers' marker
    await page.evaluate(() => {
      const w = window as unknown as { __violations: string[] };
      w.__violations = [];
      document.addEventListener("securitypolicyviolation", (e) => w.__violations.push(e.violatedDirective));
    });
    await send("markdown please");
    const reply = page.getByTestId("assistant-message").filter({ hasText: "Write the fix" });
    await reply.waitFor(WAIT);
    const md = reply.locator(".md");
    expect(await md.locator("h2").textContent()).toBe("Plan");
    expect(await md.locator("ol > li").count()).toBe(2);
    expect(await md.locator("ol strong").textContent()).toBe("Read");
    expect(await md.locator("table td").allTextContents()).toEqual(["build", "ci"]);
    expect(await md.locator("pre code").textContent()).toBe('const answer = "forty-two";\n');
    // nothing of the hostile part is in the page as markup (it shows as text), and nothing of it ran
    expect(await md.locator("img, script, iframe, style, [onclick], [onerror], [onmouseover]").count()).toBe(0);
    expect(await md.textContent()).toContain('<img src="x" onerror="window.__xss=2">');
    const links = await md
      .locator("a")
      .evaluateAll((as) =>
        as.map((a) => ({ href: a.getAttribute("href"), target: a.getAttribute("target"), rel: a.getAttribute("rel") })),
      );
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) {
      if (l.href !== null) expect(l.href).toMatch(/^https:\/\/example\.com\//);
      expect(l.target).toBe("_blank");
      expect(l.rel).toBe("noopener noreferrer");
    }
    expect(links.filter((l) => l.href === "https://example.com/docs")).toHaveLength(1);
    await md.getByText("hover me").hover();
    await md.getByText("click me").click();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);
    expect(await page.locator("body").isVisible()).toBe(true);
    expect(MARKDOWN_REPLY).toContain("onerror");
    // the copy button puts the code (not the button's label) on the clipboard
    await md.getByRole("button", { name: "Copy code" }).click();
    await md.getByRole("button", { name: "Copy code" }).filter({ hasText: "Copied" }).waitFor(WAIT);
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('const answer = "forty-two";\n');
  });

  it("answers a pending approval inline in the session, with a countdown, the tool saying it waits", async () => {
    await openSession("agent:main:chat-demo");
    await send("please clean up");
    const live = page.getByTestId("live-run");
    const card = live.getByTestId("approval");
    await card.filter({ hasText: "rm -rf build" }).waitFor(WAIT);
    expect(await card.getAttribute("data-kind")).toBe("exec");
    expect(await card.getByTestId("countdown").textContent()).toMatch(/^\d+ (s|min \d\d s) left$/);
    const first = await card.getByTestId("countdown").textContent();
    await expect.poll(() => card.getByTestId("countdown").textContent(), WAIT).not.toBe(first);
    const pill = live.getByTestId("tool").filter({ hasText: "exec" }).locator("summary .status");
    expect(await pill.textContent()).toBe("waiting for approval");
    // the view followed the run: the card is on screen
    expect(await card.isVisible()).toBe(true);
    expect(await page.evaluate(() => innerHeight + scrollY >= document.documentElement.scrollHeight - 48)).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, "console-chat-desktop.png") });
    const phone = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const p = await newPage(phone, "phone-approval");
    await login(p, FULL_TOKEN);
    await p.evaluate(() => {
      location.hash = "#/session/agent%3Amain%3Achat-demo";
    });
    await p.getByTestId("live-run").getByTestId("approval").waitFor(WAIT);
    expect(await p.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(
      true,
    );
    await p.screenshot({ path: path.join(SHOTS, "console-chat-phone.png") });
    await phone.close();
    await card.getByRole("button", { name: "Allow once" }).click();
    await page.getByTestId("assistant-message").filter({ hasText: "The command was answered." }).waitFor(WAIT);
    expect(await page.getByTestId("approval").count()).toBe(0);
  });

  it("opens a session at its newest message and follows a live run unless the reader scrolled up", async () => {
    await openSession("agent:main:chat-demo");
    // the transcript is taller than the window (the markdown reply, the tool call); it opens at the bottom
    await page.evaluate(() => {
      location.hash = "#/sessions";
    });
    await openSession("agent:main:chat-demo");
    await page.getByTestId("assistant-message").filter({ hasText: "The command was answered." }).waitFor(WAIT);
    const atBottom = () => page.evaluate(() => innerHeight + scrollY >= document.documentElement.scrollHeight - 48);
    const scrollable = await page.evaluate(() => document.documentElement.scrollHeight > innerHeight);
    expect(scrollable).toBe(true);
    await expect.poll(atBottom, WAIT).toBe(true);
    await send("long story please");
    const live = page.getByTestId("live-text");
    await live.filter({ hasText: "part-3 " }).waitFor(WAIT);
    expect(await atBottom()).toBe(true);
    // the reader scrolls up: the view stays, a button says new messages came
    await page.mouse.wheel(0, -5000);
    await expect.poll(() => page.evaluate(() => scrollY), WAIT).toBe(0);
    const pill = page.getByTestId("new-messages");
    await pill.waitFor(WAIT);
    expect(await page.evaluate(() => scrollY)).toBe(0);
    await pill.click();
    expect(await atBottom()).toBe(true);
    expect(await pill.count()).toBe(0);
    await page.getByTestId("assistant-message").filter({ hasText: "part-40" }).waitFor(WAIT);
    await expect.poll(atBottom, WAIT).toBe(true);
  });

  it("starts a new session with an agent and a label, switches its model, thinking and verbose, and sends on Enter", async () => {
    await page.evaluate(() => {
      location.hash = "#/sessions";
    });
    // the model column names the configured default, not "default"
    const row = page.locator('tr[data-session="agent:main:from-cli"]');
    await row.waitFor(WAIT);
    expect(await row.locator('td[data-label="Model"]').textContent()).toBe("fake/m");
    await page.getByRole("button", { name: "New session" }).click();
    const form = page.getByRole("form", { name: "New session" });
    expect(await form.getByLabel("Agent").locator("option").allTextContents()).toEqual(["main"]);
    await form.getByLabel("Label").fill("Planning");
    await form.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { level: 1, name: "Planning" }).waitFor(WAIT);
    const switches = page.getByRole("group", { name: "Session settings" });
    const status = page.getByTestId("switch-status");
    expect(await switches.getByLabel("Model").locator("option").first().textContent()).toBe("default (fake/m)");
    await switches.getByLabel("Model").selectOption("fake/m");
    await status.filter({ hasText: "model saved" }).waitFor(WAIT);
    await switches.getByLabel("Thinking").selectOption("low");
    await status.filter({ hasText: "thinking saved" }).waitFor(WAIT);
    await switches.getByLabel("Verbose").selectOption("on");
    await status.filter({ hasText: "verbose saved" }).waitFor(WAIT);
    // stored: a fresh read of the session has them
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Planning" }).waitFor(WAIT);
    await expect.poll(() => switches.getByLabel("Thinking").inputValue(), WAIT).toBe("low");
    expect(await switches.getByLabel("Verbose").inputValue()).toBe("on");
    expect(await switches.getByLabel("Model").inputValue()).toBe("fake/m");
    // Enter sends, Shift+Enter is a new line; the box says so
    await page.getByText("Enter sends · Shift+Enter adds a new line").waitFor(WAIT);
    const box = page.getByLabel("Message");
    await box.click();
    await box.pressSequentially("first line");
    await page.keyboard.press("Shift+Enter");
    await box.pressSequentially("second line");
    expect(await box.inputValue()).toBe("first line\nsecond line");
    expect(await page.getByTestId("user-message").count()).toBe(0);
    await page.keyboard.press("Enter");
    await page.getByTestId("assistant-message").filter({ hasText: "Echo: first line second line" }).waitFor(WAIT);
    expect(await box.inputValue()).toBe("");
  });

  it("lists recent runs with their cost, the audit ledger, and the spend per session on the usage page", async () => {
    // a run the model failed once: the session page shows the retry live, the run's detail counts it
    await openSession("agent:main:retry-demo");
    await send("flaky please");
    await page.getByTestId("assistant-message").filter({ hasText: "Echo: flaky please" }).waitFor(WAIT);
    await page.getByRole("link", { name: "Runs", exact: true }).click();
    const runs = page.getByTestId("runs");
    await runs.locator("tbody tr").filter({ hasText: "stop-demo" }).first().waitFor(WAIT);
    await runs
      .locator("tbody tr")
      .filter({ hasText: "stream-demo" })
      .filter({ hasText: "fake/m" })
      .getByRole("button")
      .first()
      .click();
    const detail = page.getByTestId("run-detail");
    await detail.getByText("fake/m").waitFor(WAIT);
    // the gateway verified the console's signed connect: its runs are started by the device, not a bare client id
    // shown short (8 hex), the full id on hover
    const actor = detail.getByTestId("actor");
    expect(await actor.textContent()).toMatch(/^device [0-9a-f]{8}$/);
    expect(await actor.getAttribute("title")).toMatch(/^device:[0-9a-f]{64}$/);
    // the detail opens in place: the row right under the run's row
    expect(
      await runs.locator("tr.detail-row").evaluate((tr) => tr.previousElementSibling?.textContent ?? ""),
    ).toContain("stream-demo");
    await page.getByRole("button", { name: "Close" }).click();
    await runs.locator("tbody tr").filter({ hasText: "retry-demo" }).getByRole("button").first().click();
    await detail.getByTestId("retries").filter({ hasText: "1" }).waitFor(WAIT);
    expect(await runs.locator("tbody tr").filter({ hasText: "retry-demo" }).textContent()).toContain("1 / —");
    // every model call is priced: the run's row shows what it cost
    expect(await runs.locator("tbody tr").filter({ hasText: "retry-demo" }).first().textContent()).toMatch(
      /\$0\.\d{4}/,
    );
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByTestId("audit").locator("tbody tr").filter({ hasText: "agent.run.finished" }).first().waitFor(WAIT);
    const actors = await page
      .getByTestId("audit-actor")
      .evaluateAll((tds) => tds.map((td) => ({ text: td.textContent, title: td.getAttribute("title") })));
    const devices = actors.filter((a) => a.title?.startsWith("device:"));
    expect(devices.length).toBeGreaterThan(0);
    for (const a of devices) expect(a.text).toBe(`device ${a.title?.slice(7, 15)}`);
    await page.getByRole("link", { name: "Usage" }).click();
    await page
      .getByTestId("usage-total")
      .filter({ hasText: /\$0\.\d{4} · [\d,]+ tokens · \d+ model calls/ })
      .waitFor(WAIT);
    await page.getByLabel("By").selectOption("session");
    await page.getByTestId("usage-groups").locator("tbody tr").filter({ hasText: "retry-demo" }).waitFor(WAIT);
  });

  it("answers an exec approval from the approvals page", async () => {
    await openSession("agent:main:approve-demo");
    await send("please clean up");
    const nav = page.getByRole("link", { name: "Approvals (1)" });
    await nav.waitFor(WAIT);
    await nav.click();
    const card = page.getByTestId("approval");
    await card.filter({ hasText: "rm -rf build" }).waitFor(WAIT);
    // a countdown, not an absolute expiry time
    expect(await card.getByTestId("countdown").textContent()).toMatch(/^\d+ (s|min \d\d s) left$/);
    await card.getByRole("button", { name: "Deny" }).click();
    await page.getByText("Nothing is waiting for approval.").waitFor(WAIT);
    await openSession("agent:main:approve-demo");
    const answer = page.getByTestId("assistant-message").filter({ hasText: "The command was answered." });
    await answer.waitFor(WAIT);
    // the tool call is folded with its result: the denial
    const tool = page.getByTestId("tool").filter({ hasText: "exec" });
    await tool.locator("summary").click();
    expect(await tool.textContent()).toContain("rm -rf build");
    expect(await tool.locator("summary").textContent()).toContain("error");
  });

  it("shows a silent model call on the diagnostics page, filtered by type", async () => {
    await openSession("agent:main:diag-demo");
    await send("stall for the monitor");
    await page.locator('[data-testid="live-run"].running').waitFor(WAIT);
    await page.getByRole("link", { name: "Diagnostics" }).click();
    const table = page.getByTestId("diagnostics");
    await table
      .locator("tbody tr")
      .filter({ hasText: "diag-demo" })
      .filter({ hasText: "session.long_running" })
      .waitFor(WAIT);
    await page.getByLabel("Type").selectOption("session.stuck");
    expect(await table.locator("tbody tr").filter({ hasText: "diag-demo" }).count()).toBe(0);
    await page.getByLabel("Type").selectOption("");
    await openSession("agent:main:diag-demo");
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByTestId("failed-run").filter({ hasText: "Stopped" }).waitFor(WAIT);
  });

  it("never scrolls sideways on a 390 px phone, on any page of the navigation", async () => {
    const phone = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const p = await newPage(phone, "phone-pages");
    await login(p, FULL_TOKEN);
    const hrefs = await p
      .getByRole("navigation", { name: "Console pages" })
      .locator("a")
      .evaluateAll((as) => as.map((a) => a.getAttribute("href") ?? ""));
    expect(hrefs.length).toBeGreaterThanOrEqual(5);
    const pages = [...hrefs, "#/session/agent%3Amain%3Achat-demo", "#/session/agent%3Amain%3Abroken-demo"];
    const wide: string[] = [];
    for (const href of pages) {
      await p.evaluate((h) => {
        location.hash = h;
      }, href);
      await p.getByRole("heading", { level: 1 }).waitFor(WAIT);
      // what loads after the heading (tables, transcripts: one round trip on loopback) is in before the width is read
      await p.waitForTimeout(300);
      const w = await p.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        client: document.documentElement.clientWidth,
      }));
      if (w.scroll > w.client) wide.push(`${href}: ${w.scroll} > ${w.client}`);
    }
    expect(wide).toEqual([]);
    // on a phone, a run's details open where the run is
    await p.evaluate(() => {
      location.hash = "#/runs";
    });
    await p.getByTestId("runs").locator("tbody tr button").first().click();
    const detail = p.getByTestId("run-detail");
    await detail.waitFor(WAIT);
    expect(await detail.isVisible()).toBe(true);
    const box = await detail.boundingBox();
    expect(box && box.y < PHONE.height && box.y + Math.min(box.height, 100) > 0).toBe(true);
    await phone.close();
  });

  it("picks a live run up again after its connection drops, without a gap or a repeat", async () => {
    const proxy = await startProxy(() => gw.port);
    const ctx = await browser.newContext({ viewport: DESKTOP });
    const p = await newPage(ctx, "replay");
    await p.goto(proxy.url);
    await p.getByLabel("Gateway token").fill(FULL_TOKEN);
    await p.getByRole("button", { name: "Connect" }).click();
    await p.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor(WAIT);
    await p.evaluate(() => {
      location.hash = "#/session/agent%3Amain%3Areplay-demo";
    });
    await p.getByLabel("Message").fill("long story please");
    await p.getByRole("button", { name: "Send" }).click();
    const live = p.getByTestId("live-text");
    await live.filter({ hasText: "part-2 " }).waitFor(WAIT);
    proxy.cut();
    const atCut = (await live.textContent()) ?? "";
    const cutAt = atCut.match(/part-\d+/g)?.length ?? 0;
    await p.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor(WAIT);
    // after the reconnect, while the run still streams: every part from the first, in order, each once
    const seen = await p.waitForFunction(
      (after) => {
        const run = document.querySelector('[data-testid="live-run"]');
        const text = run?.querySelector('[data-testid="live-text"]')?.textContent ?? "";
        const parts = text.match(/part-\d+/g) ?? [];
        return parts.length > after + 2 ? text : false;
      },
      cutAt,
      WAIT,
    );
    const text = String(await seen.jsonValue());
    const parts = text.trim().split(/\s+/);
    expect(parts).toEqual(parts.map((_, i) => `part-${i + 1}`));
    await p.getByTestId("assistant-message").filter({ hasText: "part-40" }).waitFor(WAIT);
    await ctx.close();
    proxy.close();
    // the browser logs the dropped socket; that is the cut this test made
    const w = watched.find((x) => x.name === "replay")!;
    w.errors.splice(0, w.errors.length, ...w.errors.filter((e) => !/WebSocket connection to .* failed/.test(e)));
  });

  it("survives a gateway restart: says it is unreachable, reconnects by itself and keeps working", async () => {
    await page.evaluate(() => {
      location.hash = "#/sessions";
    });
    await gw.kill();
    await page.getByTestId("unreachable").waitFor(WAIT);
    await gw.restart();
    await page.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor({ timeout: 20_000 });
    expect(await page.getByTestId("unreachable").count()).toBe(0);
    await page.locator('tr[data-session="agent:main:from-cli"]').waitFor(WAIT);
    await openSession("agent:main:after-restart");
    await send("still here?");
    await page.getByTestId("assistant-message").filter({ hasText: "Echo: still here?" }).waitFor(WAIT);
    // the browser itself logs each refused WebSocket connection while the gateway was down: that is the outage
    // this test made, not a console bug; anything else is
    const main = watched.find((w) => w.name === "main")!;
    main.errors.splice(
      0,
      main.errors.length,
      ...main.errors.filter((e) => !/WebSocket connection to 'ws:\/\/127\.0\.0\.1:\d+\/' failed/.test(e)),
    );
  });
});
