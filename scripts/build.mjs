// Compiles the service to plain JavaScript in dist/, for `npm start` to run with
// node alone. With --if-stale it does nothing when dist/ is newer than every
// source it is built from, so a start after `npm ci` (which builds) is immediate.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.built');
const sources = ['src', 'drizzle', 'migrations', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function newestChange(path) {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return readdirSync(path).reduce(
    (newest, entry) => Math.max(newest, newestChange(join(path, entry))),
    info.mtimeMs,
  );
}

const ifStale = process.argv.includes('--if-stale');
if (ifStale && existsSync(stamp)) {
  const sourceTime = Math.max(...sources.map((source) => newestChange(join(root, source))));
  if (statSync(stamp).mtimeMs >= sourceTime) process.exit(0);
}

const began = Date.now();
console.log('building dist/ from TypeScript…');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (result.status !== 0) {
  console.error('the build failed: see the errors above');
  process.exit(result.status ?? 1);
}
// The migrator reads its SQL beside the compiled code, as it does beside the source.
rmSync(join(dist, 'migrations'), { recursive: true, force: true });
cpSync(join(root, 'migrations'), join(dist, 'migrations'), { recursive: true });
// So does the OTLP decoder read OpenTelemetry's .proto files.
rmSync(join(dist, 'src/otlp/proto'), { recursive: true, force: true });
cpSync(join(root, 'src/otlp/proto'), join(dist, 'src/otlp/proto'), { recursive: true });
mkdirSync(dist, { recursive: true });
writeFileSync(stamp, `${new Date().toISOString()}\n`);
console.log(`built dist/ in ${((Date.now() - began) / 1000).toFixed(1)} s`);
