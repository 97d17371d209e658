import { createContext, useContext } from 'react';
import type { Client } from 'urql';
import type { ViewerSessionQuery } from './gql/graphql.ts';

/**
 * The key is kept for this browser session's tabs only (sessionStorage): a
 * tab opened from another asks the open tabs for it (below), so a run opened
 * in a new tab stays signed in; closing every tab or signing out forgets it.
 */
const KEY_ITEM = 'runledger.apiKey';

export const storedKey = {
  read: (): string | null => sessionStorage.getItem(KEY_ITEM),
  write: (key: string) => sessionStorage.setItem(KEY_ITEM, key),
  clear: () => sessionStorage.removeItem(KEY_ITEM),
};

/** What the tabs of this origin tell each other: a tab asks for the key, a tab that holds it answers. */
type TabMessage = { type: 'ask' } | { type: 'key'; key: string } | { type: 'signOut' };
const CHANNEL = 'runledger.session';
/** How long a new tab waits for another tab's key before it shows sign-in: other tabs answer in a few ms. */
export const ASK_TABS_MS = 250;

/** The key another open tab holds, or null when none answers within ASK_TABS_MS. */
export function keyFromOpenTabs(): Promise<string | null> {
  if (typeof BroadcastChannel === 'undefined') return Promise.resolve(null);
  const channel = new BroadcastChannel(CHANNEL);
  return new Promise((resolve) => {
    const done = (key: string | null) => {
      clearTimeout(timer);
      channel.close();
      resolve(key);
    };
    const timer = setTimeout(() => done(null), ASK_TABS_MS);
    channel.onmessage = (event: MessageEvent<TabMessage>) => {
      if (event.data.type === 'key') done(event.data.key);
    };
    channel.postMessage({ type: 'ask' } satisfies TabMessage);
  });
}

/**
 * While a tab is open it gives its key to a tab that asks, and a sign-out in
 * any tab signs out every tab (the key is one, so forgetting it is too).
 * Returns what stops listening.
 */
export function joinOpenTabs(onSignedOutElsewhere: () => void): () => void {
  if (typeof BroadcastChannel === 'undefined') return () => {};
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (event: MessageEvent<TabMessage>) => {
    if (event.data.type === 'ask') {
      const key = storedKey.read();
      if (key) channel.postMessage({ type: 'key', key } satisfies TabMessage);
    } else if (event.data.type === 'signOut') {
      storedKey.clear();
      onSignedOutElsewhere();
    }
  };
  return () => channel.close();
}

/** Tells the other open tabs that this key was signed out. */
export function announceSignOut(): void {
  if (typeof BroadcastChannel === 'undefined') return;
  const channel = new BroadcastChannel(CHANNEL);
  channel.postMessage({ type: 'signOut' } satisfies TabMessage);
  channel.close();
}

/** Why sign-in is shown: a wrong key, a key no longer accepted, a service that did not answer, a sign-out in another tab. */
export type SignInReason =
  | { kind: 'wrongKey' }
  | { kind: 'revoked' }
  | { kind: 'unavailable'; code: string }
  | { kind: 'signedOutElsewhere' };

export interface Session {
  client: Client;
  viewer: ViewerSessionQuery['viewer'];
  signOut(): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}
