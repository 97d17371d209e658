// The web viewer in a real browser: Playwright drives Debian's Chromium over the real service (its own
// process) on PostgreSQL with the demo data. Each screen is photographed for the README
// (RUNLEDGER_SCREENSHOTS names the folder; `npm run screenshots` writes docs/screenshots).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/db/api-keys.ts';
import { LABELS } from '../../src/domain/labels.ts';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { DEMO_RUN_UUID, seedDemoData } from '../../src/ledger/seed.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';
import { post, type Running, startService } from '../support/service.ts';

const root = join(import.meta.dirname, '..', '..');
/** Debian's Chromium (`apt-get install chromium`); RUNLEDGER_CHROMIUM names another. */
const CHROMIUM = process.env.RUNLEDGER_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const onPostgres = backendNames.includes('postgres');
const SCREENSHOTS = process.env.RUNLEDGER_SCREENSHOTS ?? join(root, 'test', '.screenshots');

if (!hasChromium || !onPostgres) {
  const missing = [!hasChromium && `no Chromium at ${CHROMIUM}`, !onPostgres && 'DATABASE_URL is not set']
    .filter(Boolean)
    .join(' and ');
  // CI always runs the browser tests: there, a missing browser or database fails the run.
  if (process.env.CI) throw new Error(`the browser tests cannot run: ${missing}`);
  console.warn(
    `\n${'!'.repeat(78)}\n!! SKIPPED: the viewer's browser tests (${missing}).\n!! Install Chromium (apt-get install -y chromium) and set DATABASE_URL to run them.\n${'!'.repeat(78)}\n`,
  );
}

/** The flags a headless Chromium needs here: no sandbox as root, no calls home. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on RecordedStepsSuccess { data { steps { sequence outcome } } } } }`;

/** axe-core's serious and critical violations on a page, one line each: what, where, how many. */
async function violations(page: Page, axeSource: string, where: string): Promise<string[]> {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (options: object) => Promise<AxeResults> } }).axe;
    const results = await axe.run({ resultTypes: ['violations'] });
    return results.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) }));
  });
  return found.map((v) => `${where}: ${v.id} at ${v.nodes.join(', ')}`);
}

interface AxeResults {
  violations: Array<{ id: string; impact?: string | null; nodes: Array<{ target: string[] }> }>;
}

describe.runIf(hasChromium && onPostgres)('the web viewer in Chromium', () => {
  let database: TestDatabase;
  let service: Running;
  let tools: HttpToolServer;
  let browser: Browser;
  /** Every context opened, closed at the end. */
  const contexts: BrowserContext[] = [];
  let base = '';
  let graphqlUrl = '';
  let adminKey = '';
  let readerKey = '';
  let approverKey = '';
  /** Every request the pages made to another host (all refused). */
  const external: string[] = [];

  async function api<T>(key: string, query: string, variables?: Record<string, unknown>): Promise<T> {
    const { body } = await post(graphqlUrl, key, query, variables);
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data as T;
  }

  async function startRun(): Promise<string> {
    const data = await api<{ startRun: { data: { uuid: string } } }>(
      adminKey,
      'mutation { startRun(input: { configuration: "browser" }) { ... on StartRunSuccess { data { uuid } } } }',
    );
    return data.startRun.data.uuid;
  }

  /**
   * A page of a browser session of its own: the tabs of one session share their key (they ask each other for
   * it), so a test that signs in with two keys at once opens two sessions.
   */
  async function freshPage(): Promise<Page> {
    const context = await browser.newContext({
      locale: 'en-US',
      timezoneId: 'UTC',
      viewport: { width: 1360, height: 860 },
    });
    contexts.push(context);
    // A step that waits longer fails with what it waited for, inside the test's own time.
    context.setDefaultTimeout(10_000);
    // Nothing may leave the machine: a request to another origin is recorded and refused.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('data:')) return route.continue();
      external.push(url);
      return route.abort();
    });
    return context.newPage();
  }

  async function signedIn(key = adminKey, path = '/'): Promise<Page> {
    const page = await freshPage();
    await page.goto(`${base}${path}`);
    await page.getByLabel(/^(API key|API-Schlüssel)$/).fill(key);
    await page.getByRole('button', { name: /^(Sign in|Anmelden)$/ }).click();
    await page.locator('header.top').waitFor();
    return page;
  }

  async function shoot(page: Page, name: string): Promise<void> {
    // No tooltip from where the last click left the pointer.
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  beforeAll(async () => {
    // The viewer the service serves is the built one: build it when a source changed.
    const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], {
      cwd: root,
      stdio: 'pipe',
    });
    if (build.status !== 0) throw new Error(`the build failed:\n${build.stdout}${build.stderr}`);
    mkdirSync(SCREENSHOTS, { recursive: true });
    database = await openTestDatabase('postgres');
    await seedDemoData(database.handle.db, new Date());
    adminKey = (await createApiKey(database.handle.db, 'admin', PERMISSIONS)).key;
    readerKey = (await createApiKey(database.handle.db, 'auditor', ['read_all_runs'])).key;
    approverKey = (await createApiKey(database.handle.db, 'carol', ['read_all_runs', 'approve_runs'])).key;
    tools = await startHttpToolServer();
    service = await startService({
      DATABASE_URL: database.url ?? '',
      RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1:*',
    });
    graphqlUrl = service.url;
    base = new URL(service.url).origin;
    await api(adminKey, 'mutation ($i: McpServerInput!) { registerMcpServer(input: $i) { __typename } }', {
      i: { identifier: 'tools', transport: 'STREAMABLE_HTTP', url: tools.url },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 180_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    if (service?.child.exitCode === null) service.child.kill('SIGTERM');
    await tools?.close();
    await database?.dispose();
  });

  it('signs in with the API key field, says when a key is wrong, and forgets the key on sign-out', async () => {
    const page = await freshPage();
    await page.goto(`${base}/`);
    await shoot(page, 'sign-in');
    await page.getByLabel('API key').fill('rl_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('This API key is not valid.');
    await page.getByLabel('API key').fill(readerKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Signed in as auditor').waitFor();
    // Kept for this tab: a reload stays signed in.
    await page.reload();
    await page.getByText('Signed in as auditor').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('leads back to sign-in when the key is revoked while the page is open, and says why', async () => {
    const { key, row } = await createApiKey(database.handle.db, 'temporary', ['read_all_runs']);
    const page = await signedIn(key, '/runs');
    await page.getByTestId('runs-recent').waitFor();
    await revokeApiKey(database.handle.db, String(row.id));
    await page.getByRole('link', { name: 'Servers and tools' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'Your key is no longer accepted: it was revoked or has expired. Sign in with another key.',
    );
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('keeps the key across the tabs of a browser session: a run opened in a new tab is signed in; a sign-out signs out every tab', async () => {
    const first = await signedIn(readerKey, '/runs');
    await first.getByTestId('runs-recent').waitFor();
    const second = await first.context().newPage();
    await second.goto(`${base}/runs/${DEMO_RUN_UUID}`);
    await second.getByText('Signed in as auditor').waitFor();
    await second.getByTestId('run-status').waitFor();
    await second.getByRole('button', { name: 'Sign out' }).click();
    await second.getByLabel('API key').waitFor();
    await first.getByText('You signed out in another tab.').waitFor();
    expect(await first.evaluate(() => sessionStorage.length)).toBe(0);
    // Once no tab holds it, a new tab asks for a key.
    const third = await first.context().newPage();
    await third.goto(`${base}/runs`);
    await third.getByLabel('API key').waitFor();
    await first.context().close();
  });

  it('says when the service did not answer a sign-in, and keeps a signed-in key through an outage', async () => {
    const page = await freshPage();
    // A proxy in front of a service that is down answers 502.
    await page.route(`${base}/graphql**`, (route) => route.fulfill({ status: 502, body: 'Bad Gateway' }));
    await page.goto(`${base}/`);
    await page.getByLabel('API key').fill(readerKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('The service did not answer (HTTP_502), so the key was not checked. Try again in a moment.');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.unroute(`${base}/graphql**`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Signed in as auditor').waitFor();
    // The service unreachable during a reload: the key is kept, the page says so and signs in once it answers.
    await page.route(`${base}/graphql**`, (route) => route.abort('connectionrefused'));
    await page.reload();
    await page
      .getByText('The service cannot be reached right now (UNREACHABLE). Your key is kept.')
      .waitFor();
    expect(await page.title()).toBe('Service unreachable – runledger');
    await page.unroute(`${base}/graphql**`);
    await page.getByText('Signed in as auditor').waitFor({ timeout: 15_000 });
    await page.close();
  });

  it('shows the demo cancelled run in German: abgebrochen on the cancelled call, fehlgeschlagen only on failed ones', async () => {
    const page = await signedIn(adminKey, `/runs/${DEMO_RUN_UUID}?lang=de`);
    await page.getByTestId('timeline').locator('tbody tr').first().waitFor();
    const expected = await api<{ run: { timeline: { sequence: number; outcome: string | null }[] } }>(
      adminKey,
      'query ($u: String!) { run(uuid: $u) { timeline { sequence outcome } } }',
      { u: DEMO_RUN_UUID },
    );
    await expect
      .poll(() => page.getByTestId('timeline').locator('tbody tr').count())
      .toBe(expected.run.timeline.length);
    const rows = await page
      .getByTestId('timeline')
      .locator('tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => ({
          sequence: Number(tr.getAttribute('data-sequence')),
          outcome: tr.querySelector('td.outcome-cell')?.textContent ?? '',
        })),
      );
    const de = LABELS.de;
    expect(rows).toEqual(
      expected.run.timeline.map((entry) => ({
        sequence: entry.sequence,
        outcome: entry.outcome
          ? de[`runs.detail.outcome.${entry.outcome.toLowerCase() as 'ok' | 'failed' | 'cancelled'}`]
          : '',
      })),
    );
    const cancelled = rows.filter((row) => row.outcome === 'abgebrochen');
    const failed = rows.filter((row) => row.outcome === 'fehlgeschlagen');
    expect(cancelled.length).toBeGreaterThan(0);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.map((row) => row.sequence)).toEqual(
      expected.run.timeline.filter((entry) => entry.outcome === 'FAILED').map((entry) => entry.sequence),
    );
    expect(await page.getByTestId('run-status').textContent()).toContain('abgebrochen');
    expect(await page.getByTestId('run-status').textContent()).not.toContain('fehlgeschlagen');
    // The reason is not the status said again.
    expect((await page.getByTestId('run-status').textContent())?.match(/abgebrochen/g)).toHaveLength(1);
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('de');
    await shoot(page, 'run-de');
    // The language is switched in the page and kept in the URL.
    await page.getByLabel('Sprache').selectOption('en');
    await expect.poll(() => page.url()).not.toContain('lang=de');
    await expect
      .poll(() => page.locator('tr[data-outcome="cancelled"] td.outcome-cell').first().textContent())
      .toBe('cancelled');
    // Kinds in words, as in German: no identifier (llm, tool_write) on the page.
    expect(await page.getByRole('cell', { name: /^(llm|tool|tool_write)$/ }).count()).toBe(0);
    expect(await page.getByRole('cell', { name: 'model call', exact: true }).count()).toBeGreaterThan(0);
    await shoot(page, 'run');
    await page.close();
  });

  it('lists waiting runs first, then recent runs, with filters in the URL, paging and the total', async () => {
    const page = await signedIn(adminKey, '/');
    const waiting = page.getByTestId('runs-waiting').locator('tbody tr');
    await waiting.first().waitFor();
    expect(await waiting.locator('td:nth-child(4)').allTextContents()).toEqual(
      expect.arrayContaining(['waiting for approval', 'waiting for input']),
    );
    const all = await api<{ runs: { totalCount: number; edges: { node: { uuid: string } }[] } }>(
      adminKey,
      '{ runs(first: 40) { totalCount edges { node { uuid } } } }',
    );
    const total = all.runs.totalCount;
    await expect.poll(() => page.getByTestId('runs-total').textContent()).toBe(`1–20 of ${total}`);
    const uuidsOnPage = () =>
      page
        .getByTestId('runs-recent')
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-run')));
    await expect.poll(uuidsOnPage).toEqual(all.runs.edges.slice(0, 20).map((edge) => edge.node.uuid));
    await shoot(page, 'runs');
    // The next page, by the cursor.
    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(() => page.getByTestId('runs-total').textContent()).toBe(`21–40 of ${total}`);
    await expect.poll(uuidsOnPage).toEqual(all.runs.edges.slice(20, 40).map((edge) => edge.node.uuid));
    // A filter goes into the URL; the page read from that URL alone shows the same.
    await page.getByRole('link', { name: 'Clear filters' }).click();
    await expect.poll(() => page.getByTestId('runs-total').textContent()).toBe(`1–20 of ${total}`);
    await page.getByLabel('Status').selectOption('CANCELLED');
    await page.getByLabel('Has a tool call that is').selectOption('FAILED');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.url()).toContain('status=CANCELLED');
    expect(page.url()).toContain('outcome=FAILED');
    const filtered = await api<{ runs: { totalCount: number; edges: { node: { uuid: string } }[] } }>(
      adminKey,
      '{ runs(first: 20, filter: { statuses: [CANCELLED], hasToolOutcome: FAILED }) { totalCount edges { node { uuid } } } }',
    );
    expect(filtered.runs.totalCount).toBeGreaterThan(0);
    await expect
      .poll(() => page.getByTestId('runs-total').textContent())
      .toBe(`1–${filtered.runs.edges.length} of ${filtered.runs.totalCount}`);
    await expect.poll(uuidsOnPage).toEqual(filtered.runs.edges.map((edge) => edge.node.uuid));
    // Another tab (which signs in anew: the key is kept per tab) opened at that URL.
    const again = await signedIn(adminKey, page.url().slice(base.length));
    await expect
      .poll(() => again.getByTestId('runs-total').textContent())
      .toBe(`1–${filtered.runs.edges.length} of ${filtered.runs.totalCount}`);
    await again.close();
    // In German, dates, numbers and cost in the German way.
    await page.goto(`${base}/runs?lang=de`);
    await expect.poll(() => page.getByTestId('runs-total').textContent()).toBe(`1–20 von ${total}`);
    expect(await page.getByTestId('runs-recent').locator('tbody tr td.number').first().textContent()).toMatch(
      /^\d+,\d{2,4}\s\$$/,
    );
    await shoot(page, 'runs-de');
    await page.close();
  });

  it('finds runs: names offered as typed, owner and days, a run id, previous page, new runs by themselves, a copied id', async () => {
    const page = await freshPage();
    await page.clock.install();
    await page.goto(`${base}/runs`);
    await page.getByLabel('API key').fill(readerKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const recent = page.getByTestId('runs-recent');
    await recent.waitFor();
    await expect
      .poll(() =>
        page
          .locator('#run-configuration-names option')
          .evaluateAll((o) => o.map((e) => e.getAttribute('value'))),
      )
      .toContain('release-bot');
    expect(
      await page.locator('#run-owner-names option').evaluateAll((o) => o.map((e) => e.getAttribute('value'))),
    ).toContain('bob');
    const total = await page.getByTestId('runs-total').textContent();

    // Paging forward twice, then back: the second page again.
    const firstRow = () => recent.locator('tbody tr').first().getAttribute('data-run');
    const first = await firstRow();
    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(firstRow).not.toBe(first);
    const second = await firstRow();
    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(firstRow).not.toBe(second);
    await page.getByRole('link', { name: 'Previous page' }).click();
    await expect.poll(firstRow).toBe(second);
    expect(await page.getByTestId('runs-total').textContent()).toBe(total?.replace(/^1–20/, '21–40'));

    // An owner and a range of days (the reader's days: UTC here).
    await page.goto(`${base}/runs`);
    await page.getByLabel('Owner').fill('bob');
    const today = new Date(await page.evaluate(() => Date.now())).toISOString().slice(0, 10);
    await page.getByLabel('Created from').fill(today);
    await page.getByLabel('to', { exact: true }).fill(today);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/owner=bob.*since=/);
    await expect
      .poll(async () => [...new Set(await recent.locator('tbody td:nth-child(3)').allTextContents())])
      .toEqual(['bob']);
    expect(await page.getByTestId('runs-total').textContent()).not.toBe(total);

    // A run's id goes to the run; a part of one is refused with a reason.
    await page.getByLabel('Run id').fill('c0de');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText("That is not a run's full id").waitFor();
    await page.getByLabel('Run id').fill(DEMO_RUN_UUID);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(new RegExp(`/runs/${DEMO_RUN_UUID}`));

    // The id copied from the run's heading.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.getByRole('button', { name: 'Copy id' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(DEMO_RUN_UUID);

    // A run started elsewhere appears in the list by itself.
    await page.goto(`${base}/runs`);
    await recent.waitFor();
    const started = await startRun();
    await page.clock.fastForward(16_000);
    await recent.locator(`tr[data-run="${started}"]`).waitFor();
    await page.close();
  });

  it("speaks the browser's language without ?lang, and keeps the reader's choice of another in the URL", async () => {
    const german = await browser.newContext({ locale: 'de-DE', timezoneId: 'Europe/Berlin' });
    await german.route('**/*', (route) =>
      route.request().url().startsWith(base) ? route.continue() : route.abort(),
    );
    try {
      const page = await german.newPage();
      await page.goto(`${base}/runs`);
      // Signed in through the German form: the page speaks German before anyone chose.
      await page.getByLabel('API-Schlüssel').fill(adminKey);
      await page.getByRole('button', { name: 'Anmelden' }).click();
      await expect.poll(() => page.getByTestId('runs-total').textContent()).toMatch(/^1–20 von \d/);
      expect(await page.evaluate(() => document.documentElement.lang)).toBe('de');
      expect(page.url()).not.toContain('lang=');
      // English chosen: kept in the URL (the browser would say German again without it), and on links.
      await page.getByLabel('Sprache').selectOption('en');
      await expect.poll(() => page.url()).toContain('lang=en');
      await expect.poll(() => page.getByTestId('runs-total').textContent()).toMatch(/^1–20 of \d/);
      await page.reload();
      await expect.poll(() => page.getByTestId('runs-total').textContent()).toMatch(/^1–20 of \d/);
    } finally {
      await german.close();
    }
  });

  it('never scrolls sideways: at 375 and 768 px, and at 1,360 px with a name of 200 characters', async () => {
    const long = `config-${'x'.repeat(193)}`;
    const started = await api<{ startRun: { data: { uuid: string } } }>(
      adminKey,
      'mutation ($c: String!) { startRun(input: { configuration: $c }) { ... on StartRunSuccess { data { uuid } } } }',
      { c: long },
    );
    const page = await signedIn(adminKey, '/runs');
    const sideways = () =>
      page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    // Each page with what it shows once its data is in (a run page keeps its live stream open).
    for (const [width, path, shown] of [
      [1360, '/runs', 'runs-recent'],
      [1360, `/runs/${started.startRun.data.uuid}`, 'run-status'],
      [768, '/runs', 'runs-recent'],
      [375, '/runs', 'runs-recent'],
      [375, `/runs/${DEMO_RUN_UUID}`, 'timeline'],
      [375, '/servers', 'servers'],
    ] as const) {
      await page.setViewportSize({ width, height: 800 });
      await page.goto(`${base}${path}`);
      await page.getByTestId(shown).waitFor();
      expect([width, path, await sideways()]).toEqual([width, path, 0]);
      // Each page is titled by what it shows, not all alike.
      expect(await page.title()).toMatch(/^(Runs|Run [0-9a-f]{8}|Servers and tools) – runledger$/);
    }
    // A table wider than a phone scrolls in its own region, which a keyboard reaches.
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(`${base}/runs/${DEMO_RUN_UUID}`);
    const region = page.getByRole('region', { name: 'Timeline' });
    await region.waitFor();
    expect(await region.getAttribute('tabindex')).toBe('0');
    await page.close();
  });

  it('shows a step recorded through the API on an open run page within 2 s', async () => {
    const uuid = await startRun();
    const page = await signedIn(adminKey, `/runs/${uuid}`);
    await page.getByText('live', { exact: true }).waitFor();
    expect(await page.getByTestId('timeline-empty').textContent()).toBe(
      'No steps yet: they appear here as they are recorded.',
    );
    const recordedAt = Date.now();
    await api(adminKey, 'mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }', {
      input: { runUuid: uuid, kind: 'LLM', round: 1, durationMs: 42 },
    });
    await page.locator('tr[data-sequence="1"]').waitFor({ timeout: 2_000 });
    expect(Date.now() - recordedAt).toBeLessThan(2_000);
    // A screen reader hears it, politely.
    const announced = page.locator('p.visually-hidden[aria-live="polite"]');
    await expect.poll(() => announced.textContent()).toBe('Step 1 recorded.');
    await page.close();
  });

  it('takes the live stream up again after a restart of the service: says so meanwhile, then shows what was missed', async () => {
    const uuid = await startRun();
    const page = await signedIn(adminKey, `/runs/${uuid}`);
    await page.getByText('live', { exact: true }).waitFor();
    const port = new URL(service.url).port;
    await service.stop();
    await page.getByText('reconnecting…', { exact: true }).waitFor();
    service = await startService({
      DATABASE_URL: database.url ?? '',
      RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1:*',
      PORT: port,
    });
    // A step recorded while the page was away, and one after: both arrive, and the page is live again.
    await api(adminKey, 'mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }', {
      input: { runUuid: uuid, kind: 'LLM', round: 1, durationMs: 7 },
    });
    await page.locator('tr[data-sequence="1"]').waitFor({ timeout: 15_000 });
    await page.getByText('live', { exact: true }).waitFor();
    await api(adminKey, 'mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }', {
      input: { runUuid: uuid, kind: 'LLM', round: 2, durationMs: 7 },
    });
    await page.locator('tr[data-sequence="2"]').waitFor({ timeout: 5_000 });
    await page.close();
  });

  it('cancels a run from the page while callTool is on the wire: the run ends and the row reads cancelled', async () => {
    const uuid = await startRun();
    const page = await signedIn(adminKey, `/runs/${uuid}`);
    await page.getByText('live', { exact: true }).waitFor();
    const startedBefore = tools.started.length;
    const call = post(graphqlUrl, adminKey, CALL, {
      input: {
        runUuid: uuid,
        server: 'tools',
        toolName: 'slow',
        arguments: { ms: 30_000 },
        timeoutMs: 60_000,
      },
    });
    await expect.poll(() => tools.started.length, { timeout: 10_000 }).toBeGreaterThan(startedBefore);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.getByTestId('run-status').textContent()).toContain('cancelled');
    // Focus goes to the status the button changed, not back to the top of the page.
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('run-status');
    const row = page.locator('tr[data-sequence="1"]');
    await row.waitFor({ timeout: 5_000 });
    expect(await row.getAttribute('data-outcome')).toBe('cancelled');
    expect(await row.locator('td.outcome-cell').textContent()).toBe('cancelled');
    expect((await call).body).toEqual({
      data: {
        callTool: {
          __typename: 'RecordedStepsSuccess',
          data: { steps: [{ sequence: 1, outcome: 'CANCELLED' }] },
        },
      },
    });
    // An ended run offers no Cancel.
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    await shoot(page, 'run-cancelled');
    await page.close();
  });

  it('shows the progress a call on the wire reports, live, until its step arrives', async () => {
    const uuid = await startRun();
    const page = await signedIn(adminKey, `/runs/${uuid}`);
    await page.getByText('live', { exact: true }).waitFor();
    const call = post(graphqlUrl, adminKey, CALL, {
      input: { runUuid: uuid, server: 'tools', toolName: 'progress', arguments: { steps: 5, ms: 600 } },
    });
    const report = page.getByTestId('call-progress');
    await expect
      .poll(() => report.textContent(), { timeout: 5_000 })
      .toMatch(/^ ?tools\/progress: [1-5] of 5 · step [1-5] of 5$/);
    expect(await page.getByTestId('calls-on-the-wire').locator('h3').textContent()).toBe('Calls on the wire');
    await expect.poll(() => report.textContent(), { timeout: 5_000 }).toMatch(/[3-5] of 5 · step/);
    // The step is stored: what is on the wire is gone, the row is there.
    expect(JSON.stringify((await call).body)).toContain('"outcome":"OK"');
    await page.locator('tr[data-sequence="1"]').waitFor({ timeout: 5_000 });
    await expect.poll(() => page.getByTestId('calls-on-the-wire').count()).toBe(0);
    await page.close();
  });

  it('decides from the inbox: approve (seen live in the timeline), deny, answer a form; only keys that may decide see it', async () => {
    const uuid = await startRun();
    const ask = (query: string, input: Record<string, unknown>) =>
      api<Record<string, { data: { request: { uuid: string } } }>>(adminKey, query, {
        input: { runUuid: uuid, ...input },
      });
    const APPROVAL =
      'mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) { ... on RequestRecordedSuccess { data { request { uuid } } } } }';
    const INPUT =
      'mutation ($input: RequestInputInput!) { requestInput(input: $input) { ... on RequestRecordedSuccess { data { request { uuid } } } } }';
    await ask(APPROVAL, {
      toolName: 'deploy',
      server: 'ops',
      arguments: { env: 'prod' },
      reason: 'ship the fix',
    });

    const runPage = await signedIn(adminKey, `/runs/${uuid}`);
    await runPage.getByText('live', { exact: true }).waitFor();
    await runPage.getByTestId('run-status').getByText('waiting for approval').waitFor();
    // The run's owner may approve, but never its own run: its inbox holds the demo's requests, not this one.
    const own = await signedIn(adminKey, '/inbox');
    await own.getByTestId('inbox-request').filter({ hasText: 'create_release' }).waitFor();
    expect(await own.getByTestId('inbox-request').filter({ hasText: 'ops/deploy' }).count()).toBe(0);
    await own.close();
    const reader = await signedIn(readerKey, '/');
    expect(await reader.getByRole('link', { name: 'Inbox' }).count()).toBe(0);
    await reader.close();

    const inbox = await signedIn(approverKey, '/');
    await inbox.getByRole('link', { name: 'Inbox' }).click();
    const card = inbox.getByTestId('inbox-request').filter({ hasText: 'ops/deploy' });
    await card.getByText('ship the fix').waitFor();
    await card.getByText('"env": "prod"').waitFor();
    await shoot(inbox, 'inbox');
    await card.getByRole('button', { name: 'Approve' }).click();
    await inbox.getByTestId('inbox-done').getByText('Approved.').waitFor();
    expect(await inbox.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe(
      'inbox-done',
    );
    // Live on the run page: the decision's step, and the run running again.
    await runPage.locator('tr[data-sequence="2"]').getByText('approved by carol').waitFor({ timeout: 2_000 });
    await runPage.getByTestId('run-status').getByText('running').waitFor();

    await ask(APPROVAL, { toolName: 'drop-table', arguments: {} });
    await inbox.reload();
    await inbox
      .getByTestId('inbox-request')
      .filter({ hasText: 'drop-table' })
      .getByRole('button', { name: 'Deny' })
      .click();
    await inbox.getByTestId('inbox-done').getByText('Denied.').waitFor();
    await runPage.locator('tr[data-sequence="4"]').getByText('denied by carol').waitFor({ timeout: 2_000 });

    const asked = await ask(INPUT, {
      prompt: 'Where to deploy?',
      schema: {
        type: 'object',
        properties: {
          branch: { type: 'string', title: 'Branch', maxLength: 40 },
          region: { type: 'string', title: 'Region', enum: ['eu', 'us'], enumNames: ['Europe', 'America'] },
          replicas: { type: 'integer', title: 'Replicas', minimum: 1, maximum: 9, default: 2 },
          force: { type: 'boolean', title: 'Force' },
          zones: { type: 'array', title: 'Zones', items: { type: 'string', enum: ['a', 'b', 'c'] } },
          when: { type: 'string', title: 'When', format: 'date-time', description: 'UTC, with its offset' },
        },
        required: ['branch', 'region'],
      },
    });
    expect(asked.requestInput?.data.request.uuid).toBeTruthy();
    // In German this time: the same form, in its words, its fields in the schema's order and with its bounds.
    const de = await signedIn(approverKey, '/inbox?lang=de');
    const form = de.getByTestId('inbox-request').filter({ hasText: 'Where to deploy?' });
    await form.getByText('Eingabe erbeten').waitFor();
    expect(await form.locator('.field > label:not(.choice), .field legend').allTextContents()).toEqual([
      'Branch (Pflichtfeld)',
      'Region (Pflichtfeld)',
      'Replicas',
      'Force',
      'Zones',
      'When',
    ]);
    const replicas = form.getByLabel(/^Replicas/);
    expect([await replicas.getAttribute('min'), await replicas.getAttribute('max')]).toEqual(['1', '9']);
    expect(await replicas.inputValue()).toBe('2');
    expect(await form.getByLabel(/^Branch/).getAttribute('maxlength')).toBe('40');
    await form.getByLabel(/^Branch/).fill('main');
    await form.getByLabel(/^Region/).selectOption({ label: 'Europe' });
    await replicas.fill('3');
    await form.getByLabel('Force').check();
    await form.getByLabel('a', { exact: true }).check();
    await form.getByLabel('c', { exact: true }).check();
    // What only the service checks is refused with the field named, and nothing is stored.
    await form.getByLabel(/^When/).fill('tomorrow');
    await form.getByRole('button', { name: 'Antwort senden' }).click();
    await expect
      .poll(() => form.getByRole('alert').textContent())
      .toMatch(/^Abgelehnt: INPUT_VALUES_INVALID\. .*\/when/);
    await form.getByLabel(/^When/).fill('2026-12-24T09:00:00Z');
    await form.getByRole('button', { name: 'Antwort senden' }).click();
    await de.getByTestId('inbox-done').getByText('Beantwortet.').waitFor();
    const request = asked.requestInput?.data.request.uuid ?? '';
    const answered = await api<{ humanRequest: { state: string; values: unknown } }>(
      adminKey,
      'query ($u: String!) { humanRequest(uuid: $u) { state values } }',
      { u: request },
    );
    expect(answered.humanRequest).toEqual({
      state: 'ANSWERED',
      values: {
        branch: 'main',
        region: 'eu',
        replicas: 3,
        force: true,
        zones: ['a', 'c'],
        when: '2026-12-24T09:00:00Z',
      },
    });
    await runPage.locator('tr[data-sequence="6"]').getByText('answered by carol').waitFor({ timeout: 2_000 });
    await Promise.all([de.close(), inbox.close(), runPage.close()]);
  });

  it('shows a step in full on demand: its payload to a key that may read payloads, the permission it lacks to another', async () => {
    const page = await signedIn(adminKey, `/runs/${DEMO_RUN_UUID}`);
    // The run's failure rate, cancelled calls in neither part (3 failed of 11 finished), and a waterfall bar a step.
    expect(await page.getByTestId('run-failure-rate').textContent()).toBe('27.3%');
    expect(await page.locator('table.timeline .waterfall .bar').count()).toBe(
      await page.locator('table.timeline tbody tr').count(),
    );
    const failed = page.locator('tr[data-outcome="failed"]').first();
    await failed.getByRole('button', { name: 'Show' }).click();
    expect(await failed.getByRole('button', { name: 'Hide' }).getAttribute('aria-expanded')).toBe('true');
    const detail = page.getByTestId('step-detail');
    await detail.getByTestId('step-payload').waitFor();
    expect(JSON.parse((await detail.getByTestId('step-payload').textContent()) ?? 'null')).not.toBeNull();
    await failed.getByRole('button', { name: 'Hide' }).click();
    expect(await page.getByTestId('step-detail').count()).toBe(0);
    // No column repeats what the details line says.
    expect(await page.locator('table.timeline thead th').allTextContents()).not.toContain('Failure cause');
    await page.close();

    const reader = await signedIn(readerKey, `/runs/${DEMO_RUN_UUID}`);
    await reader
      .locator('tr[data-outcome="cancelled"]')
      .first()
      .getByRole('button', { name: 'Show' })
      .click();
    await reader
      .getByTestId('step-detail')
      .getByText('This key may not see this: it lacks the permission read_payloads.')
      .waitFor();
    await reader.close();
  });

  it('manages keys while the service runs: a key made on the Keys page works at once, and is refused once revoked', async () => {
    const page = await signedIn(adminKey, '/runs');
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByLabel('Actor').fill('browser-bot');
    await page.getByLabel('record', { exact: true }).check();
    await page.getByLabel('read_own_runs', { exact: true }).check();
    await page.getByRole('button', { name: 'Make the key' }).click();
    const made = page.getByTestId('made-key');
    await made.waitFor();
    const key = (await made.locator('code').textContent()) ?? '';
    expect(key).toMatch(/^rl_/);
    expect((await post(graphqlUrl, key, '{ viewer { actor } }')).body).toEqual({
      data: { viewer: { actor: 'browser-bot' } },
    });
    const row = page.locator(`tr[data-key="${key.slice(0, 10)}"]`);
    expect(await row.locator('td').nth(3).textContent()).toBe('read_own_runs, record');
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByText(/^revoked /).waitFor();
    expect((await post(graphqlUrl, key, '{ viewer { actor } }')).status).toBe(401);
    await page.close();
    // A key that may not manage keys has no Keys page.
    const reader = await signedIn(readerKey, '/runs');
    await reader.getByTestId('runs-recent').waitFor();
    expect(await reader.getByRole('link', { name: 'Keys' }).count()).toBe(0);
    await reader.close();
  });

  it('offers Cancel only to a key that may cancel the run', async () => {
    const uuid = await startRun();
    const page = await signedIn(readerKey, `/runs/${uuid}`);
    await page.getByTestId('run-status').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    await page.close();
  });

  it('shows per server and per tool what toolOutcomeStats answers, cancelled apart from the failure rate', async () => {
    const page = await signedIn(adminKey, '/servers');
    await page.getByTestId('servers').waitFor();
    // The page's period: the last 30 days from midnight in the browser's time zone (UTC here).
    const since = new Date();
    since.setUTCHours(0, 0, 0, 0);
    since.setUTCDate(since.getUTCDate() - 29);
    type Groups = {
      toolOutcomeStats: {
        groups: {
          server: string | null;
          toolName: string | null;
          counts: { total: number; cancelled: number; failureRate: number | null };
        }[];
      };
    };
    const stats = await api<Groups>(
      adminKey,
      `query ($since: DateTime!) { toolOutcomeStats(groupBy: [SERVER], filter: { occurredAfter: $since }, orderBy: { field: TOTAL }, first: 500) {
        groups { server toolName counts { total cancelled failureRate } } } }`,
      { since: since.toISOString() },
    );
    const percent = new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 1 });
    const shown = () =>
      page
        .getByTestId('servers')
        .locator('tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => ({
            name: tr.getAttribute('data-name'),
            total: tr.querySelector('[data-field="total"]')?.textContent,
            failureRate: tr.querySelector('[data-field="failureRate"]')?.textContent,
          })),
        );
    expect(await shown()).toEqual(
      stats.toolOutcomeStats.groups.map((group) => ({
        name: group.server,
        total: new Intl.NumberFormat('en-US').format(group.counts.total),
        failureRate: group.counts.failureRate == null ? '' : percent.format(group.counts.failureRate),
      })),
    );
    expect(stats.toolOutcomeStats.groups.some((group) => group.counts.cancelled > 0)).toBe(true);
    // The chart draws cancelled calls as a series of their own.
    await expect
      .poll(() => page.locator('.recharts-legend-item-text').allTextContents())
      .toEqual(['ok', 'failed', 'cancelled']);
    await shoot(page, 'servers');
    // A server's row leads to its tools.
    const server = stats.toolOutcomeStats.groups[0]?.server ?? '';
    await page.getByTestId('servers').getByRole('link', { name: server, exact: true }).click();
    await page.getByTestId('tools').waitFor();
    const perTool = await api<Groups>(
      adminKey,
      `query ($since: DateTime!, $s: String!) { toolOutcomeStats(groupBy: [TOOL], filter: { occurredAfter: $since, servers: [$s] }, orderBy: { field: TOTAL }, first: 500) {
        groups { server toolName counts { total cancelled failureRate } } } }`,
      { since: since.toISOString(), s: server },
    );
    expect(
      await page
        .getByTestId('tools')
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-name'))),
    ).toEqual(perTool.toolOutcomeStats.groups.map((group) => group.toolName));
    await shoot(page, 'server-tools');
    await page.close();
  });

  it('charts runs by status and by termination reason over time, in both languages', async () => {
    const page = await signedIn(adminKey, '/stats');
    const legend = page.locator('.recharts-legend-item-text');
    await expect
      .poll(() => legend.allTextContents())
      .toEqual(
        expect.arrayContaining([
          'completed',
          'failed',
          'cancelled',
          'waiting for approval',
          'provider failed',
        ]),
      );
    expect(await page.locator('.recharts-bar-rectangle').count()).toBeGreaterThan(0);
    await shoot(page, 'stats');
    await page.goto(`${base}/stats?lang=de`);
    await expect
      .poll(() => legend.allTextContents())
      .toEqual(
        expect.arrayContaining(['abgeschlossen', 'fehlgeschlagen', 'abgebrochen', 'wartet auf Freigabe']),
      );
    await shoot(page, 'stats-de');
    await page.close();
  });

  it('works by keyboard: a skip link first, focus on the content after Apply, every chart also a table', async () => {
    const page = await signedIn(readerKey, '/runs');
    await page.getByTestId('runs-recent').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('content');
    await page.getByLabel('Configuration').fill('release-bot');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/configuration=release-bot/);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('content');
    await page.goto(`${base}/servers`);
    const chart = page.locator('figure.chart').first();
    await chart.getByText('The numbers as a table').click();
    const header = await chart.locator('thead th').allTextContents();
    expect(header).toEqual(['Period', 'ok', 'failed', 'cancelled']);
    expect(await chart.locator('tbody tr').count()).toBeGreaterThan(0);
    // The legend reads in the text colour; failed and cancelled differ from ok by texture, not colour alone.
    expect(
      await chart
        .locator('.legend-text')
        .first()
        .evaluate((e) => getComputedStyle(e).color),
    ).toBe('rgb(29, 35, 42)');
    const fills = await chart
      .locator('.recharts-bar-rectangle path')
      .evaluateAll((paths) => [...new Set(paths.map((path) => path.getAttribute('fill')))]);
    expect(fills.sort()).toEqual(['#2e7d32', 'url(#outcome-cancelled)', 'url(#outcome-failed)'].sort());
    await page.close();
  });

  it('has no serious or critical accessibility violation on any page, in either language (axe-core)', async () => {
    const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const findings: string[] = [];
    for (const lang of ['en', 'de']) {
      const signIn = await freshPage();
      await signIn.goto(`${base}/?lang=${lang}`);
      await signIn.locator('form').waitFor();
      const page = await signedIn(approverKey, `/runs?lang=${lang}`);
      for (const [name, path, ready] of [
        ['runs', '/runs', '[data-testid="runs-recent"]'],
        ['run', `/runs/${DEMO_RUN_UUID}`, '[data-testid="run-status"]'],
        ['stats', '/stats', 'svg'],
        ['servers', '/servers', 'svg.recharts-surface'],
        ['server', '/servers/github', 'svg.recharts-surface'],
        ['inbox', '/inbox', '[data-testid="inbox-request"]'],
      ] as const) {
        await page.goto(`${base}${path}?lang=${lang}`);
        await page.locator(ready).first().waitFor();
        findings.push(...(await violations(page, axeSource, `${lang} ${name}`)));
      }
      findings.push(...(await violations(signIn, axeSource, `${lang} sign-in`)));
      // The keys page is the administrator's.
      const keysPage = await signedIn(adminKey, `/keys?lang=${lang}`);
      await keysPage.getByTestId('keys').locator('tbody tr').first().waitFor();
      findings.push(...(await violations(keysPage, axeSource, `${lang} keys`)));
      await Promise.all([signIn.close(), page.close(), keysPage.close()]);
    }
    expect(findings).toEqual([]);
    // Sixteen pages, each read whole by axe: about a second a page on an idle machine, three on a busy one.
  }, 180_000);

  it('loads every screen from this service alone: no request leaves the machine', async () => {
    const page = await signedIn(adminKey, '/');
    for (const path of [
      '/runs',
      `/runs/${DEMO_RUN_UUID}`,
      '/servers',
      '/servers/github',
      '/stats',
      '/graphql',
    ]) {
      await page.goto(`${base}${path}`);
      await page.waitForLoadState('networkidle');
    }
    expect(external).toEqual([]);
    await page.close();
  });
});
