import { benchFold } from './fold.ts';
import { benchHostile } from './hostile.ts';
import { benchLattice } from './lattice.ts';
import { benchLive } from './live.ts';
import { benchMcp } from './mcp.ts';
import { benchOtlp } from './otlp.ts';
import { benchRecording } from './record.ts';
import { benchStart } from './start.ts';
import { benchStats } from './stats.ts';
import { dropCreatedDatabases } from './support.ts';
import { benchTimeline } from './timeline.ts';

// npm run bench [-- record | fold | stats | lattice | start | otlp | mcp | live | timeline | hostile]: every benchmark, or the ones named.
const benchmarks: Record<string, () => Promise<void>> = {
  record: benchRecording,
  fold: benchFold,
  stats: benchStats,
  lattice: benchLattice,
  start: benchStart,
  otlp: benchOtlp,
  timeline: benchTimeline,
  mcp: benchMcp,
  live: benchLive,
  hostile: benchHostile,
};

const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const unknown = wanted.filter((name) => !(name in benchmarks));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(benchmarks).join(', ')}`);
  process.exit(2);
}
try {
  for (const name of wanted.length > 0 ? wanted : Object.keys(benchmarks)) {
    await benchmarks[name]?.();
  }
} finally {
  // Said, not thrown: a failure to drop must not hide the benchmark's own (PostgreSQL gone, say).
  await dropCreatedDatabases().catch((error: unknown) =>
    console.error(`could not drop the benchmark's databases: ${String(error)}`),
  );
}
