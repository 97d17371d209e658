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

/** The operator's outbound allow-list, parsed once; an entry it cannot read stops the service at start. */
class HostAllowList {
  readonly #any: boolean;
  readonly #names = new Set<string>();
  readonly #suffixes: string[] = [];
  readonly #addresses = new BlockList();

  constructor(entries: readonly string[]) {
    let any = false;
    for (const raw of entries) {
      const entry = bareHost(raw.trim());
      const invalid = () => new Error(`${McpSetting.AllowedHosts}: cannot read the entry "${raw}"`);
      if (entry === '*') {
        any = true;
      } else if (entry.includes('/')) {
        const [network = '', prefixText = ''] = entry.split('/');
        const normal = normaliseAddress(network);
        const prefix = Number(prefixText);
        const max = normal?.family === 'ipv4' ? 32 : 128;
        if (!normal || !/^\d{1,3}$/.test(prefixText) || prefix > max) throw invalid();
        this.#addresses.addSubnet(normal.address, prefix, normal.family);
      } else if (normaliseAddress(entry)) {
        const normal = normaliseAddress(entry);
        if (normal) this.#addresses.addAddress(normal.address, normal.family);
      } else if (/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(entry)) {
        if (entry.startsWith('*.')) this.#suffixes.push(entry.slice(1));
        else this.#names.add(entry);
      } else {
        throw invalid();
      }
    }
    this.#any = any;
  }

  /** Whether the host, by its name (or `*`), is on the list. */
  namesHost(host: string): boolean {
    if (this.#any) return true;
    if (isIP(host)) return false;
    return this.#names.has(host) || this.#suffixes.some((suffix) => host.endsWith(suffix));
  }

  coversAddress(address: string, family: Family): boolean {
    return this.#addresses.check(address, family);
  }
}

/** The refusal of one stdio program, or of one outbound host: a sentence for people. */
export type Refusal = string;

/**
 * The operator's MCP settings as rules: which host may be contacted once its
 * addresses are known, which program may be started, with which environment.
 */
export class McpPolicy {
  readonly #hosts: HostAllowList;
  readonly #commands: readonly (readonly string[])[];
  readonly #stdioEnv: readonly string[];

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
  }

  /**
   * Why the host may not be contacted at these addresses (every one of them
   * is checked: a mixed answer is refused); null when it may. `addresses`
   * null: not resolved, so only what the name alone decides.
   */
  hostRefusal(hostname: string, addresses: readonly string[] | null): Refusal | null {
    const host = bareHost(hostname);
    if (METADATA_NAMES.has(host)) return `${host} is a cloud metadata name`;
    const named = this.#hosts.namesHost(host);
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
      const covered = this.#hosts.coversAddress(normal.address, normal.family);
      if (kind !== 'public' && !OPENABLE.has(kind)) return `${where} is a ${kind} address`;
      if (OPENABLE.has(kind) && !covered) {
        return `${where} is a ${kind} address not on ${McpSetting.AllowedHosts}`;
      }
      if (!named && !covered) return `${where} is not on ${McpSetting.AllowedHosts}`;
    }
    return null;
  }

  /** The host's addresses, looked up now and checked; a refusal when any is refused. */
  async resolveHost(
    hostname: string,
    family = 0,
  ): Promise<{ addresses: LookupAddress[]; refusal: Refusal | null }> {
    const host = bareHost(hostname);
    if (normaliseAddress(host)) {
      const literal = { address: host, family: isIP(host) };
      return { addresses: [literal], refusal: this.hostRefusal(host, [host]) };
    }
    const early = this.hostRefusal(host, []);
    if (early) return { addresses: [], refusal: early };
    const addresses = await new Promise<LookupAddress[] | null>((resolve) => {
      dnsLookup(host, { all: true, family }, (error, found) => resolve(error ? null : found));
    });
    if (!addresses || addresses.length === 0) {
      return { addresses: [], refusal: this.hostRefusal(host, null) };
    }
    const refusal = this.hostRefusal(
      host,
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
}
