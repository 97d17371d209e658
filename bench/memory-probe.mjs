// Loaded into the service by the benchmarks only (node --import): on SIGUSR2 it
// prints the process's memory and CPU time so far as one JSON line, for the benchmark to read.
process.on('SIGUSR2', () => {
  const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
  const { user, system } = process.cpuUsage();
  const cpuMicros = user + system;
  process.stdout.write(
    `memory ${JSON.stringify({ rss, heapTotal, heapUsed, external, arrayBuffers, cpuMicros })}\n`,
  );
});
