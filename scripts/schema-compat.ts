import { type Change, CriticalityLevel, diff } from '@graphql-inspector/core';
import { buildSchema } from 'graphql';

export interface ChangelogSections {
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

export interface SchemaComparison {
  changes: Change[];
  breaking: Change[];
  /** Breaking changes the unreleased section of the changelog does not name by their path. */
  unlisted: Change[];
}

/** What changed between two SDLs, and which breaking changes the changelog leaves unnamed. */
export async function compareSchemas(
  before: string,
  after: string,
  changelog: string,
): Promise<SchemaComparison> {
  const changes = await diff(buildSchema(before), buildSchema(after));
  const listed = readChangelog(changelog).unreleased?.text ?? '';
  const breaking = changes.filter((change) => change.criticality.level === CriticalityLevel.Breaking);
  const unlisted = breaking.filter((change) => !change.path || !listed.includes(`\`${change.path}\``));
  return { changes, breaking, unlisted };
}
