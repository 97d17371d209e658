import {
  type DomainError,
  ForbiddenError,
  IdempotencyKeyReusedError,
  InvalidInputError,
  RunAlreadyExistsError,
  RunNotFoundError,
  RunTerminalError,
} from '../../domain/errors.ts';
import type { Permission } from '../../domain/permissions.ts';
import type { RunStatus } from '../../domain/run-status.ts';
import { builder } from '../builder.ts';
import { PermissionEnum, RunStatusEnum } from './enums.ts';

/** Every expected failure of a mutation: a stable code and a message for people. */
export const ErrorInterface = builder.interfaceRef<DomainError>('Error').implement({
  fields: (t) => ({
    code: t.exposeString('code', { description: 'Stable: match on this, not on the message.' }),
    message: t.exposeString('message'),
  }),
});

builder.objectType(InvalidInputError, {
  name: 'InvalidInputError',
  description:
    'The input breaks a rule or a limit (codes VALUE_*, STEP_*, BATCH_TOO_LARGE, TERMINATION_MISMATCH...). Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof InvalidInputError,
  fields: (t) => ({ field: t.exposeString('field', { nullable: true }) }),
});

builder.objectType(RunNotFoundError, {
  name: 'RunNotFoundError',
  description: 'No such run, or not one of yours (RUN_NOT_FOUND). Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof RunNotFoundError,
  fields: (t) => ({ runUuid: t.exposeString('runUuid') }),
});

builder.objectType(RunTerminalError, {
  name: 'RunTerminalError',
  description: 'The run has ended and cannot take this (RUN_TERMINAL). Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof RunTerminalError,
  fields: (t) => ({
    runUuid: t.exposeString('runUuid'),
    status: t.field({
      type: RunStatusEnum,
      description: 'The status the run ended in.',
      resolve: (error) => error.status as RunStatus,
    }),
  }),
});

builder.objectType(IdempotencyKeyReusedError, {
  name: 'IdempotencyKeyReusedError',
  description:
    'The idempotency key was already used in this run for a different request (IDEMPOTENCY_KEY_REUSED).',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof IdempotencyKeyReusedError,
  fields: (t) => ({ idempotencyKey: t.exposeString('idempotencyKey') }),
});

builder.objectType(RunAlreadyExistsError, {
  name: 'RunAlreadyExistsError',
  description: 'A different run already has this uuid (RUN_ALREADY_EXISTS).',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof RunAlreadyExistsError,
  fields: (t) => ({ runUuid: t.exposeString('runUuid') }),
});

builder.objectType(ForbiddenError, {
  name: 'ForbiddenError',
  description:
    'The API key lacks a permission this needs (FORBIDDEN); permission names it. Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof ForbiddenError,
  fields: (t) => ({
    permission: t.field({ type: PermissionEnum, resolve: (error) => error.permission as Permission }),
  }),
});

/** Every mutation can be refused for a missing permission, and for input that breaks a rule. */
const EVERY_MUTATION = [ForbiddenError, InvalidInputError];
export const STEP_ERRORS = [...EVERY_MUTATION, RunNotFoundError, RunTerminalError, IdempotencyKeyReusedError];
export const RUN_END_ERRORS = [...EVERY_MUTATION, RunNotFoundError, RunTerminalError];
export const START_RUN_ERRORS = [...EVERY_MUTATION, RunAlreadyExistsError];
export const SERVER_ERRORS = EVERY_MUTATION;
