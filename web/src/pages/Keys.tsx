import { type FormEvent, useId, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { PERMISSIONS } from '../../../src/domain/permissions.ts';
import { errorCode } from '../client.ts';
import { ErrorNote, ScrollingTable, Section, usePageTitle } from '../components.tsx';
import type { Permission } from '../gql/graphql.ts';
import { useWords } from '../locale.ts';
import { ApiKeysQuery, CreateApiKeyMutation, RevokeApiKeyMutation } from '../operations.ts';

/** Every permission a key may be granted, as the API names them (the service's one list). */
const GRANTABLE = PERMISSIONS.map((permission) => permission.toUpperCase() as Permission);

/**
 * The keys page of a key with manage_keys: every key, a form that makes one
 * (the key shown once), and Revoke: keys are managed while the service runs.
 */
export function KeysPage() {
  const { t, f } = useWords();
  usePageTitle(t('viewer.keys.title'));
  const [{ data, error }, refetch] = useQuery({ query: ApiKeysQuery, requestPolicy: 'network-only' });
  const [, create] = useMutation(CreateApiKeyMutation);
  const [, revoke] = useMutation(RevokeApiKeyMutation);
  const [made, setMade] = useState<{ key: string; actor: string } | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const actorId = useId();

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    // Held before the first await: React clears currentTarget once the handler has returned.
    const element = event.currentTarget;
    const form = new FormData(element);
    const permissions = form.getAll('permission').map(String) as Permission[];
    setRefusal(null);
    const result = await create({ input: { actor: String(form.get('actor') ?? '').trim(), permissions } });
    const answer = result.data?.createApiKey;
    if (answer?.__typename === 'CreateApiKeySuccess') {
      setMade({ key: answer.data.key, actor: answer.data.apiKey.actor });
      element.reset();
      refetch({ requestPolicy: 'network-only' });
    } else if (answer && 'code' in answer) setRefusal(`${answer.code}: ${answer.message}`);
    else setRefusal(result.error ? errorCode(result.error) : 'UNKNOWN');
  }

  async function revokeKey(id: string, prefix: string) {
    if (!window.confirm(t('viewer.keys.revokeConfirm', { prefix }))) return;
    setRefusal(null);
    const result = await revoke({ id });
    const answer = result.data?.revokeApiKey;
    if (answer && 'code' in answer) setRefusal(`${answer.code}: ${answer.message}`);
    else if (!answer) setRefusal(result.error ? errorCode(result.error) : 'UNKNOWN');
    refetch({ requestPolicy: 'network-only' });
  }

  if (error) return <ErrorNote error={error} />;
  return (
    <>
      <Section title={t('viewer.keys.new')}>
        <form className="new-key" onSubmit={submit}>
          <label htmlFor={actorId}>{t('viewer.keys.actor')}</label>{' '}
          <input id={actorId} name="actor" required maxLength={100} pattern="[\w.@\-]+" spellCheck={false} />
          <fieldset>
            <legend>{t('viewer.keys.permissions')}</legend>
            {GRANTABLE.map((permission) => (
              <label key={permission} className="choice">
                <input type="checkbox" name="permission" value={permission} /> {permission.toLowerCase()}
              </label>
            ))}
          </fieldset>
          <button type="submit">{t('viewer.keys.create')}</button>
        </form>
        {made && (
          <div className="made-key" role="status" data-testid="made-key">
            <p>{t('viewer.keys.made', { actor: made.actor })}</p>
            <code>{made.key}</code>
          </div>
        )}
        {refusal && (
          <p role="alert" className="error">
            {t('viewer.keys.refused', { reason: refusal })}
          </p>
        )}
      </Section>
      <Section title={t('viewer.keys.title')}>
        <ScrollingTable label={t('viewer.keys.title')}>
          <table data-testid="keys">
            <thead>
              <tr>
                <th className="number">{t('viewer.keys.id')}</th>
                <th>{t('viewer.keys.prefix')}</th>
                <th>{t('viewer.keys.actor')}</th>
                <th>{t('viewer.keys.permissions')}</th>
                <th>{t('viewer.column.created')}</th>
                <th>{t('viewer.column.status')}</th>
              </tr>
            </thead>
            <tbody>
              {data?.apiKeys.map((key) => (
                <tr key={key.id} data-key={key.prefix}>
                  <td className="number">{key.id}</td>
                  <td>
                    <code>{key.prefix}…</code>
                  </td>
                  <td>{key.actor}</td>
                  <td>{key.permissions.map((p) => p.toLowerCase()).join(', ')}</td>
                  <td>{f.dateTime(String(key.createdAt))}</td>
                  <td>
                    {key.revokedAt ? (
                      t('viewer.keys.revokedAt', { at: f.dateTime(String(key.revokedAt)) })
                    ) : (
                      <button
                        type="button"
                        className="danger"
                        onClick={() => void revokeKey(key.id, key.prefix)}
                      >
                        {t('viewer.keys.revoke')}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollingTable>
      </Section>
    </>
  );
}
