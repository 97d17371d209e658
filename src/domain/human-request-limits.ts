/**
 * Limits of what a request for a person may carry, apart from its rules: the
 * viewer puts them on its inputs too, and imports nothing else of the service.
 */
export const HumanRequestLimits = {
  /** The longest a request may stay open before it expires: 30 days. */
  maxExpiryMs: 30 * 86_400_000,
  promptLength: 4_000,
  reasonLength: 4_000,
  commentLength: 4_000,
  /**
   * A request's schema (InputSchema) as JSON, in UTF-8 bytes. With the three
   * below, small enough that checking one, and compiling a validator of its
   * answers, stays cheap.
   */
  schemaBytes: 16_384,
  /** The fields a schema asks for. */
  schemaProperties: 50,
  /** A field's name, in characters. */
  fieldNameLength: 100,
  /** The choices of one field (`enum`, `oneOf`, `items.enum`, `items.anyOf`). */
  schemaChoices: 100,
  /** The answer's values as JSON, in UTF-8 bytes. */
  valuesBytes: 65_536,
  /**
   * The longest a call made by callTool waits for a person an MCP server asks
   * (elicitation): 10 minutes. Its deadline does not run meanwhile; past this
   * the request expires and the server is answered `cancel`.
   */
  maxElicitationWaitMs: 600_000,
} as const;
