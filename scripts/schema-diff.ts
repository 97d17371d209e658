// Compares schema.graphql with the schema at a git ref (default: the latest
// release) and fails on a breaking change that CHANGELOG.md does not list under
// the unreleased version.
//
//   npm run schema:diff                  # against the latest release
//   npm run schema:diff -- --base <ref>  # against any commit, tag or branch
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import { buildSchema } from 'graphql';

const root = new URL('..', import.meta.url);
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

interface ChangelogSections {
  unreleased: { version: string; text: string } | undefined;
  released: { version: string; commit: string | undefined } | undefined;
}

/**
 * `## 0.2.0 (unreleased)` holds what is not released yet; the first other
 * `## x.y.z` is the latest release, and may name its commit (`commit 8af0440`),
 * since a clone need not carry tags.
 */
export function readChangelog(text: string): ChangelogSections {
  const sections = text.split(/^## /m).slice(1);
  let unreleased: ChangelogSections['unreleased'];
  let released: ChangelogSections['released'];
  for (const section of sections) {
    const heading = section.slice(0, section.indexOf('\n'));
    const version = /^v?(\d+\.\d+\.\d+)/.exec(heading)?.[1];
    if (!version) continue;
    if (/unreleased/i.test(heading)) unreleased ??= { version, text: section };
    else released ??= { version, commit: /\bcommit ([0-9a-f]{7,40})\b/.exec(heading)?.[1] };
  }
  return { unreleased, released };
}

function versionAt(ref: string): string | undefined {
  try {
    return (JSON.parse(git('show', `${ref}:package.json`)) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * The release's tag if there is one; else the commit its heading names; else
 * the last commit whose package.json still had the released version.
 */
function releaseCommit({ version: released, commit }: NonNullable<ChangelogSections['released']>): string {
  try {
    return git('rev-parse', '--verify', '--quiet', `refs/tags/v${released}^{commit}`);
  } catch {
    // No tag in this clone.
  }
  if (commit) return git('rev-parse', '--verify', `${commit}^{commit}`);
  if (versionAt('HEAD') === released) return git('rev-parse', 'HEAD');
  for (const commit of git('log', '--format=%H', '--', 'package.json').split('\n').filter(Boolean)) {
    if (versionAt(commit) !== released && versionAt(`${commit}^`) === released)
      return git('rev-parse', `${commit}^`);
  }
  throw new Error(`cannot find release ${released}: no tag v${released} and no commit with that version`);
}

const changelog = readChangelog(readFileSync(new URL('CHANGELOG.md', root), 'utf8'));
const baseArg = process.argv.indexOf('--base');
const base =
  baseArg > 0
    ? (process.argv[baseArg + 1] ?? '')
    : changelog.released
      ? releaseCommit(changelog.released)
      : 'main';
if (!base) throw new Error('--base needs a git ref');

const before = buildSchema(git('show', `${base}:schema.graphql`));
const after = buildSchema(readFileSync(new URL('schema.graphql', root), 'utf8'));
const changes = await diff(before, after);
const listed = changelog.unreleased?.text ?? '';
const breaking = changes.filter((change) => change.criticality.level === CriticalityLevel.Breaking);
const unlisted = breaking.filter((change) => !change.path || !listed.includes(`\`${change.path}\``));

console.log(
  `schema.graphql against ${base.slice(0, 12)}: ${changes.length} changes, ${breaking.length} breaking`,
);
for (const change of changes) {
  const mark = unlisted.includes(change) ? 'UNLISTED BREAKING' : change.criticality.level;
  console.log(`  ${mark.padEnd(17)} ${change.path ?? ''}: ${change.message}`);
}
if (unlisted.length > 0) {
  const section = changelog.unreleased
    ? `${changelog.unreleased.version} (unreleased)`
    : 'an unreleased version';
  console.error(
    `\n${unlisted.length} breaking change(s) not listed in CHANGELOG.md under ${section}: name each by its path in backticks, e.g. \`${unlisted[0]?.path}\``,
  );
  process.exit(1);
}
