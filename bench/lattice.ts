import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { NAME_ORDER, OUTCOME_ROLLUPS, type RollupSpan, rollupNameOf } from '../src/domain/outcome-rollups.ts';
import type { OutcomeDimension } from '../src/domain/outcome-stats.ts';
import {
  CASES,
  type Case,
  DAYS,
  type Dimension,
  keptDataSet,
  SHAPES,
  sweepCases,
  wantedShapes,
} from './stats.ts';
import { table } from './support.ts';

/**
 * The choice of rollups as a data-cube lattice (Harinarayan, Rajaraman and
 * Ullman, "Implementing data cubes efficiently", 1996), with time as a
 * hierarchy (hour → day → week → all time): every set of key fields at every
 * unit is a view; a request is answered by the cheapest chosen views that
 * cover it, run_steps itself (the top view) always among them. Sizes are
 * measured on the benchmark's data sets (`npm run bench -- stats`' shapes,
 * kept between runs); the workload is that benchmark's cases, its sweep and
 * the viewer's series. Two selections are printed: the greedy one (the view
 * of the largest benefit per share of the table and fold budgets it takes,
 * until either is spent), and the catalogue (or every view) pruned of the
 * views no request needs to read as few rows as it reads today.
 */

/** A candidate rollup: its key fields (in NAME_ORDER) and its unit of time. */
export interface View {
  span: RollupSpan;
  fields: readonly OutcomeDimension[];
}

export const viewName = (view: View): string =>
  view.fields.length === 0 ? `everyCall${rollupNameOf(view.span, [])}` : rollupNameOf(view.span, view.fields);

/** What was measured of one data set: its calls, and each view's rows. */
export interface Measured {
  shape: string;
  calls: number;
  days: number;
  /** Rows of each view (by viewName) over the whole data set. */
  rows: ReadonlyMap<string, number>;
  /** Rows a batch of the fold writes to each view, per call folded. */
  batchRowsPerCall: ReadonlyMap<string, number>;
}

/** A request of the workload: the fields it needs, the share of the calls its filters keep, its days and bucket. */
export interface Query {
  name: string;
  needed: readonly OutcomeDimension[];
  share: number;
  days: number;
  bucket: 'hour' | 'day' | 'week' | null;
}

/** A call read from run_steps costs about twice a rollup's row: it is joined to its run. */
const RAW_ROW_COST = 2;
/** Edges read by the hour: the planner reads no edge longer than half of the next unit, about half a day in all. */
const EDGE_DAYS = 0.5;
/**
 * The fold's cost of a view a call, in µs: a small part per table and batch
 * (0.5 µs a call: the batch's cells summed and sorted) and 11 µs a row
 * written, twice the rows for a view keyed by every field (its histograms in
 * a table beside it, a row a bucket), after what `npm run bench -- fold`
 * measured per rollup on the many-keys backlog (docs/maintainers/benchmarks.md:
 * 8 to 12 µs a row for most rollups, 21 for one whose indexes hold its counts).
 */
const TABLE_US_PER_CALL = 0.5;
const ROW_US = 11;

export function foldMicros(view: View, measured: readonly Measured[]): number {
  const rows = Math.max(...measured.map((m) => m.batchRowsPerCall.get(viewName(view)) ?? 1));
  return TABLE_US_PER_CALL + ROW_US * rows * tablesOf(view);
}

/** Tables a view takes: those keyed by every field keep their histograms in a second table (a row a bucket). */
export function tablesOf(view: View): number {
  return view.fields.length === NAME_ORDER.length ? 2 : 1;
}

const covers = (view: View, needed: readonly OutcomeDimension[]) =>
  needed.every((field) => view.fields.includes(field));

/** Rows a request reads of the cheapest chosen view of these units covering it over `days` (run_steps if none). */
function partCost(
  query: Query,
  chosen: readonly View[],
  measured: Measured,
  spans: readonly RollupSpan[],
  days: number,
): number {
  if (days <= 0) return 0;
  let best = measured.calls * (days / measured.days) * RAW_ROW_COST;
  for (const view of chosen) {
    if (!spans.includes(view.span) || !covers(view, query.needed)) continue;
    const rows = measured.rows.get(viewName(view)) ?? Number.POSITIVE_INFINITY;
    best = Math.min(best, view.span === 'all' ? rows : (rows * days) / measured.days);
  }
  return best * query.share;
}

/**
 * Rows a request reads with these views, as the planner cuts its range: whole
 * weeks, the days around them, half a day of hours at the edges; a range
 * holding most of the data set as every call of all time less the days
 * outside it; a filtered request reads its share (an index led by that field).
 */
export function queryCost(query: Query, chosen: readonly View[], measured: Measured): number {
  const part = (spans: readonly RollupSpan[], days: number) => partCost(query, chosen, measured, spans, days);
  const range = (days: number): number => {
    if (query.bucket === 'hour') return part(['hour'], days);
    const edges = Math.min(EDGE_DAYS, days);
    if (query.bucket === 'day') return part(['day', 'hour'], days - edges) + part(['hour'], edges);
    const weeks = 7 * Math.floor(days / 7);
    return (
      part(['week', 'day', 'hour'], weeks) +
      part(['day', 'hour'], days - weeks - edges) +
      part(['hour'], edges)
    );
  };
  const direct = range(query.days);
  if (query.bucket !== null || 2 * query.days <= measured.days) return direct;
  // Of all time: its rows, whatever the days (run_steps would read every call).
  const allTime = part(['all'], measured.days);
  const fromAllTime = allTime + (measured.days > query.days ? range(measured.days - query.days) : 0);
  return Math.min(direct, fromAllTime);
}

export interface Step {
  view: View;
  /** Share of the workload's rows (each shape weighed as one) the view saves. */
  benefit: number;
  foldMicros: number;
  tables: number;
  /** The workload's rows left, per shape, as a share of run_steps alone. */
  left: Record<string, number>;
}

/**
 * What a request's rows weigh in the selection: all of them (HRU's sum of rows
 * read) without a budget; with one, the rows past it (a request within its
 * time target gains nothing from a view) and a hundredth of the rest, so that
 * among views that bring no request within budget the one that reads least
 * is still preferred.
 */
export function weighedRows(rows: number, budget: number): number {
  return budget <= 0 ? rows : Math.max(0, rows - budget) + Math.min(rows, budget) / 100;
}

/** Each shape's weighed rows of the whole workload, as a share of what run_steps alone weighs. */
function workloadShare(
  chosen: readonly View[],
  sets: readonly { measured: Measured; queries: readonly Query[] }[],
  budget = 0,
) {
  return sets.map(({ measured, queries }) => {
    const total = (views: readonly View[]) =>
      queries.reduce((sum, q) => sum + weighedRows(queryCost(q, views, measured), budget), 0);
    return total(chosen) / total([]);
  });
}

/**
 * HRU's greedy selection with two budgets: from the views given as `start`,
 * add the candidate of the largest benefit per share of the budgets it takes
 * (its tables of the table limit plus its µs of the fold's limit: HRU's
 * benefit per unit of space, with two kinds of space), while both stay
 * within their limits.
 */
export function selectGreedy(
  candidates: readonly View[],
  sets: readonly { measured: Measured; queries: readonly Query[] }[],
  limits: { tables: number; foldMicros: number; rowsBudget?: number },
  start: readonly View[] = [],
): Step[] {
  const measured = sets.map((set) => set.measured);
  const chosen = [...start];
  const steps: Step[] = [];
  let tables = chosen.reduce((sum, view) => sum + tablesOf(view), 0);
  let fold = chosen.reduce((sum, view) => sum + foldMicros(view, measured), 0);
  let current = workloadShare(chosen, sets, limits.rowsBudget).reduce((a, b) => a + b, 0);
  for (;;) {
    let best: { view: View; benefit: number; ratio: number } | null = null;
    for (const view of candidates) {
      if (chosen.some((each) => viewName(each) === viewName(view))) continue;
      if (tables + tablesOf(view) > limits.tables || fold + foldMicros(view, measured) > limits.foldMicros)
        continue;
      const benefit =
        current - workloadShare([...chosen, view], sets, limits.rowsBudget).reduce((a, b) => a + b, 0);
      const ratio =
        benefit / (tablesOf(view) / limits.tables + foldMicros(view, measured) / limits.foldMicros);
      if (benefit > 1e-9 && (!best || ratio > best.ratio)) best = { view, benefit, ratio };
    }
    if (!best) return steps;
    chosen.push(best.view);
    tables += tablesOf(best.view);
    fold += foldMicros(best.view, measured);
    const shares = workloadShare(chosen, sets, limits.rowsBudget);
    current = shares.reduce((a, b) => a + b, 0);
    steps.push({
      view: best.view,
      benefit: best.benefit / sets.length,
      foldMicros: fold,
      tables,
      left: Object.fromEntries(sets.map((set, i) => [set.measured.shape, shares[i] ?? 0])),
    });
  }
}

/**
 * The other way round: from a set of views (the catalogue, or every view of
 * the lattice), take away, one at a time, the view whose fold costs most among
 * those without which every request still reads no more rows than it does
 * with `boundsOf` (the catalogue), or than the budget if that is more. What is left keeps every read as it is or within its target,
 * with the fewest µs of fold this order finds.
 */
export function pruneViews(
  from: readonly View[],
  sets: readonly { measured: Measured; queries: readonly Query[] }[],
  rowsBudget: number,
  boundsOf: readonly View[] = from,
): View[] {
  const measured = sets.map((set) => set.measured);
  const bounds = sets.map(({ measured: m, queries }) =>
    queries.map((q) => Math.max(rowsBudget, queryCost(q, boundsOf, m))),
  );
  const within = (views: readonly View[]) =>
    sets.every(({ measured: m, queries }, i) =>
      queries.every((q, j) => queryCost(q, views, m) <= (bounds[i]?.[j] ?? 0) * (1 + 1e-9)),
    );
  let kept = [...from];
  for (;;) {
    const removable = kept
      .filter((view) => within(kept.filter((each) => each !== view)))
      .sort((a, b) => foldMicros(b, measured) - foldMicros(a, measured));
    const drop = removable[0];
    if (!drop) return kept;
    kept = kept.filter((each) => each !== drop);
  }
}

/** Every view of the lattice: each set of key fields at each unit. */
export function latticeViews(): View[] {
  const views: View[] = [];
  for (let bits = 0; bits < 1 << NAME_ORDER.length; bits += 1) {
    const fields = NAME_ORDER.filter((_, i) => (bits >> i) & 1);
    for (const span of ['hour', 'day', 'week', 'all'] as const) views.push({ span, fields });
  }
  return views;
}

const FIELD_OF: Record<Dimension, OutcomeDimension> = {
  SERVER: 'server',
  TOOL: 'tool',
  CONFIGURATION: 'configuration',
  OWNER: 'owner',
};
const COLUMN: Record<OutcomeDimension, string> = {
  owner: 'owner',
  configuration: 'configuration',
  server: 'server',
  tool: 'tool',
};
const UNIT: Record<RollupSpan, string> = {
  hour: `date_trunc('hour', at)`,
  day: `date_trunc('day', at)`,
  week: `date_trunc('week', at)`,
  all: '0',
};
/** Calls folded together: the fold's batches come full at 20,000 calls. */
const BATCH_CALLS = 20_000;

/** The rows of every view over a data set, and in a batch of calls drawn at random from it. */
async function measure(shape: string, url: string): Promise<Measured> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TEMP TABLE calls AS
      SELECT r.owner, r.configuration, s.server, s.tool_name AS tool, s.occurred_at AS at
        FROM run_steps s JOIN runs r ON r.id = s.run_id
       WHERE s.kind = 'tool' AND stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) IS NOT NULL`);
    await client.query(
      `CREATE TEMP TABLE batch AS SELECT * FROM calls ORDER BY random() LIMIT ${BATCH_CALLS}`,
    );
    const { rows: counted } = await client.query<{ calls: string; days: number }>(
      `SELECT count(*)::text AS calls, extract(epoch FROM max(at) - min(at)) / 86400 AS days FROM calls`,
    );
    const rows = new Map<string, number>();
    const batchRowsPerCall = new Map<string, number>();
    for (const view of latticeViews()) {
      const key = [...view.fields.map((field) => COLUMN[field]), UNIT[view.span]].join(', ');
      const count = async (from: string) => {
        const { rows: result } = await client.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM (SELECT DISTINCT ${key} FROM ${from}) AS keys`,
        );
        return Number(result[0]?.n ?? 0);
      };
      rows.set(viewName(view), await count('calls'));
      batchRowsPerCall.set(viewName(view), (await count('batch')) / BATCH_CALLS);
    }
    return {
      shape,
      calls: Number(counted[0]?.calls ?? 0),
      days: Math.max(1, Math.round(Number(counted[0]?.days ?? DAYS))),
      rows,
      batchRowsPerCall,
    };
  } finally {
    await client.end();
  }
}

/**
 * The measurement of a data set, or with BENCH_REUSE=1 the one an earlier run
 * left in the temporary directory (the data sets are kept between runs too).
 */
async function measuredOf(shape: string, url: string, end: Date): Promise<Measured> {
  // Named by the data set's end, which a data set seeded again does not share: never another's.
  const file = path.join(os.tmpdir(), `runledger-lattice-${shape}-${end.getTime()}.json`);
  if (process.env.BENCH_REUSE === '1' && fs.existsSync(file)) {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Omit<Measured, 'rows' | 'batchRowsPerCall'> & {
      rows: [string, number][];
      batchRowsPerCall: [string, number][];
    };
    return { ...saved, rows: new Map(saved.rows), batchRowsPerCall: new Map(saved.batchRowsPerCall) };
  }
  const measured = await measure(shape, url);
  fs.writeFileSync(
    file,
    JSON.stringify({
      ...measured,
      rows: [...measured.rows],
      batchRowsPerCall: [...measured.batchRowsPerCall],
    }),
  );
  return measured;
}

/** The workload: the stats benchmark's cases, as the fields and share of the calls each reads. */
async function workloadOf(url: string, cases: readonly Case[]): Promise<Query[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // The benchmark's own-runs actor is the busiest owner; its server filter is server_1.
    const { rows } = await client.query<{ owner: number; server: number }>(
      `WITH c AS (SELECT r.owner, s.server FROM run_steps s JOIN runs r ON r.id = s.run_id WHERE s.kind = 'tool')
       SELECT (SELECT max(n) FROM (SELECT count(*) AS n FROM c GROUP BY owner) AS o)::float8 / count(*) AS owner,
              count(*) FILTER (WHERE server = 'server_1')::float8 / count(*) AS server
         FROM c`,
    );
    const shares = rows[0] ?? { owner: 1, server: 1 };
    return cases.map((c) => ({
      name: c.name,
      needed: [
        ...new Set([
          ...c.groupBy.map((field) => FIELD_OF[field]),
          ...(c.restricted ? (['owner'] as const) : []),
          ...(c.server ? (['server'] as const) : []),
        ]),
      ],
      share: (c.restricted ? shares.owner : 1) * (c.server ? shares.server : 1),
      days: c.days,
      bucket: c.bucket === null ? null : (c.bucket.toLowerCase() as 'hour' | 'day' | 'week'),
    }));
  } finally {
    await client.end();
  }
}

/** The catalogue's rollups as views of the lattice. */
const catalogueViews = (): View[] =>
  OUTCOME_ROLLUPS.map((rollup) => ({
    span: rollup.grain,
    fields: NAME_ORDER.filter((field) => rollup.dimensions.includes(field)),
  }));

/**
 * The viewer's charts beside the benchmark's cases: the daily series of 30
 * days and the hourly ones of 7 by each field, as its statistics page draws
 * them.
 */
const VIEWER_SERIES: Case[] = (['SERVER', 'TOOL', 'CONFIGURATION', 'OWNER'] as const).flatMap((field) =>
  (
    [
      ['DAY', 30],
      ['HOUR', 7],
    ] as const
  ).map(([bucket, days]) => ({
    name: `${bucket.toLowerCase() === 'day' ? 'daily' : 'hourly'} series by ${field.toLowerCase()}, ${days} days`,
    groupBy: [field],
    bucket,
    offset: 0,
    days,
    restricted: false,
    server: false,
    large: true,
  })),
);

/**
 * The rows a request may read within its 100 ms: the benchmark's slowest
 * cases read about 60,000 to 75,000 (the model's count) in 100 to 130 ms on
 * this machine; half of that leaves room for the rest of a request.
 */
const ROWS_WITHIN_TARGET = 30_000;

const format = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(2));

export async function benchLattice(): Promise<void> {
  const tableLimit = Number(process.env.BENCH_LATTICE_TABLES ?? 14);
  const foldLimit = Number(process.env.BENCH_LATTICE_FOLD_US ?? 125);
  const rowsBudget = Number(process.env.BENCH_LATTICE_BUDGET_ROWS ?? ROWS_WITHIN_TARGET);
  console.log(
    `\n## rollups chosen on the lattice: at most ${tableLimit} tables and ${foldLimit} µs of fold a call, weighing the rows a request reads past ${rowsBudget.toLocaleString('en')}`,
  );
  const sets: { measured: Measured; queries: Query[] }[] = [];
  for (const shape of SHAPES.filter((s) => wantedShapes.includes(s.name))) {
    const started = Date.now();
    const { url, end } = await keptDataSet(shape);
    const measured = await measuredOf(shape.name, url, end);
    sets.push({ measured, queries: await workloadOf(url, [...CASES, ...sweepCases(), ...VIEWER_SERIES]) });
    console.log(
      `  ${shape.name}: ${measured.calls.toLocaleString('en')} calls over ${measured.days} days measured (${((Date.now() - started) / 1000).toFixed(0)} s)`,
    );
  }
  const measured = sets.map((set) => set.measured);
  console.log('\n  every view: its rows, and the rows a batch of 20,000 calls writes to it per call');
  table(
    latticeViews().map((view) => ({
      view: viewName(view),
      ...Object.fromEntries(
        measured.flatMap((m) => [
          [`${m.shape} rows`, format(m.rows.get(viewName(view)) ?? 0)],
          [`${m.shape} rows a call`, format(m.batchRowsPerCall.get(viewName(view)) ?? 0)],
        ]),
      ),
      'fold µs a call': format(foldMicros(view, measured)),
    })),
  );
  const steps = selectGreedy(latticeViews(), sets, {
    tables: tableLimit,
    foldMicros: foldLimit,
    rowsBudget,
  });
  console.log('\n  the greedy selection, step by step (rows left: share of what run_steps alone would read)');
  table(
    steps.map((step) => ({
      view: viewName(step.view),
      'benefit (share of rows)': step.benefit.toFixed(4),
      tables: step.tables,
      'fold µs a call': format(step.foldMicros),
      ...Object.fromEntries(
        Object.entries(step.left).map(([shape, left]) => [`${shape} rows left`, left.toFixed(4)]),
      ),
    })),
  );
  // BENCH_LATTICE_SET=name,name: a set of views to weigh against today's in place of the greedy's.
  const named = process.env.BENCH_LATTICE_SET?.split(',').map((name) => name.trim());
  const unknown = named?.filter((name) => !latticeViews().some((view) => viewName(view) === name)) ?? [];
  if (unknown.length > 0) throw new Error(`BENCH_LATTICE_SET: no view named ${unknown.join(', ')}`);
  const chosen = named
    ? latticeViews().filter((view) => named.includes(viewName(view)))
    : steps.map((step) => step.view);
  if (named)
    console.log(
      `\n  the set given (BENCH_LATTICE_SET): ${chosen.reduce((sum, view) => sum + tablesOf(view), 0)} tables, ${format(chosen.reduce((sum, view) => sum + foldMicros(view, measured), 0))} µs of fold a call; rows left ${workloadShare(
        chosen,
        sets,
        rowsBudget,
      )
        .map((share, i) => `${sets[i]?.measured.shape} ${share.toFixed(4)}`)
        .join(', ')}`,
    );
  const current = catalogueViews();
  const pruned = pruneViews(current, sets, rowsBudget);
  console.log(
    `\n  the catalogue pruned (no request reading more rows than today, or than ${rowsBudget.toLocaleString('en')} if that is more): ${pruned.length} rollups in ${pruned.reduce((sum, view) => sum + tablesOf(view), 0)} tables, ${format(pruned.reduce((sum, view) => sum + foldMicros(view, measured), 0))} µs of fold a call; rows left ${workloadShare(
      pruned,
      sets,
      rowsBudget,
    )
      .map((share, i) => `${sets[i]?.measured.shape} ${share.toFixed(4)}`)
      .join(', ')}`,
  );
  console.log(`  kept: ${pruned.map(viewName).join(', ')}`);
  const fromLattice = pruneViews(latticeViews(), sets, rowsBudget, current);
  console.log(
    `\n  every view of the lattice pruned under the same bounds: ${fromLattice.length} rollups in ${fromLattice.reduce((sum, view) => sum + tablesOf(view), 0)} tables, ${format(fromLattice.reduce((sum, view) => sum + foldMicros(view, measured), 0))} µs of fold a call`,
  );
  console.log(`  kept: ${fromLattice.map(viewName).join(', ')}`);
  console.log(
    `  taken away: ${current
      .filter((view) => !pruned.includes(view))
      .map(viewName)
      .join(', ')}`,
  );
  console.log(
    `\n  the catalogue today: ${current.reduce((sum, view) => sum + tablesOf(view), 0)} tables, ${format(current.reduce((sum, view) => sum + foldMicros(view, measured), 0))} µs of fold a call (this model); rows left ${workloadShare(
      current,
      sets,
      rowsBudget,
    )
      .map((share, i) => `${sets[i]?.measured.shape} ${share.toFixed(4)}`)
      .join(', ')}`,
  );
  // The selection against the bounds the pruning keeps: which requests it makes read more.
  const worse = sets.flatMap(({ measured: m, queries }) =>
    queries.flatMap((q) => {
      const [today, then] = [queryCost(q, current, m), queryCost(q, chosen, m)];
      return then > Math.max(rowsBudget, today) * (1 + 1e-9) ? [{ shape: m.shape, q, today, then }] : [];
    }),
  );
  const cases = sets.reduce((sum, set) => sum + set.queries.length, 0);
  console.log(
    `  the selection reads more rows than today, past ${rowsBudget.toLocaleString('en')}, in ${worse.length} of ${cases} requests; the 10 worst:`,
  );
  table(
    [...worse]
      .sort((a, b) => b.then / b.today - a.then / a.today)
      .slice(0, 10)
      .map(({ shape, q, today, then }) => ({
        shape,
        query: q.name,
        today: format(today),
        chosen: format(then),
      })),
  );
  console.log('  rows each case reads: the catalogue today against the selection');
  table(
    sets.flatMap(({ measured: m, queries }) =>
      queries.map((q) => ({
        shape: m.shape,
        query: q.name,
        today: format(queryCost(q, current, m)),
        chosen: format(queryCost(q, chosen, m)),
      })),
    ),
  );
}
