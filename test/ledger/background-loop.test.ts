import { describe, expect, it } from 'vitest';
import { BackgroundLoop } from '../../src/ledger/background-loop.ts';

const until = async (done: () => boolean) => {
  for (let i = 0; i < 500 && !done(); i += 1) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(done()).toBe(true);
};

describe('the background loop of the fold and the request expiry', () => {
  it('runs the next pass at once while work is left, then waits its interval', async () => {
    const passes: number[] = [];
    const loop = new BackgroundLoop({
      name: 'working',
      intervalMs: 60_000,
      retryMs: 60_000,
      // Three passes leave work behind, the fourth does not: then the loop waits a minute.
      pass: async () => {
        passes.push(Date.now());
        return passes.length < 4;
      },
    });
    loop.start();
    await until(() => passes.length === 4);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(passes).toHaveLength(4);
    await loop.stop();
  });

  it('logs a failure once, by name and code, retries, and says when it works again', async () => {
    const lines: string[] = [];
    let calls = 0;
    const loop = new BackgroundLoop({
      name: 'folding statistics',
      intervalMs: 60_000,
      retryMs: 1,
      log: (line) => lines.push(line),
      pass: async () => {
        calls += 1;
        if (calls <= 3) throw Object.assign(new Error('password=hunter2 rejected'), { code: 'ECONNREFUSED' });
        return false;
      },
    });
    loop.start();
    await until(() => lines.length === 2);
    await loop.stop();
    expect(lines).toEqual([
      expect.stringMatching(/^folding statistics failed \(Error, .*ECONNREFUSED\); retrying$/),
      'folding statistics again',
    ]);
    expect(lines.join('\n')).not.toContain('hunter2');
    expect(calls).toBe(4);
  });

  it('stops after the pass in flight has ended, and runs none after', async () => {
    let release: () => void = () => {};
    let started = 0;
    let ended = 0;
    const loop = new BackgroundLoop({
      name: 'slow',
      intervalMs: 1,
      retryMs: 1,
      pass: async () => {
        started += 1;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        ended += 1;
        return true;
      },
    });
    loop.start();
    await until(() => started === 1);
    const stopping = loop.stop();
    release();
    await stopping;
    expect([started, ended]).toEqual([1, 1]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(started).toBe(1);
  });
});
