import { describe, expect, it } from 'vitest';
import { isolated } from '../../src/domain/bidi.ts';
import { detailLine } from '../../src/domain/timeline.ts';
import { i18n } from '../../web/src/i18n.ts';

const RLO = '\u202e';
const FSI = '\u2068';
const PDI = '\u2069';

describe('a name set into a sentence', () => {
  it('is isolated when it holds anything that changes direction, and left alone otherwise', () => {
    expect(isolated('search_issues')).toBe('search_issues');
    expect(isolated(`${RLO}evil`)).toBe(`${FSI}${RLO}evil${PDI}`);
    expect(isolated('שרת')).toBe(`${FSI}שרת${PDI}`);
    expect(isolated('تقرير')).toBe(`${FSI}تقرير${PDI}`);
  });

  it("cannot turn a timeline line's own words around: the failure after it stays as written", () => {
    const line = detailLine({
      kind: 'tool',
      server: 'fs',
      toolName: `read${RLO}`,
      writeTarget: null,
      outcome: 'failed',
      metadata: { failureCode: 'TOOL_ERROR' },
    });
    expect(line).toBe(`fs/${FSI}read${RLO}${PDI} · failed: TOOL_ERROR`);
  });

  it("cannot turn the viewer's own words around either (every value the viewer interpolates)", () => {
    expect(i18n.t('viewer.signedInAs', { actor: `eve${RLO}` })).toBe(`Signed in as ${FSI}eve${RLO}${PDI}`);
    expect(i18n.t('viewer.signedInAs', { actor: 'alice' })).toBe('Signed in as alice');
  });
});
