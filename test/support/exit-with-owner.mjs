// Loaded into every node process a test starts (test/support/processes.ts, through NODE_OPTIONS): once
// the test process that owns it is gone, killed before it could clean up, this process kills its process
// group (itself and what it started) rather than live on as an orphan. Plain JavaScript, so that it loads
// under plain node as well as under tsx.
const owner = Number(process.env.TEST_PROCESS_OWNER);

if (Number.isSafeInteger(owner) && owner > 0 && owner !== process.pid) {
  const timer = setInterval(() => {
    try {
      process.kill(owner, 0);
    } catch (error) {
      // 0: the whole process group of this process, which processes.ts made for the one it started.
      if (error.code === 'ESRCH') process.kill(0, 'SIGKILL');
    }
  }, 250);
  // Never what keeps the process alive.
  timer.unref();
}
