import { createApiKey, listApiKeys, revokeApiKey } from '../src/db/api-keys.ts';
import {
  type DatabaseHandle,
  DatabaseInUseError,
  openDatabase,
  optionsFromEnv,
} from '../src/db/connection.ts';
import { migrate } from '../src/db/migrator.ts';
import { DomainError } from '../src/domain/errors.ts';
import { PERMISSIONS } from '../src/domain/permissions.ts';

const usage = `npm run keys -- create --actor <name> --grant <permission,...>
npm run keys -- list
npm run keys -- revoke <id or key prefix>

permissions: ${PERMISSIONS.join(', ')}

On the embedded database while the service runs, the keys are managed through
the service: set RUNLEDGER_KEY to a key with manage_keys (and RUNLEDGER_URL if
it does not answer at http://127.0.0.1:4000).`;

/** A key as both ways list it. */
interface KeyLine {
  id: string;
  prefix: string;
  actor: string;
  permissions: string[];
  revokedAt: string | null;
}

/** What the command does, on the database itself or through the running service. */
interface Keys {
  create(actor: string, permissions: string[]): Promise<{ key: string; line: KeyLine }>;
  list(): Promise<KeyLine[]>;
  revoke(idOrPrefix: string): Promise<KeyLine[]>;
  close(): Promise<void>;
}

function option(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

function onDatabase(handle: DatabaseHandle): Keys {
  const line = (row: Awaited<ReturnType<typeof listApiKeys>>[number]): KeyLine => ({
    id: String(row.id),
    prefix: row.keyPrefix,
    actor: row.actor,
    permissions: row.permissions,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  });
  return {
    async create(actor, permissions) {
      const { key, row } = await createApiKey(handle.db, actor, permissions);
      return { key, line: line(row) };
    },
    list: async () => (await listApiKeys(handle.db)).map(line),
    revoke: async (idOrPrefix) => (await revokeApiKey(handle.db, idOrPrefix)).map(line),
    close: () => handle.close(),
  };
}

const KEY_FIELDS = 'id prefix actor permissions revokedAt';

/** The same through the service's API (manage_keys), for an embedded database the service holds. */
function throughService(url: string, key: string): Keys {
  async function ask<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
    } catch {
      throw new DomainError('SERVICE_UNREACHABLE', `no service answers at ${url} (RUNLEDGER_URL)`);
    }
    const body = (await response.json()) as {
      data?: T;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
    };
    const error = body.errors?.[0];
    if (error || !body.data)
      throw new DomainError(error?.extensions?.code ?? `HTTP_${response.status}`, error?.message ?? '');
    return body.data;
  }
  /** A refusal of a mutation comes as its error type: thrown as the command's error. */
  const refused = (answer: { __typename: string; code?: string; message?: string }) => {
    if (answer.code) throw new DomainError(answer.code, answer.message ?? '');
  };
  const lower = (line: KeyLine): KeyLine => ({
    ...line,
    permissions: line.permissions.map((p) => p.toLowerCase()),
  });
  return {
    async create(actor, permissions) {
      const { createApiKey: answer } = await ask<{
        createApiKey: {
          __typename: string;
          code?: string;
          message?: string;
          data?: { key: string; apiKey: KeyLine };
        };
      }>(
        `mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { __typename
          ... on Error { code message } ... on CreateApiKeySuccess { data { key apiKey { ${KEY_FIELDS} } } } } }`,
        { input: { actor, permissions: permissions.map((p) => p.toUpperCase()) } },
      );
      refused(answer);
      if (!answer.data) throw new DomainError('UNKNOWN', 'no key in the answer');
      return { key: answer.data.key, line: lower(answer.data.apiKey) };
    },
    list: async () => (await ask<{ apiKeys: KeyLine[] }>(`{ apiKeys { ${KEY_FIELDS} } }`)).apiKeys.map(lower),
    async revoke(idOrPrefix) {
      // The API revokes by id; a printed prefix is looked up first.
      const keys = await this.list();
      const ids = keys
        .filter((k) => k.revokedAt === null && (k.id === idOrPrefix || k.prefix === idOrPrefix))
        .map((k) => k.id);
      const done: KeyLine[] = [];
      for (const id of ids) {
        const { revokeApiKey: answer } = await ask<{
          revokeApiKey: { __typename: string; code?: string; message?: string; data?: KeyLine };
        }>(
          `mutation ($id: ID!) { revokeApiKey(id: $id) { __typename
            ... on Error { code message } ... on RevokeApiKeySuccess { data { ${KEY_FIELDS} } } } }`,
          { id },
        );
        refused(answer);
        if (answer.data) done.push(lower(answer.data));
      }
      return done;
    },
    close: async () => {},
  };
}

/** The database, or the service that holds it, with a note on stderr of which. */
async function open(): Promise<Keys> {
  try {
    const handle = await openDatabase(optionsFromEnv());
    await migrate(handle);
    return onDatabase(handle);
  } catch (error) {
    if (!(error instanceof DatabaseInUseError)) throw error;
    const key = process.env.RUNLEDGER_KEY;
    if (!key)
      throw new DomainError(
        error.code,
        `${error.message}; or set RUNLEDGER_KEY to a key with manage_keys to manage keys through it`,
      );
    const url = process.env.RUNLEDGER_URL ?? `http://127.0.0.1:${process.env.PORT ?? 4000}`;
    console.error(`the service holds the embedded database: through its API at ${url}`);
    return throughService(url, key);
  }
}

const [command, argument] = process.argv
  .slice(2)
  .filter((arg, i, all) => !arg.startsWith('--') && !all[i - 1]?.startsWith('--'));
let keys: Keys | undefined;
try {
  if (!['create', 'list', 'revoke'].includes(command ?? '') || (command === 'revoke' && !argument))
    throw new DomainError('USAGE', usage);
  keys = await open();
  if (command === 'create') {
    const actor = option('actor');
    const grant = option('grant');
    if (!actor || !grant) throw new DomainError('USAGE', usage);
    const { key, line } = await keys.create(
      actor,
      grant.split(',').map((p) => p.trim()),
    );
    console.log(`key ${line.id} for ${line.actor}: ${line.permissions.join(', ')}`);
    console.log(`${key}\n(shown once: only its hash is stored)`);
  } else if (command === 'list') {
    for (const line of await keys.list()) {
      const state = line.revokedAt ? `revoked ${line.revokedAt}` : 'active';
      console.log(`${line.id}\t${line.prefix}…\t${line.actor}\t${state}\t${line.permissions.join(',')}`);
    }
  } else if (argument) {
    const revoked = await keys.revoke(argument);
    if (revoked.length === 0) throw new DomainError('KEY_NOT_FOUND', `no active key ${argument}`);
    for (const line of revoked) console.log(`revoked key ${line.id} (${line.prefix}…) of ${line.actor}`);
  }
} catch (error) {
  if (!(error instanceof DomainError)) throw error;
  console.error(error.code === 'USAGE' ? error.message : `${error.code}: ${error.message}`);
  process.exitCode = 2;
} finally {
  await keys?.close();
}
