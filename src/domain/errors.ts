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
