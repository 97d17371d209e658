/**
 * A refusal by a domain rule. `code` is stable: clients and tests match on it,
 * never on the message.
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Input that breaks a rule or a limit; `field` names the input field when one is to blame. */
export class InvalidInputError extends DomainError {
  constructor(
    code: string,
    message: string,
    readonly field: string | null = null,
  ) {
    super(code, message);
  }
}

/** No such run, or one the caller may not touch: the two are told apart by nobody. */
export class RunNotFoundError extends DomainError {
  constructor(readonly runUuid: string) {
    super('RUN_NOT_FOUND', `no run ${runUuid}`);
  }
}

/** The run has ended; what was asked would change it. */
export class RunTerminalError extends DomainError {
  constructor(
    readonly runUuid: string,
    readonly status: string,
    detail: string,
  ) {
    super('RUN_TERMINAL', `run ${runUuid} is ${status}: ${detail}`);
  }
}

/** An idempotency key already used for a different request in this run. */
export class IdempotencyKeyReusedError extends DomainError {
  constructor(readonly idempotencyKey: string) {
    super(
      'IDEMPOTENCY_KEY_REUSED',
      `idempotency key ${JSON.stringify(idempotencyKey)} was used for a different request`,
    );
  }
}

/** A different run already has the uuid a client chose. */
export class RunAlreadyExistsError extends DomainError {
  constructor(readonly runUuid: string) {
    super('RUN_ALREADY_EXISTS', `a different run ${runUuid} already exists`);
  }
}

/** The actor lacks a permission the request needs (FORBIDDEN); `permission` names it. */
export class ForbiddenError extends DomainError {
  constructor(readonly permission: string) {
    super('FORBIDDEN', `this needs the ${permission} permission`);
  }
}

/** Too many live streams open: the actor's share (TOO_MANY_SUBSCRIPTIONS) or the instance's (SUBSCRIPTIONS_FULL). */
export class SubscriptionLimitError extends DomainError {
  constructor(
    code: 'TOO_MANY_SUBSCRIPTIONS' | 'SUBSCRIPTIONS_FULL' | 'TOO_MANY_WAITS' | 'WAITS_FULL',
    readonly limit: number,
  ) {
    const what =
      code === 'TOO_MANY_WAITS' || code === 'WAITS_FULL' ? 'waits (awaitDecision)' : 'live streams';
    super(
      code,
      code === 'TOO_MANY_SUBSCRIPTIONS' || code === 'TOO_MANY_WAITS'
        ? `at most ${limit} ${what} per actor may be open at once: close one first`
        : `this instance holds its limit of ${limit} ${what}: retry later or on another instance`,
    );
  }
}

export class KeyNotActiveError extends DomainError {
  constructor() {
    super('UNAUTHENTICATED', 'the API key is unknown or revoked');
  }
}
