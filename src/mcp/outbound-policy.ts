import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ENV_NAME } from '../domain/mcp-server.ts';
import { McpSetting, type McpSettings } from './settings.ts';

type Family = 'ipv4' | 'ipv6';

/** What an address is, for the outbound check. The first four are refused whatever the operator lists. */
export type AddressKind =
  | 'cloud metadata'
  | 'link-local'
  | 'unspecified'
  | 'multicast or reserved'
  | 'loopback'
  | 'private'
  | 'public';

const RANGES: ReadonlyArray<readonly [Exclude<AddressKind, 'public'>, string, number, Family]> = [
  // Metadata services answer with the instance's credentials. AWS, Alibaba, Azure.
  ['cloud metadata', '169.254.169.254', 32, 'ipv4'],
  ['cloud metadata', 'fd00:ec2::254', 128, 'ipv6'],
  ['cloud metadata', '100.100.100.200', 32, 'ipv4'],
  ['cloud metadata', '168.63.129.16', 32, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['multicast or reserved', '224.0.0.0', 4, 'ipv4'],
  ['multicast or reserved', '240.0.0.0', 4, 'ipv4'],
  ['multicast or reserved', 'ff00::', 8, 'ipv6'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['loopback', '::1', 128, 'ipv6'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['private', '100.64.0.0', 10, 'ipv4'],
  ['private', 'fc00::', 7, 'ipv6'],
  ['private', 'fec0::', 10, 'ipv6'],
];

/** Kinds only an address or range entry of the allow-list opens. */
const OPENABLE: ReadonlySet<AddressKind> = new Set(['loopback', 'private']);

/** Names of metadata services, refused before any lookup. */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

const KIND_LISTS = new Map<AddressKind, BlockList>();
for (const [kind, network, prefix, family] of RANGES) {
  const list = KIND_LISTS.get(kind) ?? new BlockList();
  list.addSubnet(network, prefix, family);
  KIND_LISTS.set(kind, list);
}

/** The eight groups of an IPv6 address, from any of its spellings (WHATWG URL parsing canonicalises). */
function ipv6Groups(address: string): number[] {
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((group) => Number.parseInt(group, 16));
}

/**
 * One spelling per address: no brackets, no zone, IPv4 in dotted decimal, and
 * IPv4 carried in IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
 * NAT64 `64:ff9b::a.b.c.d`) as the IPv4 address it reaches.
 */
export function normaliseAddress(address: string): { address: string; family: Family } | null {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const version = isIP(bare);
  if (version === 4) return { address: bare, family: 'ipv4' };
  if (version !== 6) return null;
  const groups = ipv6Groups(bare);
  const zeros = (from: number, to: number) => groups.slice(from, to).every((group) => group === 0);
  const [, , , , , g5 = 0, g6 = 0, g7 = 0] = groups;
  const mapped = zeros(0, 5) && g5 === 0xffff;
  const compatible = zeros(0, 6) && (g6 !== 0 || g7 > 1);
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6);
  if (mapped || compatible || nat64) {
    return { address: [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff].join('.'), family: 'ipv4' };
  }
  return { address: groups.map((group) => group.toString(16)).join(':'), family: 'ipv6' };
}

export function addressKind(address: string, family: Family): AddressKind {
  for (const [kind, list] of KIND_LISTS) if (list.check(address, family)) return kind;
  return 'public';
}

/** A URL's host as compared: lower case, no brackets, no trailing dot. */
export function bareHost(hostname: string): string {
  return hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

/** The ports an entry without one allows: the standard web ports, never a database's or the service's own. */
export const STANDARD_PORTS: readonly number[] = Object.freeze([80, 443]);

/** The ports of one allow-list entry: a list, or every port (`:*`). */
type PortRule = readonly number[] | 'any';

/** The port a request to this URL connects to: the URL's own, or its scheme's default. */
export function urlPort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** What an entry's host part may be read as, before its port. */
const NAME_ENTRY = /^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$/;
const PORT_ENTRY = /^[1-9]\d{0,4}$/;

/**
 * An entry cut into its host and its port text (null: none given). IPv6 with
 * a port must be in brackets; an unbracketed entry with more than one colon
 * is IPv6 (or an IPv6 range) as a whole, since `::1:3000` is an address too.
 */
function splitEntry(entry: string): { host: string; port: string | null; bracketed: boolean } | null {
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0) return null;
    const rest = entry.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return null;
    return { host: entry.slice(1, close), port: rest === '' ? null : rest.slice(1), bracketed: true };
  }
  const colons = entry.split(':').length - 1;
  if (colons !== 1) return { host: entry, port: null, bracketed: false };
  const at = entry.indexOf(':');
  return { host: entry.slice(0, at), port: entry.slice(at + 1), bracketed: false };
}

function portRule(text: string | null): PortRule | null {
  if (text === null) return STANDARD_PORTS;
  if (text === '*') return 'any';
  const port = Number(text);
  return PORT_ENTRY.test(text) && port <= 65_535 ? [port] : null;
}

/** The hosts of the entries that share one port rule. */
class HostGroup {
  any = false;
  readonly names = new Set<string>();
  readonly suffixes: string[] = [];
  readonly addresses = new BlockList();

  constructor(readonly ports: PortRule) {}

  allowsPort(port: number | null): boolean {
    return port === null || this.ports === 'any' || this.ports.includes(port);
  }

  namesHost(host: string): boolean {
    if (this.any) return true;
    if (isIP(host)) return false;
    return this.names.has(host) || this.suffixes.some((suffix) => host.endsWith(suffix));
  }
}

/**
 * The operator's outbound allow-list, parsed once; an entry it cannot read
 * stops the service at start. Each entry allows its host on its ports only.
 */
class HostAllowList {
  readonly #groups = new Map<string, HostGroup>();

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const invalid = (why: string) =>
        new Error(
          `${McpSetting.AllowedHosts}: cannot read the entry "${raw}": ${why} (write host, host:port or host:*; an IPv6 address or range with a port in brackets, [::1]:3000)`,
        );
      const parts = splitEntry(raw.trim().toLowerCase());
      if (!parts) throw invalid('a bracket opens an IPv6 address or range, closes it, then :port or nothing');
      const ports = portRule(parts.port);
      if (!ports) throw invalid(`the port "${parts.port}" is not 1 to 65535 or *`);
      const host = parts.host.replace(/\.$/, '');
      const [network = '', prefixText] = host.split('/');
      if (parts.bracketed && isIP(network) !== 6) throw invalid('brackets hold an IPv6 address or range');
      const key = ports === 'any' ? '*' : ports.join(',');
      const group = this.#groups.get(key) ?? new HostGroup(ports);
      this.#groups.set(key, group);
      if (host === '*') {
        group.any = true;
      } else if (prefixText !== undefined) {
        const normal = normaliseAddress(network);
        const prefix = Number(prefixText);
        const max = normal?.family === 'ipv4' ? 32 : 128;
        if (!normal || !/^\d{1,3}$/.test(prefixText) || prefix > max || host.split('/').length > 2) {
          throw invalid('not a CIDR range');
        }
        group.addresses.addSubnet(normal.address, prefix, normal.family);
      } else if (normaliseAddress(host)) {
        const normal = normaliseAddress(host);
        if (normal) group.addresses.addAddress(normal.address, normal.family);
      } else if (NAME_ENTRY.test(host)) {
        if (host.startsWith('*.')) group.suffixes.push(host.slice(1));
        else group.names.add(host);
      } else {
        throw invalid('not a host name, address or range');
      }
    }
  }

  /** Whether the host, by its name (or `*`), is on the list for this port (null: for some port). */
  namesHost(host: string, port: number | null): boolean {
    for (const group of this.#groups.values()) {
      if (group.allowsPort(port) && group.namesHost(host)) return true;
    }
    return false;
  }

  /** Whether an address or range entry covers the address for this port (null: for some port). */
  coversAddress(address: string, family: Family, port: number | null): boolean {
    for (const group of this.#groups.values()) {
      if (group.allowsPort(port) && group.addresses.check(address, family)) return true;
    }
    return false;
  }
}

/** The refusal of one stdio program, or of one outbound host: a sentence for people. */
export type Refusal = string;

/**
 * The operator's MCP settings as rules: which host may be contacted on which
 * port once its addresses are known, which program may be started, with which
 * environment, and which variables a header may carry.
 */
export class McpPolicy {
  readonly #hosts: HostAllowList;
  readonly #commands: readonly (readonly string[])[];
  readonly #stdioEnv: readonly string[];
  readonly #headerEnv: ReadonlySet<string>;

  constructor(settings: McpSettings) {
    this.#hosts = new HostAllowList(settings.allowedHosts);
    this.#commands = settings.stdioCommands.map((entry) => {
      if (entry.length === 0 || entry[0] === '')
        throw new Error(`${McpSetting.StdioCommands}: an empty entry`);
      return [...entry];
    });
    for (const name of settings.stdioEnv) {
      if (!ENV_NAME.test(name)) throw new Error(`${McpSetting.StdioEnv}: "${name}" is not a variable name`);
    }
    this.#stdioEnv = [...settings.stdioEnv];
    const headerEnv = settings.headerEnv ?? [];
    for (const name of headerEnv) {
      if (!ENV_NAME.test(name)) throw new Error(`${McpSetting.HeaderEnv}: "${name}" is not a variable name`);
    }
    this.#headerEnv = new Set(headerEnv);
  }

  /**
   * Why the host may not be contacted on this port at these addresses (every
   * one of them is checked: a mixed answer is refused); null when it may.
   * `addresses` null: not resolved, so only what the name alone decides.
   */
  hostRefusal(hostname: string, port: number, addresses: readonly string[] | null): Refusal | null {
    const refusal = this.#refusal(bareHost(hostname), port, addresses);
    // Allowed on another port: said so, so that the operator knows it is the port, not the host.
    if (refusal === null || this.#refusal(bareHost(hostname), null, addresses) !== null) return refusal;
    return `port ${port} of ${bareHost(hostname)} is not on ${McpSetting.AllowedHosts}`;
  }

  /** The host checks, for one port or (null) for any port some entry allows. */
  #refusal(host: string, port: number | null, addresses: readonly string[] | null): Refusal | null {
    if (METADATA_NAMES.has(host)) return `${host} is a cloud metadata name`;
    const named = this.#hosts.namesHost(host, port);
    const literal = normaliseAddress(host);
    const candidates = literal ? [host] : addresses;
    if (candidates === null) {
      return named ? null : `${host} is not on ${McpSetting.AllowedHosts}`;
    }
    for (const candidate of candidates) {
      const normal = normaliseAddress(candidate);
      if (!normal) return `${host} resolved to something that is not an address`;
      const kind = addressKind(normal.address, normal.family);
      const where = literal ? normal.address : `${host} resolves to ${normal.address}, which`;
      const covered = this.#hosts.coversAddress(normal.address, normal.family, port);
      if (kind !== 'public' && !OPENABLE.has(kind)) return `${where} is a ${kind} address`;
      if (OPENABLE.has(kind) && !covered) {
        return `${where} is a ${kind} address not on ${McpSetting.AllowedHosts}`;
      }
      if (!named && !covered) return `${where} is not on ${McpSetting.AllowedHosts}`;
    }
    return null;
  }

  /** The host's addresses, looked up now and checked for this port; a refusal when any is refused. */
  async resolveHost(
    hostname: string,
    port: number,
    family = 0,
  ): Promise<{ addresses: LookupAddress[]; refusal: Refusal | null }> {
    const host = bareHost(hostname);
    if (normaliseAddress(host)) {
      const literal = { address: host, family: isIP(host) };
      return { addresses: [literal], refusal: this.hostRefusal(host, port, [host]) };
    }
    const early = this.hostRefusal(host, port, []);
    if (early) return { addresses: [], refusal: early };
    const addresses = await new Promise<LookupAddress[] | null>((resolve) => {
      dnsLookup(host, { all: true, family }, (error, found) => resolve(error ? null : found));
    });
    if (!addresses || addresses.length === 0) {
      return { addresses: [], refusal: this.hostRefusal(host, port, null) };
    }
    const refusal = this.hostRefusal(
      host,
      port,
      addresses.map((entry) => entry.address),
    );
    return { addresses, refusal };
  }

  /** Why this program may not be started with these arguments; null when an entry allows it. */
  commandRefusal(command: string, args: readonly string[]): Refusal | null {
    const allowed = this.#commands.some(
      ([program, ...leading]) => program === command && leading.every((argument, i) => args[i] === argument),
    );
    return allowed ? null : `the command ${command} is not on ${McpSetting.StdioCommands}`;
  }

  /** The environment of a stdio server: the SDK's safe set and the variables the operator named. */
  childEnvironment(): Record<string, string> {
    const env = getDefaultEnvironment();
    for (const name of this.#stdioEnv) {
      const value = process.env[name];
      if (value !== undefined) env[name] = value;
    }
    return env;
  }

  /** Why a header may not reference this variable (it is not on the operator's list); null when it may. */
  headerEnvRefusal(variable: string): Refusal | null {
    return this.#headerEnv.has(variable)
      ? null
      : `the variable ${variable} is not on ${McpSetting.HeaderEnv}`;
  }

  /**
   * The value of a variable a header references, read now; a variable not on
   * the operator's list is never read (undefined), whatever the caller checked.
   */
  headerEnvValue(name: string): string | undefined {
    return this.#headerEnv.has(name) ? process.env[name] : undefined;
  }
}
