/*
 * A run paused by a budget (issue 30, `action: "pause"`) is answered inline in the console's session view, like an
 * exec approval (issue 31 item 3): the card names the budget and the spend, counts down, and "Allow one more call"
 * lets the run finish. Real `loopgate gateway` child, the fake model server (priced usage), Debian's chromium.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { FakeModelServer } from "../../src/testing/fake-model-server.js";
import {
  browserAvailable,
  consoleModelServer,
  FULL_TOKEN,
  type GatewayChild,
  launchBrowser,
  startGatewayChild,
  watchConsole,
} from "../fixtures/console/browser.js";

const WAIT = { timeout: 15_000 };
const SESSION = "agent:main:budget-demo";

describe.runIf(browserAvailable())("a budget pause in the console", () => {
  let model: FakeModelServer;
  let gw: GatewayChild;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    model = await consoleModelServer();
    // each call of the console's fake model costs $0.0002 (5 in / 5 out at $10 / $30 per million): the session's
    // first run spends past $0.0001, so its second run pauses before its model call
    gw = await startGatewayChild(model, {
      limits: {
        budgets: [
          {
            id: "demo-session",
            scope: "session",
            match: "agent:main:budget-*",
            window: "day",
            maxUsd: 0.0001,
            action: "pause",
          },
        ],
      },
    });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    ({ errors } = watchConsole(page));
    await page.goto(gw.httpUrl);
    await page.getByLabel("Gateway token").fill(FULL_TOKEN);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.getByTestId("conn-state").filter({ hasText: "connected" }).waitFor(WAIT);
  });

  afterAll(async () => {
    await browser?.close();
    await gw?.dispose();
    await model?.close();
  });

  afterEach(() => {
    expect(errors).toEqual([]);
  });

  it("shows the paused run's budget card in the session, and allowing one more call finishes the run", async () => {
    await page.evaluate((k) => {
      location.hash = `#/session/${encodeURIComponent(k)}`;
    }, SESSION);
    await page.getByRole("heading", { level: 1 }).filter({ hasText: "budget-demo" }).waitFor(WAIT);
    const box = page.getByLabel("Message");
    await box.fill("first turn");
    await box.press("Enter");
    await page.getByTestId("assistant-message").filter({ hasText: "Echo: first turn" }).waitFor(WAIT);
    const before = model.requests.length;

    await box.fill("second turn");
    await box.press("Enter");
    const card = page.getByTestId("live-run").getByTestId("approval");
    await card.waitFor(WAIT);
    expect(await card.getAttribute("data-kind")).toBe("budget");
    expect(await card.textContent()).toMatch(/demo-session \(day\): spent \$0\.0002 of \$0\.0001/);
    expect(await card.getByTestId("countdown").textContent()).toMatch(/left$/);
    // paused before the call: the model has not been asked
    expect(model.requests.length).toBe(before);

    await card.getByRole("button", { name: "Allow one more call" }).click();
    await page.getByTestId("assistant-message").filter({ hasText: "Echo: second turn" }).waitFor(WAIT);
    expect(model.requests.length).toBe(before + 1);
    expect(await page.getByTestId("approval").count()).toBe(0);
  });
});
