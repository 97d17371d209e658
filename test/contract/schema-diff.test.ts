import { describe, expect, it } from 'vitest';
import { compareSchemas, readChangelog } from '../../scripts/schema-compat.ts';

const before = 'type Query { run(uuid: String!): Run }\ntype Run { id: ID!  tokens: Int!  note: String }';
const after = 'type Query { run(uuid: String!): Run }\ntype Run { id: ID!  tokens: Float!  label: String }';

const changelog = (listed: string) => `# Changelog

## 0.3.0 (unreleased)

${listed}

## 0.2.0 (2026-12-02, commit 8af0440)

- \`Run.note\`: listed under a release, which does not count for what is unreleased.
`;

describe('schema:diff, breaking changes against the changelog', () => {
  it('reads the unreleased section and the latest release with its commit', () => {
    const sections = readChangelog(changelog('- nothing yet'));
    expect(sections.unreleased?.version).toBe('0.3.0');
    expect(sections.released).toEqual({ version: '0.2.0', commit: '8af0440' });
  });

  it('names every breaking change the unreleased section does not list', async () => {
    const { breaking, unlisted } = await compareSchemas(before, after, changelog('- nothing yet'));
    expect(breaking.map((change) => change.path).sort()).toEqual(['Run.note', 'Run.tokens']);
    expect(unlisted.map((change) => change.path).sort()).toEqual(['Run.note', 'Run.tokens']);
  });

  it('accepts breaking changes listed by their path, and never counts additions', async () => {
    const { changes, unlisted } = await compareSchemas(
      before,
      after,
      changelog('- `Run.tokens`: a Float now.\n- `Run.note`: removed.'),
    );
    expect(unlisted).toEqual([]);
    expect(changes.map((change) => change.path)).toContain('Run.label');
  });
});
