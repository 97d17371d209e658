import { type FormEvent, useId, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { HumanRequestLimits } from '../../../src/domain/human-request-limits.ts';
import { errorCode } from '../client.ts';
import { ErrorNote, Section, usePageTitle } from '../components.tsx';
import type { ViewerInboxQuery } from '../gql/graphql.ts';
import { useLocalPath, useWords } from '../locale.ts';
import { DecideApprovalMutation, InboxQuery, ProvideInputMutation } from '../operations.ts';

type OpenRequest = ViewerInboxQuery['openRequests'][number];

/** Where focus goes once a decision is sent: its outcome, since the card that had focus is gone. */
const focusOnShow = (element: HTMLElement | null) => element?.focus();

/** One choice of a field and its label. */
interface Choice {
  value: string;
  label: string;
}

/**
 * A field a request for input asks, as its schema states it (flat fields only:
 * docs/architecture.md, "A human in the loop"), with the bounds the service
 * checks put on the input too, so the browser names a field out of bounds
 * before anything is sent.
 */
interface FormField {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean' | 'array';
  title?: string;
  description?: string;
  required: boolean;
  /** A single choice (`enum` with `enumNames`, or `oneOf`), or the choices of a multiple one (`items`). */
  choices?: Choice[];
  minLength?: number;
  maxLength?: number;
  format?: string;
  minimum?: number;
  maximum?: number;
  default?: unknown;
}

interface SchemaChoice {
  const: string;
  title?: string;
}
interface SchemaField extends Omit<FormField, 'name' | 'required' | 'choices'> {
  enum?: string[];
  enumNames?: string[];
  oneOf?: SchemaChoice[];
  items?: { enum?: string[]; anyOf?: SchemaChoice[] };
}

const choicesOf = (values: readonly string[], names?: readonly string[]): Choice[] =>
  values.map((value, i) => ({ value, label: names?.[i] ?? value }));
const titled = (choices: readonly SchemaChoice[]): Choice[] =>
  choices.map((choice) => ({ value: choice.const, label: choice.title ?? choice.const }));

/** The fields of a schema, in the order the schema lists them (the service keeps the order it was sent in). */
function fieldsOf(schema: unknown): FormField[] {
  const { properties = {}, required = [] } = (schema ?? {}) as {
    properties?: Record<string, SchemaField>;
    required?: string[];
  };
  return Object.entries(properties).map(([name, { enum: values, enumNames, oneOf, items, ...field }]) => ({
    ...field,
    name,
    required: required.includes(name),
    choices: values
      ? choicesOf(values, enumNames)
      : oneOf
        ? titled(oneOf)
        : items?.enum
          ? choicesOf(items.enum)
          : items?.anyOf
            ? titled(items.anyOf)
            : undefined,
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
    if (field.type === 'array') {
      const chosen = form.getAll(field.name).map(String);
      if (chosen.length > 0 || field.required) values[field.name] = chosen;
      continue;
    }
    const text = String(form.get(field.name) ?? '');
    if (text === '') continue;
    values[field.name] = field.type === 'string' ? text : Number(text);
  }
  return values;
}

/** The input type for a string's format: the browser checks what it can (a date-time keeps its offset: text). */
const INPUT_TYPE_OF_FORMAT: Readonly<Record<string, string>> = { email: 'email', uri: 'url', date: 'date' };

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
        <p className="note" role="status" data-testid="inbox-done" tabIndex={-1} ref={focusOnShow}>
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
  const [refusal, setRefusal] = useState<{ code: string; message: string } | null>(null);
  const [busy, setBusy] = useState(false);

  async function send(
    work: () => Promise<{ __typename: string; code?: string; message?: string; state?: string } | undefined>,
  ) {
    setBusy(true);
    setRefusal(null);
    const answer = await work();
    setBusy(false);
    if (answer?.__typename === 'RequestRecordedSuccess' && answer.state) onDecided(answer.state);
    else setRefusal({ code: answer?.code ?? 'UNKNOWN', message: answer?.message ?? '' });
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
        : {
            __typename: answer.__typename,
            code: 'code' in answer ? answer.code : 'UNKNOWN',
            message: 'message' in answer ? answer.message : '',
          };
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
        : {
            __typename: answer.__typename,
            code: 'code' in answer ? answer.code : 'UNKNOWN',
            message: 'message' in answer ? answer.message : '',
          };
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
            {t('viewer.inbox.comment')} <input name="comment" maxLength={HumanRequestLimits.commentLength} />
          </label>
          {/* Enter in the comment decides nothing: an approval is given by its button alone. */}
          <p className="note">{t('viewer.inbox.chooseDecision')}</p>
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
          {t('viewer.inbox.refused', { code: refusal.code })}
          {refusal.message && ` ${refusal.message}`}
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
  const hint = field.description ? (
    <span className="note" id={`${id}-hint`}>
      {field.description}
    </span>
  ) : null;
  const describedBy = field.description ? `${id}-hint` : undefined;
  if (field.type === 'boolean') {
    return (
      <div className="field">
        <input
          id={id}
          type="checkbox"
          name={field.name}
          defaultChecked={field.default === true}
          aria-describedby={describedBy}
        />{' '}
        <label htmlFor={id}>{label}</label> {hint}
      </div>
    );
  }
  if (field.type === 'array') {
    const chosen = Array.isArray(field.default) ? field.default : [];
    return (
      <fieldset className="field" aria-describedby={describedBy}>
        <legend>
          {label}
          {mark}
        </legend>
        {field.choices?.map((choice) => (
          <label key={choice.value} className="choice">
            <input
              type="checkbox"
              name={field.name}
              value={choice.value}
              defaultChecked={chosen.includes(choice.value)}
            />{' '}
            {choice.label}
          </label>
        ))}
        {hint}
      </fieldset>
    );
  }
  const initial = field.default === undefined ? undefined : String(field.default);
  return (
    <div className="field">
      <label htmlFor={id}>
        {label}
        {mark}
      </label>{' '}
      {field.choices ? (
        <select
          id={id}
          name={field.name}
          required={field.required}
          defaultValue={initial ?? ''}
          aria-describedby={describedBy}
        >
          <option value="" disabled={field.required}>
            –
          </option>
          {field.choices.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      ) : field.type === 'string' ? (
        <input
          id={id}
          name={field.name}
          required={field.required}
          type={INPUT_TYPE_OF_FORMAT[field.format ?? ''] ?? 'text'}
          minLength={field.minLength}
          maxLength={field.maxLength}
          placeholder={field.format === 'date-time' ? '2026-12-07T09:30:00Z' : undefined}
          defaultValue={initial}
          aria-describedby={describedBy}
        />
      ) : (
        <input
          id={id}
          name={field.name}
          required={field.required}
          type="number"
          step={field.type === 'integer' ? 1 : 'any'}
          min={field.minimum}
          max={field.maximum}
          defaultValue={initial}
          aria-describedby={describedBy}
        />
      )}{' '}
      {hint}
    </div>
  );
}
