import type { RequestState } from './human-request.ts';
import type { StepKind } from './step-kind.ts';
import type { ToolOutcome } from './tool-outcome.ts';

export const LOCALES = ['en', 'de'] as const;
export type Locale = (typeof LOCALES)[number];

export type OutcomeLabelKey = `runs.detail.outcome.${ToolOutcome}`;

/** The words of a timeline detail line; `{name}` is filled in by `label`. */
type DetailLabelKey =
  | 'runs.detail.tool'
  | 'runs.detail.write.created'
  | 'runs.detail.write.updated'
  | 'runs.detail.tokens'
  | 'runs.detail.cost'
  | 'runs.detail.finish'
  | 'runs.detail.arguments'
  | 'runs.detail.result'
  | 'runs.detail.failure'
  | 'runs.detail.sessionStart'
  | 'runs.detail.serviceStopping'
  | 'runs.detail.artifacts.one'
  | 'runs.detail.artifacts.other'
  | 'runs.detail.messages'
  | 'runs.detail.dropped'
  | 'runs.detail.request.asked'
  | `runs.detail.request.${Exclude<RequestState, 'open'>}`
  | `runs.detail.kind.${StepKind}`;

export type LabelKey = OutcomeLabelKey | DetailLabelKey;

export function outcomeLabelKey(outcome: ToolOutcome): OutcomeLabelKey {
  return `runs.detail.outcome.${outcome}`;
}

/** Every text the service shows people, in every locale: the one label table. */
export const LABELS: Readonly<Record<Locale, Readonly<Record<LabelKey, string>>>> = {
  en: {
    'runs.detail.outcome.ok': 'ok',
    'runs.detail.outcome.failed': 'failed',
    'runs.detail.outcome.cancelled': 'cancelled',
    'runs.detail.tool': 'tool',
    'runs.detail.write.created': 'created {target}',
    'runs.detail.write.updated': 'updated {target}',
    'runs.detail.tokens': '{in} in / {out} out tokens',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a dollar sign, then the {cost} placeholder
    'runs.detail.cost': '${cost}',
    'runs.detail.finish': 'finish: {reason}',
    'runs.detail.arguments': 'args {bytes} B',
    'runs.detail.result': 'result {bytes} B',
    'runs.detail.failure': 'failed: {code}',
    'runs.detail.sessionStart': 'session start {ms} ms',
    'runs.detail.serviceStopping': 'cut off: runledger stopped',
    'runs.detail.artifacts.one': '{count} artifact',
    'runs.detail.artifacts.other': '{count} artifacts',
    'runs.detail.messages': '{count} messages',
    'runs.detail.dropped': '{count} dropped',
    'runs.detail.request.asked': 'waiting for a person',
    'runs.detail.request.approved': 'approved by {actor}',
    'runs.detail.request.denied': 'denied by {actor}',
    'runs.detail.request.answered': 'answered by {actor}',
    'runs.detail.request.declined': 'declined by {actor}',
    'runs.detail.request.expired': 'expired, nobody decided',
    'runs.detail.request.cancelled': 'cancelled with its call',
    'runs.detail.kind.request': 'request',
    'runs.detail.kind.llm': 'model call',
    'runs.detail.kind.tool': 'tool call',
    'runs.detail.kind.tool_write': 'write',
    'runs.detail.kind.assembled': 'assembled',
    'runs.detail.kind.context': 'context',
    'runs.detail.kind.dropped': 'dropped',
    'runs.detail.kind.approval': 'approval',
    'runs.detail.kind.input': 'input',
  },
  de: {
    'runs.detail.outcome.ok': 'ok',
    'runs.detail.outcome.failed': 'fehlgeschlagen',
    'runs.detail.outcome.cancelled': 'abgebrochen',
    'runs.detail.tool': 'Werkzeug',
    'runs.detail.write.created': 'angelegt {target}',
    'runs.detail.write.updated': 'geändert {target}',
    'runs.detail.tokens': '{in} ein / {out} aus Tokens',
    'runs.detail.cost': '{cost} $',
    'runs.detail.finish': 'Ende: {reason}',
    'runs.detail.arguments': 'Argumente {bytes} B',
    'runs.detail.result': 'Ergebnis {bytes} B',
    'runs.detail.failure': 'fehlgeschlagen: {code}',
    'runs.detail.sessionStart': 'Sitzungsstart {ms} ms',
    'runs.detail.serviceStopping': 'abgebrochen: runledger wurde beendet',
    'runs.detail.artifacts.one': '{count} Artefakt',
    'runs.detail.artifacts.other': '{count} Artefakte',
    'runs.detail.messages': '{count} Nachrichten',
    'runs.detail.dropped': '{count} verworfen',
    'runs.detail.request.asked': 'wartet auf eine Person',
    'runs.detail.request.approved': 'freigegeben von {actor}',
    'runs.detail.request.denied': 'abgelehnt von {actor}',
    'runs.detail.request.answered': 'beantwortet von {actor}',
    'runs.detail.request.declined': 'ausgeschlagen von {actor}',
    'runs.detail.request.expired': 'abgelaufen, niemand hat entschieden',
    'runs.detail.request.cancelled': 'mit seinem Aufruf abgebrochen',
    'runs.detail.kind.request': 'Anfrage',
    'runs.detail.kind.llm': 'Modellaufruf',
    'runs.detail.kind.tool': 'Werkzeugaufruf',
    'runs.detail.kind.tool_write': 'Schreibvorgang',
    'runs.detail.kind.assembled': 'zusammengestellt',
    'runs.detail.kind.context': 'Kontext',
    'runs.detail.kind.dropped': 'verworfen',
    'runs.detail.kind.approval': 'Freigabe',
    'runs.detail.kind.input': 'Eingabe',
  },
};

/** The outcome labels alone, as read from the one table. */
export const OUTCOME_LABELS: Readonly<Record<Locale, Readonly<Record<OutcomeLabelKey, string>>>> = {
  en: outcomeLabelsOf('en'),
  de: outcomeLabelsOf('de'),
};

function outcomeLabelsOf(locale: Locale): Record<OutcomeLabelKey, string> {
  const table = LABELS[locale];
  return {
    'runs.detail.outcome.ok': table['runs.detail.outcome.ok'],
    'runs.detail.outcome.failed': table['runs.detail.outcome.failed'],
    'runs.detail.outcome.cancelled': table['runs.detail.outcome.cancelled'],
  };
}

/** A label split once into its words and its `{name}` placeholders (odd indexes are names). */
type Template = readonly string[];

function templatesOf(locale: Locale): Readonly<Record<LabelKey, Template>> {
  const templates: Partial<Record<LabelKey, Template>> = {};
  for (const [key, text] of Object.entries(LABELS[locale]) as Array<[LabelKey, string]>) {
    // split with a capturing group: words at even indexes, placeholder names at odd ones.
    templates[key] = text.split(/\{(\w+)\}/);
  }
  return templates as Record<LabelKey, Template>;
}

/** Every label split once, at load: a timeline fills thousands of them. */
const TEMPLATES: Readonly<Record<Locale, Readonly<Record<LabelKey, Template>>>> = {
  en: templatesOf('en'),
  de: templatesOf('de'),
};

/** A label with its `{name}` placeholders filled in (one left as it is when no value is given). */
export function label(
  locale: Locale,
  key: LabelKey,
  values: Readonly<Record<string, string | number>> = {},
): string {
  const template = TEMPLATES[locale][key];
  if (template.length === 1) return template[0] ?? '';
  let text = template[0] ?? '';
  for (let i = 1; i < template.length; i += 2) {
    const name = template[i] ?? '';
    text += name in values ? String(values[name]) : `{${name}}`;
    text += template[i + 1] ?? '';
  }
  return text;
}

/** The outcome labels by outcome, read once from the one table. */
const OUTCOME_WORDS: Readonly<Record<Locale, Readonly<Record<ToolOutcome, string>>>> = {
  en: outcomeWordsOf('en'),
  de: outcomeWordsOf('de'),
};

function outcomeWordsOf(locale: Locale): Record<ToolOutcome, string> {
  const table = OUTCOME_LABELS[locale];
  return {
    ok: table[outcomeLabelKey('ok')],
    failed: table[outcomeLabelKey('failed')],
    cancelled: table[outcomeLabelKey('cancelled')],
  };
}

export function outcomeLabel(outcome: ToolOutcome, locale: Locale = 'en'): string {
  return OUTCOME_WORDS[locale][outcome];
}

/** A decimal number as the locale writes it: 0.0149 in English, 0,0149 in German. */
export function decimal(value: number, digits: number, locale: Locale): string {
  const fixed = value.toFixed(digits);
  return locale === 'de' ? fixed.replace('.', ',') : fixed;
}
