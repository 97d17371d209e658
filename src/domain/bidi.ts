/**
 * Characters that change the direction of what follows them: right-to-left
 * letters (Hebrew, Arabic, Syriac, Thaana, N'Ko …, and their presentation
 * forms) and the bidirectional controls (embeddings, overrides, isolates,
 * marks). A name holding one, set inline in a sentence, can turn the
 * sentence's own words backwards ("RORRE_LOOT :deliaf" for a name ending in
 * U+202E).
 */
const DIRECTIONAL = /[\u0590-\u08ff\u200e\u200f\u202a-\u202e\u2066-\u2069\ufb1d-\ufdff\ufe70-\ufeff]/;

/** First strong isolate and pop directional isolate: what lies between them cannot reorder what lies around. */
const FSI = '\u2068';
const PDI = '\u2069';

/**
 * A name (of a tool, a server, a configuration, an actor) as it may stand
 * inside a sentence: isolated (FSI … PDI) when it holds anything that changes
 * direction, so that it reads in its own direction and leaves the words
 * around it as they are; unchanged otherwise, as nearly every name is.
 */
export function isolated(name: string): string {
  return DIRECTIONAL.test(name) ? `${FSI}${name}${PDI}` : name;
}
