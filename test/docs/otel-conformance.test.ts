// The conformance table of docs/opentelemetry.md is made from the results of
// test/api/otel-libraries.test.ts (test/fixtures/otel/conformance.json): it cannot drift from them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CONFORMANCE_FILE,
  type Conformance,
  renderTable,
  TABLE_END,
  TABLE_START,
} from '../support/agents/conformance.ts';
import { ROOT } from '../support/agents/libraries.ts';

describe('the agent libraries conformance table', () => {
  it('is the table npm run otel:table makes from the recorded results', () => {
    const page = readFileSync(`${ROOT}docs/opentelemetry.md`, 'utf8');
    const start = page.indexOf(TABLE_START);
    const end = page.indexOf(TABLE_END);
    expect(start, 'the markers of the table').toBeGreaterThan(0);
    expect(end).toBeGreaterThan(start);
    const conformance = JSON.parse(readFileSync(CONFORMANCE_FILE, 'utf8')) as Conformance;
    expect(Object.keys(conformance).length).toBeGreaterThan(0);
    expect(page.slice(start + TABLE_START.length, end).trim()).toBe(renderTable(conformance));
  });
});
