import { readFileSync, writeFileSync } from 'node:fs';
import {
  CONFORMANCE_FILE,
  type Conformance,
  renderTable,
  TABLE_END,
  TABLE_START,
} from '../test/support/agents/conformance.ts';
import { ROOT } from '../test/support/agents/libraries.ts';

/**
 * `npm run otel:table [-- --check]`: writes the conformance table of
 * docs/opentelemetry.md (between its markers) from
 * test/fixtures/otel/conformance.json, which test/api/otel-libraries.test.ts
 * writes (OTEL_CONFORMANCE=write). With --check, fails when the page differs.
 */
const page = `${ROOT}docs/opentelemetry.md`;
const text = readFileSync(page, 'utf8');
const start = text.indexOf(TABLE_START);
const end = text.indexOf(TABLE_END);
if (start < 0 || end < start) throw new Error(`${page} has no conformance markers`);
const conformance = JSON.parse(readFileSync(CONFORMANCE_FILE, 'utf8')) as Conformance;
const made = `${text.slice(0, start + TABLE_START.length)}\n\n${renderTable(conformance)}\n\n${text.slice(end)}`;
if (made === text) {
  console.log('the conformance table matches test/fixtures/otel/conformance.json');
} else if (process.argv.includes('--check')) {
  console.error('the conformance table of docs/opentelemetry.md is stale: run `npm run otel:table`');
  process.exit(1);
} else {
  writeFileSync(page, made);
  console.log('wrote the conformance table of docs/opentelemetry.md');
}
