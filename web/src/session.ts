import { createContext, useContext } from 'react';
import type { Client } from 'urql';
import type { ViewerSessionQuery } from './gql/graphql.ts';

/** The key is kept for this browser tab only (sessionStorage): closing the tab or signing out forgets it. */
const KEY_ITEM = 'runledger.apiKey';

export const storedKey = {
  read: (): string | null => sessionStorage.getItem(KEY_ITEM),
  write: (key: string) => sessionStorage.setItem(KEY_ITEM, key),
  clear: () => sessionStorage.removeItem(KEY_ITEM),
};

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
