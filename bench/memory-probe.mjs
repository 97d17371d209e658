// Loaded into the service by the benchmarks only (node --import): on SIGUSR2 it
// prints the process's memory as one JSON line, for the benchmark to read.
process.on('SIGUSR2', () => {
  const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
  process.stdout.write(`memory ${JSON.stringify({ rss, heapTotal, heapUsed, external, arrayBuffers })}\n`);
});
