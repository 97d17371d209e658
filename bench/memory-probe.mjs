// Loaded into the service by the benchmarks only (node --import): on SIGUSR2 it
// prints the process's memory and CPU time so far, and how long its event loop
// was held up since the last report, as one JSON line, for the benchmark to read.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

process.on('SIGUSR2', () => {
  const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
  const { user, system } = process.cpuUsage();
  const cpuMicros = user + system;
  const loopDelayMaxMs = loop.max / 1e6;
  const loopDelayP99Ms = loop.percentile(99) / 1e6;
  loop.reset();
  process.stdout.write(
    `memory ${JSON.stringify({ rss, heapTotal, heapUsed, external, arrayBuffers, cpuMicros, loopDelayMaxMs, loopDelayP99Ms })}\n`,
  );
});
