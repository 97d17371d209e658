import type { OutcomeCounts } from '../../domain/outcome-counts.ts';
import { builder } from '../builder.ts';

export const OutcomeCountsRef = builder.objectRef<OutcomeCounts>('OutcomeCounts').implement({
  description:
    'Tool calls by outcome, read by the boolean-first rule. failureRate = failed / (ok + failed): cancellations never raise it; null when ok + failed is 0.',
  fields: (t) => ({
    ok: t.exposeInt('ok'),
    failed: t.exposeInt('failed'),
    cancelled: t.exposeInt('cancelled'),
    total: t.exposeInt('total'),
    failureRate: t.exposeFloat('failureRate', { nullable: true }),
  }),
});
