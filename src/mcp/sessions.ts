import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod/v4';
import type { ElicitationAnswer, ElicitationAsked } from '../domain/human-request.ts';
import { HumanRequestLimits } from '../domain/human-request-limits.ts';
import { type McpServerConfig, parseCredentialReference } from '../domain/mcp-server.ts';
import { GuardedFetch } from './guarded-fetch.ts';
import type { McpPolicy } from './outbound-policy.ts';
import { McpFault, McpTransportError } from './transport-error.ts';
import { asTransportError, sessionRefusalStatus } from './transport-error-mapping.ts';

/**
 * elicitation/create with its params as the server sent them. The SDK still
 * checks the request against its own schema first, but the handler it is given
 * sees what this schema parsed: the SDK's would drop keywords it does not know
 * (a `pattern`, an `allOf`), and the question would be asked without them. The
 * ledger's allow-list refuses them instead.
 */
const ElicitRequestAsSent = ElicitRequestSchema.extend({ params: z.record(z.string(), z.unknown()) });

/** The times that govern a session, in milliseconds: one definition each. */
export const SessionTiming = {
  /** Opening a session (spawn or connect, then initialize) at most, whoever waits for it. */
  openTimeoutMs: 30_000,
  /** While calls wait on a session, how often its liveness is checked. */
  livenessTickMs: 250,
  /** Silence from the server (no message at all) after which it is pinged. */
  pingAfterSilenceMs: 500,
  /** Silence after which the server stopped answering, once a ping has waited at least `pingPatienceMs`. */
  unresponsiveAfterMs: 1_000,
  pingPatienceMs: 750,
  /** Before a session that ended by itself is opened again: the first wait, doubled per failure up to the cap. */
  restartDelayMs: 250,
  restartDelayMaxMs: 30_000,
  /** How long closing a Streamable HTTP session waits for its DELETE. */
  terminateTimeoutMs: 2_000,
} as const;

/** The SDK's own per-request timeout is set past the call's deadline, so that the deadline decides. */
const SDK_TIMEOUT_MARGIN_MS = 5_000;

/** What a server answered to tools/call, as far as runledger reads it. */
export interface CallAnswer {
  isError?: boolean;
  content?: Array<{ type: string; text?: string; [key: string]: unknown }>;
  structuredContent?: Record<string, unknown>;
}

/**
 * The value of each header, read from the environment now: a reference, never
 * a stored secret. Only variables the operator lists are read: a row written
 * before the list existed, or under a longer one, reaches nothing else.
 */
function resolvedHeaders(server: McpServerConfig, policy: McpPolicy): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { name, value } of server.headers) {
    const reference = parseCredentialReference(value);
    if (!reference) throw McpTransportError.missingCredential(`header ${name}`);
    const refusal = policy.headerEnvRefusal(reference.variable);
    if (refusal) throw McpTransportError.headerEnvNotAllowed(`header ${name}: ${refusal}`);
    const secret = policy.headerEnvValue(reference.variable);
    if (!secret) throw McpTransportError.unsetCredential(name, reference.variable);
    headers[name] = reference.scheme ? `${reference.scheme} ${secret}` : secret;
  }
  return headers;
}

/** What a session is opened from: the server as registered, its headers as resolved now. */
interface SessionSpec {
  server: McpServerConfig;
  headers: Record<string, string>;
  /** The server's identifier and a digest of everything above: a changed configuration is another key. */
  key: string;
}

/** The session a call needs, if the operator's settings allow this server: checked at every call. */
function specFor(server: McpServerConfig, policy: McpPolicy): SessionSpec {
  if (server.transport === 'stdio') {
    if (!server.command) throw McpTransportError.transportFailure(`${server.identifier} has no command`);
    const refusal = policy.commandRefusal(server.command, server.args);
    if (refusal) throw McpTransportError.refusedCommand(refusal);
  }
  const headers = server.transport === 'stdio' ? {} : resolvedHeaders(server, policy);
  const digest = createHash('sha256')
    .update(JSON.stringify([server.transport, server.url, server.command, server.args, headers]))
    .digest('hex')
    .slice(0, 16);
  return { server, headers, key: `${server.identifier}@${digest}` };
}

/** An error of the SDK's stdio reading: a line that is not JSON, or not a JSON-RPC message. */
function isUnreadableMessage(error: Error): boolean {
  return error instanceof SyntaxError || error.name === 'ZodError';
}

const abortedBy = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

/** Waits for `work`, or rejects as soon as `signal` aborts (the work itself goes on). */
function until<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  const aborted = abortedBy(signal);
  aborted.catch(() => {});
  return Promise.race([work, aborted]);
}

/**
 * One MCP session with one registered server: a client, its transport, and
 * what keeps it honest. Calls run on it concurrently. It breaks (and every
 * call waiting on it fails at once) when the server goes away: a stdio
 * process that exits, a Streamable HTTP answer cut off mid-stream, a server
 * that answers nothing, not even a ping, while calls wait.
 */
export class McpSession {
  // Elicitation in form mode: a person answers what the server asks mid-call (docs/architecture.md, "A human in the loop").
  readonly client = new Client(
    { name: 'runledger', version: '0.2.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  /** The elicitation handlers of the calls on this session now. */
  readonly #askers = new Set<(asked: ElicitationAsked) => Promise<ElicitationAnswer>>();
  readonly #spec: SessionSpec;
  readonly #policy: McpPolicy;
  readonly #broken = new AbortController();
  #transport: Transport | null = null;
  #calls = 0;
  #lastHeard = 0;
  #pingSentAt: number | null = null;
  #lastTick = 0;
  #liveness: NodeJS.Timeout | undefined;
  #closing: Promise<void> | null = null;
  #retiring = false;
  /** How long opening took (spawn or connect, then initialize), once open. */
  startMs = 0;

  constructor(spec: SessionSpec, policy: McpPolicy) {
    this.#spec = spec;
    this.#policy = policy;
    // Every call on the session listens to it: many at once are the point, not a leak.
    setMaxListeners(0, this.#broken.signal);
    this.client.setRequestHandler(ElicitRequestAsSent, async (request) => {
      // MCP does not say which call a server's request belongs to: with one call on the session it is
      // that call's; with several, nobody can tell, and the server is answered cancel.
      const [asker, ...others] = this.#askers;
      if (!asker || others.length > 0 || request.params.mode === 'url') return { action: 'cancel' };
      const params = request.params as { message: string; requestedSchema?: unknown };
      return asker({ message: params.message, requestedSchema: params.requestedSchema ?? null });
    });
  }

  get key(): string {
    return this.#spec.key;
  }

  /** Aborted when the session broke; its reason is the fault. */
  get brokenSignal(): AbortSignal {
    return this.#broken.signal;
  }

  /** The fault the session broke with; null while it works. */
  get fault(): McpTransportError | null {
    const reason: unknown = this.#broken.signal.reason;
    return this.#broken.signal.aborted && reason instanceof McpTransportError ? reason : null;
  }

  /** Takes new calls: open or opening, not broken, not being retired or closed. */
  get usable(): boolean {
    return !this.#broken.signal.aborted && !this.#retiring && this.#closing === null;
  }

  /** Spawns or connects, then initializes. */
  async open(): Promise<void> {
    if (this.#closing !== null) throw McpTransportError.transportFailure('the service is stopping');
    const started = performance.now();
    const guard = new GuardedFetch(this.#policy, () =>
      this.#break(McpTransportError.serverGone('closed the stream before it answered')),
    );
    const { server, headers } = this.#spec;
    const transport: Transport =
      server.transport === 'stdio'
        ? new StdioClientTransport({
            command: server.command ?? '',
            args: [...server.args],
            env: this.#policy.childEnvironment(),
            stderr: 'ignore',
          })
        : new StreamableHTTPClientTransport(new URL(server.url ?? ''), {
            fetch: guard.fetch,
            requestInit: { headers },
            // The SDK would reconnect a lost stream quietly, up to its own limits; here, briefly.
            reconnectionOptions: {
              initialReconnectionDelay: 250,
              maxReconnectionDelay: 1_000,
              reconnectionDelayGrowFactor: 2,
              maxRetries: 2,
            },
          });
    this.#transport = transport;
    const how = server.transport === 'stdio' ? 'process exited' : 'connection closed';
    this.client.onclose = () => this.#break(McpTransportError.serverGone(how));
    // Transport errors that matter reject the request they belong to, or break the session above. But a
    // stdio server that writes a line that is not JSON-RPC (a banner, a log line; a banner without a
    // newline spoils its first real message) has broken the framing: the answer that line held, or will
    // hold, never comes, so the session breaks at once instead of waiting out the deadline.
    this.client.onerror = (error) => {
      if (server.transport === 'stdio' && isUnreadableMessage(error)) {
        this.#break(
          McpTransportError.malformedResponse(`the server wrote a line that is not JSON-RPC (${error.name})`),
        );
      }
    };
    try {
      await this.client.connect(transport, { timeout: SessionTiming.openTimeoutMs });
    } catch (error) {
      // A malformed line broke the session first: that is why opening failed, not the close it caused.
      const fault =
        this.fault?.code === McpFault.MalformedResponse
          ? this.fault
          : asTransportError(error, guard, `initialize within ${SessionTiming.openTimeoutMs} ms`);
      this.#break(fault);
      void this.close();
      throw fault;
    }
    // Every message from the server is a sign of life: the liveness check pings only a silent server.
    const receive = transport.onmessage;
    transport.onmessage = (message, extra) => {
      this.#lastHeard = performance.now();
      receive?.(message, extra);
    };
    this.startMs = Math.round(performance.now() - started);
  }

  /**
   * One tools/call on this session; `signal` aborts it (the SDK then sends
   * notifications/cancelled). It carries a progressToken, so that the server
   * may report progress (`onProgress`); progress does not move the deadline.
   */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
    onProgress: (report: { progress: number; total?: number; message?: string }) => void = () => {},
    onElicitation?: (asked: ElicitationAsked) => Promise<ElicitationAnswer>,
  ): Promise<CallAnswer> {
    this.#begin();
    if (onElicitation) this.#askers.add(onElicitation);
    try {
      return (await this.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: AbortSignal.any([signal, this.#broken.signal]),
        // The call's own deadline decides (and stops while a person is asked): the SDK's is past both.
        timeout: timeoutMs + HumanRequestLimits.maxElicitationWaitMs + SDK_TIMEOUT_MARGIN_MS,
        onprogress: onProgress,
      })) as CallAnswer;
    } catch (error) {
      // A cancelled call is not answered "send it again": its own signal decides what it was.
      const refused = signal.aborted ? null : this.#sessionRefusal(error);
      if (refused !== null) {
        const expired = McpTransportError.sessionExpired(refused);
        this.#break(expired);
        throw expired;
      }
      throw error;
    } finally {
      if (onElicitation) this.#askers.delete(onElicitation);
      this.#end();
    }
  }

  /**
   * The status with which the server refused the session's id (404, or a 400
   * that blames the session), null otherwise: it restarted or expired the
   * session, and the client must start a new one (MCP's Streamable HTTP
   * transport says so for 404). The request was not processed.
   */
  #sessionRefusal(error: unknown): number | null {
    const transport = this.#transport;
    const sentId = transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined;
    return sentId ? sessionRefusalStatus(error) : null;
  }

  /** No new calls; closed once the calls on it now have ended. */
  retire(): void {
    this.#retiring = true;
    if (this.#calls === 0) void this.close();
  }

  /**
   * Ends the session: calls still waiting fail as a transport fault; a
   * Streamable HTTP session is ended with DELETE; a stdio process gets its
   * stdin closed, then SIGTERM, then SIGKILL (the SDK's order).
   */
  close(): Promise<void> {
    if (this.#closing === null) {
      // Set before the work starts: breaking the session on the way must not close it a second time.
      let done: () => void = () => {};
      this.#closing = new Promise<void>((resolve) => {
        done = resolve;
      });
      void this.#close()
        .catch(() => {})
        .finally(done);
    }
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#stopLiveness();
    this.#break(McpTransportError.serverGone('session was closed by runledger'));
    const transport = this.#transport;
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      const deadline = AbortSignal.timeout(SessionTiming.terminateTimeoutMs);
      await until(transport.terminateSession(), deadline).catch(() => {});
    }
    await this.client.close().catch(() => {});
  }

  #break(fault: McpTransportError): void {
    if (this.#broken.signal.aborted) return;
    this.#broken.abort(fault);
    this.#stopLiveness();
    // A session that broke by itself is closed too: its process stopped, its HTTP session ended.
    if (this.#closing === null) void this.close();
  }

  #begin(): void {
    this.#calls += 1;
    if (this.#calls === 1) {
      this.#lastHeard = performance.now();
      this.#lastTick = this.#lastHeard;
      this.#liveness = setInterval(() => this.#checkLiveness(), SessionTiming.livenessTickMs);
      this.#liveness.unref();
    }
  }

  #end(): void {
    this.#calls -= 1;
    if (this.#calls > 0) return;
    this.#stopLiveness();
    if (this.#retiring) void this.close();
  }

  #stopLiveness(): void {
    clearInterval(this.#liveness);
    this.#liveness = undefined;
    this.#pingSentAt = null;
  }

  /** While calls wait: a ping when the server has been quiet; broken when it stays quiet. */
  #checkLiveness(): void {
    const now = performance.now();
    const late = now - this.#lastTick > 2 * SessionTiming.livenessTickMs;
    this.#lastTick = now;
    // Our own event loop stalled: what arrived meanwhile is still queued, so silence proves nothing yet.
    if (late) return;
    const silent = now - this.#lastHeard;
    if (this.#pingSentAt !== null) {
      if (
        silent >= SessionTiming.unresponsiveAfterMs &&
        now - this.#pingSentAt >= SessionTiming.pingPatienceMs
      ) {
        this.#break(McpTransportError.serverUnresponsive(Math.round(silent)));
      }
      return;
    }
    if (silent < SessionTiming.pingAfterSilenceMs) return;
    this.#pingSentAt = now;
    this.client.ping({ signal: this.#broken.signal, timeout: SessionTiming.openTimeoutMs }).then(
      () => {
        this.#pingSentAt = null;
      },
      (error: unknown) => {
        // A ping that could not even be sent: the server is gone (an HTTP server refusing connections).
        if (this.usable) this.#break(asTransportError(error, null, 'ping'));
      },
    );
  }
}

/** A session as the registry holds it: opened once, awaited by every call that needs it meanwhile. */
interface Entry {
  session: McpSession;
  ready: Promise<void>;
}

/** Consecutive failures of a server's sessions, and when it may be opened again. */
interface Backoff {
  failures: number;
  notBefore: number;
}

/**
 * The MCP sessions of this process: one per registered server, opened on
 * first use, kept and reused; keyed by the server's identifier and a digest
 * of its configuration, so a changed server gets a new session and the old
 * one is closed. A session that ended by itself is reopened by the next call,
 * after a backoff that doubles per failure. Owned by the app, closed on shutdown.
 */
export class McpSessions {
  readonly #entries = new Map<string, Entry>();
  readonly #backoff = new Map<string, Backoff>();
  #closed = false;

  constructor(readonly policy: McpPolicy) {}

  /** The spec of the session a call to this server needs; throws the refusal when settings forbid it. */
  specFor(server: McpServerConfig): SessionSpec {
    return specFor(server, this.policy);
  }

  /**
   * The open session for `spec`, opening it if there is none. `opened` is
   * how long opening took when this caller's wait started the session, else null.
   * `signal` ends the wait, not the opening: the next call may use it.
   */
  async sessionFor(
    spec: SessionSpec,
    signal: AbortSignal,
  ): Promise<{ session: McpSession; opened: number | null }> {
    if (this.#closed) throw McpTransportError.transportFailure('the service is stopping');
    const identifier = spec.server.identifier;
    let entry = this.#entries.get(identifier);
    if (entry && (entry.session.key !== spec.key || !entry.session.usable)) {
      entry.session.retire();
      this.#entries.delete(identifier);
      // A session the server let go of is no failure to back off from: the server answers, just not to it.
      const fault = entry.session.fault;
      if (fault && fault.code !== McpFault.SessionExpired) this.#failed(entry.session.key);
      entry = undefined;
    }
    let opener = false;
    if (!entry) {
      opener = true;
      const session = new McpSession(spec, this.policy);
      const wait = Math.max(0, (this.#backoff.get(spec.key)?.notBefore ?? 0) - Date.now());
      const ready = (async () => {
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
        await session.open();
      })();
      const created: Entry = { session, ready };
      this.#entries.set(identifier, created);
      ready.catch(() => {
        if (this.#entries.get(identifier) === created) this.#entries.delete(identifier);
        this.#failed(spec.key);
      });
      entry = created;
    }
    await until(entry.ready, signal);
    return { session: entry.session, opened: opener ? entry.session.startMs : null };
  }

  /** The server answered: its backoff starts over. */
  answered(spec: SessionSpec): void {
    this.#backoff.delete(spec.key);
  }

  #failed(key: string): void {
    const failures = (this.#backoff.get(key)?.failures ?? 0) + 1;
    const delay = Math.min(
      SessionTiming.restartDelayMs * 2 ** (failures - 1),
      SessionTiming.restartDelayMaxMs,
    );
    this.#backoff.set(key, { failures, notBefore: Date.now() + delay });
  }

  /** A server was changed or removed: its session takes no new call and closes when its calls end. */
  retireServer(identifier: string): void {
    const entry = this.#entries.get(identifier);
    if (!entry) return;
    this.#entries.delete(identifier);
    entry.session.retire();
  }

  /** How many sessions are open or opening. */
  get size(): number {
    return this.#entries.size;
  }

  /** Shutdown: every session closed, calls still waiting failed, HTTP sessions ended with DELETE. */
  async close(): Promise<void> {
    this.#closed = true;
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    // A session still opening is closed too: its wait for initialize ends with it.
    await Promise.all(entries.map(({ session }) => session.close()));
  }
}
