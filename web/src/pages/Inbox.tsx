import { type FormEvent, useId, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { errorCode } from '../client.ts';
import { ErrorNote, Section, usePageTitle } from '../components.tsx';
import type { ViewerInboxQuery } from '../gql/graphql.ts';
import { useLocalPath, useWords } from '../locale.ts';
import { DecideApprovalMutation, InboxQuery, ProvideInputMutation } from '../operations.ts';

type OpenRequest = ViewerInboxQuery['openRequests'][number];

/** The fields a request for input asks, as its schema states them (flat fields only: docs/architecture.md, "A human in the loop"). */
interface FormField {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  title?: string;
  description?: string;
  enum?: string[];
  required: boolean;
}

function fieldsOf(schema: unknown): FormField[] {
  const { properties = {}, required = [] } = (schema ?? {}) as {
    properties?: Record<string, Omit<FormField, 'name' | 'required'>>;
    required?: string[];
  };
  return Object.entries(properties).map(([name, field]) => ({
    ...field,
    name,
    required: required.includes(name),
  }));
}

/** The values a form holds, typed as its schema asks: empty optional fields are left out. */
function valuesOf(fields: readonly FormField[], form: FormData): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of fields) {
    if (field.type === 'boolean') {
      values[field.name] = form.get(field.name) === 'on';
      continue;
    }
    const text = String(form.get(field.name) ?? '');
    if (text === '') continue;
    values[field.name] = field.type === 'string' ? text : Number(text);
  }
  return values;
}

/**
 * The inbox of a key with approve_runs: every open request it may decide,
 * oldest first, each with Approve / Deny or a form made from its schema.
 */
export function InboxPage() {
  const { t } = useWords();
  usePageTitle(t('viewer.nav.inbox'));
  const [{ data, error, fetching }, refetch] = useQuery({ query: InboxQuery, requestPolicy: 'network-only' });
  const [done, setDone] = useState<string | null>(null);
  if (error) return <ErrorNote error={error} />;
  if (!data && fetching) return <p className="note">{t('viewer.loading')}</p>;
  const requests = data?.openRequests ?? [];
  const decided = (state: string) => {
    setDone(t(`viewer.inbox.done.${state.toLowerCase()}`));
    refetch({ requestPolicy: 'network-only' });
  };
  return (
    <Section title={t('viewer.inbox.title')}>
      {done && (
        <p className="note" role="status" data-testid="inbox-done">
          {done}
        </p>
      )}
      {requests.length === 0 ? (
        <p className="note" data-testid="inbox-empty">
          {t('viewer.inbox.empty')}
        </p>
      ) : (
        <ul className="inbox">
          {requests.map((request) => (
            <RequestCard key={request.uuid} request={request} onDecided={decided} />
          ))}
        </ul>
      )}
    </Section>
  );
}

function RequestCard({ request, onDecided }: { request: OpenRequest; onDecided: (state: string) => void }) {
  const { t, f } = useWords();
  const to = useLocalPath();
  const [, decideApproval] = useMutation(DecideApprovalMutation);
  const [, provideInput] = useMutation(ProvideInputMutation);
  const [refusal, setRefusal] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function send(
    work: () => Promise<{ __typename: string; code?: string; state?: string } | undefined>,
  ) {
    setBusy(true);
    setRefusal(null);
    const answer = await work();
    setBusy(false);
    if (answer?.__typename === 'RequestRecordedSuccess' && answer.state) onDecided(answer.state);
    else setRefusal(answer?.code ?? 'UNKNOWN');
  }
  const decide = (decision: 'APPROVE' | 'DENY', comment: string) =>
    send(async () => {
      const result = await decideApproval({
        input: { runUuid: request.run.uuid, request: request.uuid, decision, comment: comment || null },
      });
      const answer = result.data?.decideApproval;
      if (!answer) return { __typename: 'Error', code: result.error ? errorCode(result.error) : 'UNKNOWN' };
      return answer.__typename === 'RequestRecordedSuccess'
        ? { __typename: answer.__typename, state: answer.data.request.state }
        : { __typename: answer.__typename, code: 'code' in answer ? answer.code : 'UNKNOWN' };
    });
  const provide = (input: { values?: Record<string, unknown>; decline?: boolean }) =>
    send(async () => {
      const result = await provideInput({
        input: { runUuid: request.run.uuid, request: request.uuid, ...input },
      });
      const answer = result.data?.provideInput;
      if (!answer) return { __typename: 'Error', code: result.error ? errorCode(result.error) : 'UNKNOWN' };
      return answer.__typename === 'RequestRecordedSuccess'
        ? { __typename: answer.__typename, state: answer.data.request.state }
        : { __typename: answer.__typename, code: 'code' in answer ? answer.code : 'UNKNOWN' };
    });

  const fields = fieldsOf(request.schema);
  const onApproval = (event: FormEvent<HTMLFormElement>) => event.preventDefault();
  const onInput = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    void provide({ values: valuesOf(fields, new FormData(event.currentTarget)) });
  };
  return (
    <li className="request" data-testid="inbox-request" data-kind={request.kind}>
      <h3>
        {request.kind === 'APPROVAL'
          ? `${t('viewer.inbox.approval')}: ${request.server ? `${request.server}/` : ''}${request.toolName ?? ''}`
          : t('viewer.inbox.input')}
      </h3>
      <p className="note">
        <Link to={to(`/runs/${request.run.uuid}`)}>
          {t('viewer.inbox.run', {
            uuid: request.run.uuid,
            configuration: request.run.configuration,
            owner: request.run.owner,
          })}
        </Link>
        {' · '}
        {request.source === 'MCP'
          ? t('viewer.inbox.fromServer', { server: request.server ?? '' })
          : t('viewer.inbox.requestedBy', {
              actor: request.requestedBy,
              at: f.dateTime(String(request.requestedAt)),
            })}
        {request.expiresAt &&
          ` · ${t('viewer.inbox.expires', { at: f.dateTime(String(request.expiresAt)) })}`}
      </p>
      {request.kind === 'APPROVAL' ? (
        <form onSubmit={onApproval}>
          {request.reason && (
            <p>
              <strong>{t('viewer.inbox.reason')}:</strong> {request.reason}
            </p>
          )}
          <p>
            <strong>{t('viewer.inbox.arguments')}:</strong>
          </p>
          <pre>{JSON.stringify(request.arguments ?? null, null, 2)}</pre>
          <label>
            {t('viewer.inbox.comment')} <input name="comment" />
          </label>
          <button
            type="button"
            disabled={busy}
            onClick={(event) => void decide('APPROVE', commentOf(event.currentTarget))}
          >
            {t('viewer.inbox.approve')}
          </button>
          <button
            type="button"
            disabled={busy}
            onClick={(event) => void decide('DENY', commentOf(event.currentTarget))}
          >
            {t('viewer.inbox.deny')}
          </button>
        </form>
      ) : (
        <form onSubmit={onInput}>
          <p>{request.prompt}</p>
          {fields.map((field) => (
            <FieldInput key={field.name} field={field} />
          ))}
          <button type="submit" disabled={busy}>
            {t('viewer.inbox.submit')}
          </button>
          <button type="button" disabled={busy} onClick={() => void provide({ decline: true })}>
            {t('viewer.inbox.decline')}
          </button>
        </form>
      )}
      {refusal && (
        <p className="note error" role="alert">
          {t('viewer.inbox.refused', { code: refusal })}
        </p>
      )}
    </li>
  );
}

/** The comment typed into the form a button belongs to. */
function commentOf(button: HTMLButtonElement): string {
  const input = button.form?.elements.namedItem('comment');
  return input instanceof HTMLInputElement ? input.value : '';
}

function FieldInput({ field }: { field: FormField }) {
  const { t } = useWords();
  const id = useId();
  const label = field.title ?? field.name;
  const mark = field.required ? ` (${t('viewer.inbox.required')})` : '';
  if (field.type === 'boolean') {
    return (
      <div className="field">
        <input id={id} type="checkbox" name={field.name} /> <label htmlFor={id}>{label}</label>
      </div>
    );
  }
  return (
    <div className="field">
      <label htmlFor={id}>
        {label}
        {mark}
      </label>{' '}
      {field.enum ? (
        <select id={id} name={field.name} required={field.required} defaultValue="">
          <option value="" disabled={field.required}>
            –
          </option>
          {field.enum.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
      ) : (
        <input
          id={id}
          name={field.name}
          required={field.required}
          type={field.type === 'string' ? 'text' : 'number'}
          step={field.type === 'integer' ? 1 : 'any'}
          title={field.description}
        />
      )}
    </div>
  );
}
