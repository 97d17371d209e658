// The committed contract (schema.graphql) is usable schema-first: GraphQL Code Generator validates the
// operations a frontend team writes (test/contract/operations/*.graphql) against it and generates a typed
// client (client preset), and client code relying on the contract (client-usage.ts.txt) type-checks
// against what was generated. An operation that does not fit the schema fails codegen; a contract change
// a client relies on (nullability, enum values, list shapes) fails the type-check.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '@graphql-codegen/cli';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const contractDir = join(root, 'test', 'contract');
const generatedDir = join(root, 'test', '.generated');
const gqlDir = join(generatedDir, 'gql');
const usageFile = join(generatedDir, 'client-usage.ts');

const operations = [
  'NodeById',
  'RunDetail',
  'RunListPage',
  'RunsWithCancelledCalls',
  'Viewer',
  'FlakyServers',
  'StartRun',
  'CancelRun',
  'RecordSteps',
];

/** The options of a strict ESM (NodeNext) consumer, with the project's extra strictness. */
const compilerOptions: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  skipLibCheck: true,
  types: [],
  noUncheckedIndexedAccess: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  noFallthroughCasesInSwitch: true,
};

describe('schema.graphql is usable schema-first (GraphQL Code Generator, client preset)', () => {
  it('generates a typed client for the frontend operations, and client code type-checks against it', async () => {
    // client-usage.ts.txt relies on these; more operations may be added next to them.
    expect(readdirSync(join(contractDir, 'operations'))).toEqual(
      expect.arrayContaining(operations.map((o) => `${o}.graphql`)),
    );

    // Start clean, so a failed generation can never leave earlier output to be checked instead.
    rmSync(gqlDir, { recursive: true, force: true });
    rmSync(usageFile, { force: true });

    // Rejects when an operation does not validate against the schema (unknown field, wrong argument...).
    await generate(
      {
        cwd: root,
        schema: join(root, 'schema.graphql'),
        documents: join(contractDir, 'operations', '*.graphql'),
        generates: {
          [`${gqlDir}/`]: {
            preset: 'client',
            config: {
              useTypeImports: true,
              enumsAsTypes: true,
              scalars: { DateTime: 'string', SafeInt: 'number' },
              // Relative imports with a .js extension, as ESM (NodeNext) requires.
              emitLegacyCommonJSImports: false,
            },
          },
        },
        silent: true,
        errorsOnly: true,
        overwrite: true,
      },
      true,
    );

    const generated = readdirSync(gqlDir).sort();
    expect(generated).toEqual(['fragment-masking.ts', 'gql.ts', 'graphql.ts', 'index.ts']);

    mkdirSync(generatedDir, { recursive: true });
    copyFileSync(join(contractDir, 'client-usage.ts.txt'), usageFile);

    const rootNames = [...generated.map((f) => join(gqlDir, f)), usageFile];
    const program = ts.createProgram({ rootNames, options: compilerOptions });
    const diagnostics = ts.getPreEmitDiagnostics(program);
    const report = ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (fileName) => fileName,
      getCurrentDirectory: () => root,
      getNewLine: () => '\n',
    });
    expect(report, 'TypeScript diagnostics in the generated client or client-usage.ts').toBe('');
    expect(diagnostics).toHaveLength(0);

    // Guard against a vacuous pass: the usage file and the generated code were really part of the program.
    const checked = program.getSourceFiles().map((file) => file.fileName);
    for (const file of rootNames) expect(checked).toContain(file);
  }, 120_000);
});
