import type { OutcomeCounts } from '../../domain/outcome-counts.ts';
import { builder } from '../builder.ts';

export const OutcomeCountsRef = builder.objectRef<OutcomeCounts>('OutcomeCounts').implement({
  description:
    'Tool calls by outcome, read by the boolean-first rule. failureRate = failed / (ok + failed): cancellations never raise it; null when ok + failed is 0.',
  fields: (t) => ({
    ok: t.expose('ok', { type: 'SafeInt' }),
    failed: t.expose('failed', { type: 'SafeInt' }),
    cancelled: t.expose('cancelled', { type: 'SafeInt' }),
    total: t.expose('total', { type: 'SafeInt' }),
    failureRate: t.exposeFloat('failureRate', { nullable: true }),
  }),
});
