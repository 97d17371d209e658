import { readFileSync } from 'node:fs';

/**
 * Where a service's CPU went, from a V8 CPU profile (`--cpu-prof`, as
 * BENCH_CPU_PROF writes one): self time summed by package (node_modules/<name>),
 * by the service's own layers (src/<layer>), Node's internals, the garbage
 * collector, and idle, each as a share of the busy time; then the top functions.
 *
 * npx tsx bench/cpu-profile.ts <file.cpuprofile> [top]
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** What a frame belongs to: a package, a layer of the service, Node itself, or a V8 pseudo-frame. */
export function placeOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(program)') return '(program)';
    return `(native) ${functionName || 'anonymous'}`;
  }
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules?.[1]) return modules[1];
  const own = /\/(src|dist\/src)\/([^/]+)/.exec(url);
  if (own?.[2]) return `runledger src/${own[2].replace(/\.(ts|js)$/, '')}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url;
}

export function summarize(profile: Profile): {
  busyMs: number;
  places: [string, number][];
  functions: [string, number][];
} {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMs = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) {
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  let busyMs = 0;
  for (const [id, ms] of selfMs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    const place = placeOf(frame.url, frame.functionName);
    places.set(place, (places.get(place) ?? 0) + ms);
    if (place !== '(idle)') busyMs += ms;
    const name = `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + ms);
  }
  const sorted = (map: Map<string, number>) =>
    [...map].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]);
  return { busyMs, places: sorted(places), functions: sorted(functions) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, top = '25'] = process.argv.slice(2);
  if (!file) throw new Error('npx tsx bench/cpu-profile.ts <file.cpuprofile> [top]');
  const { busyMs, places, functions } = summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile);
  const share = (ms: number) => `${((ms / busyMs) * 100).toFixed(1).padStart(5)} %`;
  console.log(`busy ${busyMs.toFixed(0)} ms\n\nby place (self time):`);
  for (const [place, ms] of places.slice(0, Number(top))) console.log(`${share(ms)}  ${place}`);
  console.log('\ntop functions (self time):');
  for (const [name, ms] of functions.slice(0, Number(top))) console.log(`${share(ms)}  ${name}`);
}
