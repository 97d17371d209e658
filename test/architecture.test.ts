// The import rules of docs/architecture.md ("Layout"), held by a test: each layer imports only what sits below it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

interface Import {
  /** Where the import leads, relative to the repository root (`src/db/runs.ts`), or the package name. */
  target: string;
  /** As written in the file. */
  specifier: string;
  /** `import type`, or every name imported is a type: erased at run time. */
  typeOnly: boolean;
}

/** Every import, re-export and dynamic import() of one file. */
function importsOf(file: string, source: string): Import[] {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, kind);
  const found: Import[] = [];
  const add = (specifier: string, typeOnly: boolean) => {
    const target = specifier.startsWith('.')
      ? posix.normalize(posix.join(posix.dirname(file), specifier))
      : specifier;
    found.push({ target, specifier, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const onlyTypeNames =
        !clause?.name &&
        bindings !== undefined &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((element) => element.isTypeOnly);
      add(node.moduleSpecifier.text, Boolean(clause?.isTypeOnly) || onlyTypeNames);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return found;
}

/**
 * What src/graphql may import at run time from src/db: reads only. Loaders and
 * the run list read runs and steps; the context reads the API key behind a
 * request; errors recognise a database outage. Every write goes through
 * src/ledger, and so do statistics (src/db/outcome-stats.ts), whose one
 * pipeline lives there. Row types (`import type`) may come from any repository.
 */
const READS_FOR_GRAPHQL: ReadonlySet<string> = new Set([
  'src/db/runs.ts',
  'src/db/steps.ts',
  'src/db/api-keys.ts',
  'src/db/faults.ts',
]);

/**
 * What src/otlp may import at run time from src/db: the API key behind a
 * request, and telling a database outage apart. Spans are recorded through
 * src/ledger (ingest-spans), under the same rules as every entry point.
 */
const READS_FOR_OTLP: ReadonlySet<string> = new Set(['src/db/api-keys.ts', 'src/db/faults.ts']);

const ours = (target: string) =>
  target.startsWith('src/') || target.startsWith('drizzle/') || target.startsWith('web/');
const inside = (target: string, dir: string) => target.startsWith(`${dir}/`);

/** One rule: which files it governs and why an import breaks it (null: it does not). */
interface Rule {
  layer: string;
  broken: (imported: Import, file: string) => string | null;
}

/**
 * The channel between instances (LISTEN/NOTIFY, or memory) is opened by the
 * entry point and used by one module of the use cases, which every writer and
 * stream goes through: no other code notifies or listens on its own.
 */
const CHANNEL = 'src/db/notifications.ts';
const CHANNEL_USERS: ReadonlySet<string> = new Set([
  'src/ledger/run-events.ts',
  'src/app.ts',
  'src/server.ts',
]);

const RULES: Rule[] = [
  {
    // The viewer runs in the browser and speaks to the service only over GraphQL; it shares the pure
    // rules and the one label table of src/domain.
    layer: 'web',
    broken: (i) =>
      ours(i.target) && !inside(i.target, 'web') && !inside(i.target, 'src/domain')
        ? 'web/ imports nothing of the service but src/domain: it reaches the rest over GraphQL'
        : null,
  },
  {
    layer: 'src',
    broken: (i, file) =>
      i.target === CHANNEL && !i.typeOnly && !CHANNEL_USERS.has(file)
        ? 'the channel between instances is used through src/ledger/run-events.ts (opened by the entry point)'
        : null,
  },
  {
    layer: 'src/domain',
    broken: (i) =>
      ours(i.target) && !inside(i.target, 'src/domain')
        ? 'src/domain imports nothing of ours outside it'
        : null,
  },
  {
    layer: 'src/db',
    broken: (i) =>
      ['src/graphql', 'src/ledger', 'src/mcp'].some((dir) => inside(i.target, dir))
        ? 'src/db knows tables and SQL, not GraphQL, the use cases or MCP'
        : null,
  },
  {
    layer: 'src/mcp',
    broken: (i) =>
      ['src/graphql', 'src/ledger', 'src/db'].some((dir) => inside(i.target, dir))
        ? 'src/mcp is an adapter: it hands domain values to the ledger and knows nothing above it'
        : null,
  },
  {
    layer: 'src/ledger',
    broken: (i) =>
      inside(i.target, 'src/graphql') ? 'src/ledger serves every entry point, never GraphQL' : null,
  },
  {
    layer: 'src/otlp',
    broken: (i) => {
      if (['src/graphql', 'src/mcp'].some((dir) => inside(i.target, dir))) {
        return 'src/otlp is an adapter beside GraphQL and MCP: it reaches neither';
      }
      if (inside(i.target, 'src/db') && !i.typeOnly && !READS_FOR_OTLP.has(i.target)) {
        return 'src/otlp records only through src/ledger (reads: see READS_FOR_OTLP)';
      }
      return null;
    },
  },
  {
    layer: 'src/graphql',
    broken: (i) => {
      if (inside(i.target, 'src/mcp')) return 'src/graphql reaches MCP only through src/ledger';
      if (inside(i.target, 'src/db') && !i.typeOnly && !READS_FOR_GRAPHQL.has(i.target)) {
        return 'src/graphql writes only through src/ledger (reads: see READS_FOR_GRAPHQL)';
      }
      return null;
    },
  },
];

/** Every broken rule, as "file imports 'specifier': why", for files given by repository path. */
function importViolations(files: ReadonlyMap<string, string>): string[] {
  const violations: string[] = [];
  for (const [file, source] of files) {
    for (const rule of RULES.filter((r) => inside(file, r.layer))) {
      for (const imported of importsOf(file, source)) {
        const why = rule.broken(imported, file);
        if (why) violations.push(`${file} imports '${imported.specifier}': ${why}`);
      }
    }
  }
  return violations;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    if (path === 'web/src/gql') return [];
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

describe('architecture', () => {
  it('finds and names every kind of broken import in a planted example', () => {
    const planted = new Map([
      ['src/domain/a.ts', "import { x } from '../db/runs.ts';\nimport { createHash } from 'node:crypto';"],
      ['src/domain/b.ts', "export { y } from '../../drizzle/schema.ts';"],
      ['src/db/c.ts', "import type { Context } from '../graphql/context.ts';"],
      [
        'src/db/d.ts',
        "const m = await import('../ledger/start-run.ts');\nimport { McpFault } from '../mcp/transport-error.ts';",
      ],
      [
        'src/ledger/e.ts',
        "import { badUserInput } from '../graphql/errors.ts';\nimport { lockRun } from '../db/run-writes.ts';",
      ],
      ['src/graphql/f.ts', "import { callMcpTool } from '../mcp/tool-adapter.ts';"],
      ['src/graphql/types/g.ts', "import { appendLegacyToolStep } from '../../db/run-writes.ts';"],
      [
        'src/graphql/types/h.ts',
        "import type { McpServerRow } from '../../db/mcp-servers.ts';\nimport { type StepRow } from '../../db/steps.ts';\nimport { listRuns } from '../../db/runs.ts';",
      ],
      ['src/mcp/i.ts', "import { findMcpServer } from '../db/mcp-servers.ts';"],
      [
        'src/otlp/j.ts',
        "import { insertSpans } from '../db/otlp-spans.ts';\nimport { ErrorCode } from '../graphql/errors.ts';\nimport { actorForKey } from '../db/api-keys.ts';\nimport type { DatabaseHandle } from '../db/connection.ts';",
      ],
      ['src/otlp/k.ts', "import { InFlightCalls } from '../mcp/in-flight-calls.ts';"],
      [
        'web/src/l.tsx',
        "import { LABELS } from '../../src/domain/labels.ts';\nimport { listRuns } from '../../src/db/runs.ts';\nconst x = <div />;",
      ],
      [
        'src/ledger/j.ts',
        "import { inProcessChannel } from '../db/notifications.ts';\nimport type { Notice } from '../db/notifications.ts';",
      ],
    ]);
    expect(importViolations(planted)).toEqual([
      "src/domain/a.ts imports '../db/runs.ts': src/domain imports nothing of ours outside it",
      "src/domain/b.ts imports '../../drizzle/schema.ts': src/domain imports nothing of ours outside it",
      "src/db/c.ts imports '../graphql/context.ts': src/db knows tables and SQL, not GraphQL, the use cases or MCP",
      "src/db/d.ts imports '../ledger/start-run.ts': src/db knows tables and SQL, not GraphQL, the use cases or MCP",
      "src/db/d.ts imports '../mcp/transport-error.ts': src/db knows tables and SQL, not GraphQL, the use cases or MCP",
      "src/ledger/e.ts imports '../graphql/errors.ts': src/ledger serves every entry point, never GraphQL",
      "src/graphql/f.ts imports '../mcp/tool-adapter.ts': src/graphql reaches MCP only through src/ledger",
      "src/graphql/types/g.ts imports '../../db/run-writes.ts': src/graphql writes only through src/ledger (reads: see READS_FOR_GRAPHQL)",
      "src/mcp/i.ts imports '../db/mcp-servers.ts': src/mcp is an adapter: it hands domain values to the ledger and knows nothing above it",
      "src/otlp/j.ts imports '../db/otlp-spans.ts': src/otlp records only through src/ledger (reads: see READS_FOR_OTLP)",
      "src/otlp/j.ts imports '../graphql/errors.ts': src/otlp is an adapter beside GraphQL and MCP: it reaches neither",
      "src/otlp/k.ts imports '../mcp/in-flight-calls.ts': src/otlp is an adapter beside GraphQL and MCP: it reaches neither",
      "web/src/l.tsx imports '../../src/db/runs.ts': web/ imports nothing of the service but src/domain: it reaches the rest over GraphQL",
      "src/ledger/j.ts imports '../db/notifications.ts': the channel between instances is used through src/ledger/run-events.ts (opened by the entry point)",
    ]);
  });

  it('reads the files under src/ (so the rules are checked against something)', () => {
    const files = sourceFiles('src');
    for (const layer of ['src/domain', 'src/db', 'src/ledger', 'src/graphql', 'src/mcp', 'src/otlp']) {
      expect(files.some((file) => inside(file, layer))).toBe(true);
    }
    const imports = files.flatMap((file) => importsOf(file, readFileSync(join(root, file), 'utf8')));
    expect(imports.filter((i) => inside(i.target, 'src/domain')).length).toBeGreaterThan(50);
  });

  it('src/ and web/ keep the import rules', () => {
    const all = [...sourceFiles('src'), ...sourceFiles('web')];
    expect(all.some((file) => file.startsWith('web/src/pages/'))).toBe(true);
    const files = new Map(all.map((file) => [file, readFileSync(join(root, file), 'utf8')]));
    expect(importViolations(files)).toEqual([]);
  });
});
