// The reference under docs/reference is made from the code, and every link of the docs resolves:
// `npm run docs:check` fails on either, and so does this test.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../../src/environment.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the generated reference and the links', () => {
  it('is what the code makes now, and every relative link and anchor resolves', async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'docs:check'], { cwd: root, timeout: 120_000 });
    expect(stdout).toContain('docs/reference matches the code');
  }, 150_000);

  it('lists every environment variable the service reads, and reads none that it does not list', async () => {
    const listed = readFileSync(`${root}docs/reference/environment.md`, 'utf8');
    for (const name of Object.keys(ENVIRONMENT)) expect(listed).toContain(`| \`${name}\` |`);
    // Every read of the environment in src/ goes through src/environment.ts by a listed name.
    const { stdout } = await run(
      'git',
      ['grep', '-nE', String.raw`process\.env|\benv(\.[A-Z]|\[)`, '--', 'src'],
      {
        cwd: root,
      },
    );
    const reads = stdout
      .split('\n')
      .filter((line) => line !== '')
      .filter((line) => !line.startsWith('src/environment.ts:'))
      // A default parameter (`env = process.env`) hands the environment to a reader that asks environmentValue.
      .filter((line) => !/env(: [\w.<>, |[\]]+)? = process\.env/.test(line))
      // The variables an operator names for a stdio server or a header (`env:NAME`) are not settings.
      .filter((line) => !/process\.env\[(name|reference\.variable)\]|\benv\[name\] = value/.test(line));
    expect(reads).toEqual([]);
  });
});
