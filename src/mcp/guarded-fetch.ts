import type { LookupAddress, LookupOptions } from 'node:dns';
import { setMaxListeners } from 'node:events';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isWebUrl } from '../domain/mcp-server.ts';
import { bareHost, type McpPolicy, normaliseAddress, urlPort } from './outbound-policy.ts';
import { McpTransportError } from './transport-error.ts';

/**
 * A fetch that connects only where the policy allows, for one MCP session.
 * Every request opens its own connection (no keep-alive agent), and that
 * connection's DNS lookup is the one checked: the addresses the policy
 * accepted are the addresses the socket is given, so a name cannot resolve
 * to one address for the check and another for the connection. An IP literal
 * needs no lookup and is checked as it stands. The port is checked with the
 * host, from each request's own URL. Redirects are not followed here (the SDK
 * follows same-origin ones, through this fetch again).
 */
export class GuardedFetch {
  /** The first refusal, kept: the SDK may wrap the error it sees. */
  refusal: McpTransportError | null = null;

  /**
   * `onBrokenStream`: called when an answer to a POST ends before it is complete (the server died or
   * cut the stream): the SDK would wait for the rest, or reconnect, while the call hangs.
   */
  constructor(
    private readonly policy: McpPolicy,
    private readonly onBrokenStream: () => void = () => {},
  ) {}

  readonly fetch: FetchLike = async (input, init = {}) => {
    const url = new URL(input instanceof URL ? input.href : input);
    if (!isWebUrl(url)) {
      throw this.#refuse(`${url.protocol} is neither http nor https`);
    }
    const host = bareHost(url.hostname);
    const port = urlPort(url);
    if (normaliseAddress(host)) {
      const refusal = this.policy.hostRefusal(host, port, [host]);
      if (refusal) throw this.#refuse(refusal);
    }
    const body = init.body ?? undefined;
    if (body !== undefined && typeof body !== 'string') {
      throw McpTransportError.transportFailure('a request body that is not text');
    }
    // The SDK gives every request of a session one signal; each open answer stream listens to it.
    if (init.signal) setMaxListeners(0, init.signal);
    const options: RequestOptions = {
      method: init.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init.headers)),
      signal: init.signal ?? undefined,
      // The port checked is the port connected to, stated rather than left to the URL's parsing.
      port,
      lookup: this.#lookupFor(port),
      agent: false,
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const request = send(url, options, (response) => {
        if (options.method === 'POST') {
          response.once('close', () => {
            if (!response.complete) this.onBrokenStream();
          });
        }
        resolve(asResponse(response, options.method));
      });
      request.on('error', (error) => reject(this.refusal ?? error));
      request.end(body);
    });
  };

  #refuse(reason: string): McpTransportError {
    this.refusal ??= McpTransportError.refusedHost(reason);
    return this.refusal;
  }

  /** The socket's lookup for a request to `port`: resolve, check every address, hand over exactly those. */
  #lookupFor(port: number): LookupFunction {
    return (hostname, options: LookupOptions, callback) => this.#lookup(hostname, port, options, callback);
  }

  #lookup(
    hostname: string,
    port: number,
    options: LookupOptions,
    callback: Parameters<LookupFunction>[2],
  ): void {
    const family = typeof options.family === 'number' ? options.family : 0;
    this.policy.resolveHost(hostname, port, family).then(
      ({ addresses, refusal }) => {
        if (refusal) return callback(this.#refuse(refusal), '', 0);
        const [first] = addresses;
        if (!first) return callback(new Error(`no address for ${hostname}`), '', 0);
        if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
        callback(null, first.address, first.family);
      },
      (error: Error) => callback(error, '', 0),
    );
  }
}

function asResponse(response: IncomingMessage, method = 'GET'): Response {
  const status = response.statusCode ?? 0;
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
      headers.append(name, one);
  }
  const empty = method === 'HEAD' || status === 204 || status === 304;
  if (empty) response.resume();
  const body = empty ? null : (Readable.toWeb(response) as unknown as ReadableStream<Uint8Array>);
  return new Response(body, { status, statusText: response.statusMessage, headers });
}
