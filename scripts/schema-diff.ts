// Compares schema.graphql with the schema at a git ref (default: the latest
// release) and fails on a breaking change that CHANGELOG.md does not list under
// the unreleased version.
//
//   npm run schema:diff                  # against the latest release
//   npm run schema:diff -- --base <ref>  # against any commit, tag or branch
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type ChangelogSections, compareSchemas, readChangelog } from './schema-compat.ts';

const root = new URL('..', import.meta.url);
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

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

const changelogText = readFileSync(new URL('CHANGELOG.md', root), 'utf8');
const changelog = readChangelog(changelogText);
const baseArg = process.argv.indexOf('--base');
const base =
  baseArg > 0
    ? (process.argv[baseArg + 1] ?? '')
    : changelog.released
      ? releaseCommit(changelog.released)
      : 'main';
if (!base) throw new Error('--base needs a git ref');

const { changes, breaking, unlisted } = await compareSchemas(
  git('show', `${base}:schema.graphql`),
  readFileSync(new URL('schema.graphql', root), 'utf8'),
  changelogText,
);

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
