import { lazy, Suspense, useCallback, useEffect, useRef, useState } from 'react';
import { Link, Navigate, NavLink, Route, Routes, useLocation } from 'react-router';
import { Provider } from 'urql';
import { createApiClient, errorCode, isServiceDown } from './client.ts';
import { LanguageSwitch, usePageTitle } from './components.tsx';
import type { ViewerSessionQuery } from './gql/graphql.ts';
import { i18n } from './i18n.ts';
import { useLocale, useLocalPath, useWords } from './locale.ts';
import { ViewerSessionQuery as ViewerSessionDocument } from './operations.ts';
import { InboxPage } from './pages/Inbox.tsx';
import { KeysPage } from './pages/Keys.tsx';
import { RunPage } from './pages/Run.tsx';
import { RunsPage } from './pages/Runs.tsx';
import { SignIn } from './pages/SignIn.tsx';
import {
  announceSignOut,
  joinOpenTabs,
  keyFromOpenTabs,
  type Session,
  SessionContext,
  type SignInReason,
  storedKey,
  useSession,
} from './session.ts';

// The chart pages load the chart library when first opened: the runs list does not wait for it.
const ServersPage = lazy(() =>
  import('./pages/Servers.tsx').then((module) => ({ default: module.ServersPage })),
);
const ServerPage = lazy(() =>
  import('./pages/Servers.tsx').then((module) => ({ default: module.ServerPage })),
);
const StatsPage = lazy(() => import('./pages/Stats.tsx').then((module) => ({ default: module.StatsPage })));

type Check =
  | { state: 'checking' }
  | { state: 'signedOut'; reason: SignInReason | null }
  /** The key kept in this tab could not be checked (the service is down): kept, and tried again. */
  | { state: 'unreachable'; code: string }
  | { state: 'signedIn'; session: Session };

type WhoIs =
  | { session: Omit<Session, 'signOut'> }
  | { refused: 'key' }
  | { refused: 'service'; code: string };

/** Asks the service who a key is: the viewer, a refused key, or a service that did not answer. */
async function whoIs(key: string, onKeyRefused: () => void): Promise<WhoIs> {
  const client = createApiClient(key, onKeyRefused);
  const result = await client.query(ViewerSessionDocument, {}).toPromise();
  if (result.data && !result.error)
    return { session: { client, viewer: result.data.viewer as ViewerSessionQuery['viewer'] } };
  if (result.error && isServiceDown(result.error))
    return { refused: 'service', code: errorCode(result.error) };
  return { refused: 'key' };
}

/** Waits between checks of a kept key while the service is down: 1 s, doubling, at most 10 s. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MOST_MS = 10_000;

export function App() {
  const locale = useLocale();
  useEffect(() => {
    void i18n.changeLanguage(locale);
    document.documentElement.lang = locale;
  }, [locale]);
  const [check, setCheck] = useState<Check>({ state: 'checking' });

  /** Forgets the key in this tab; `reason` says why on the sign-in page. */
  const signedOut = useCallback((reason: SignInReason | null) => {
    storedKey.clear();
    setCheck({ state: 'signedOut', reason });
  }, []);
  const signOut = useCallback(() => {
    announceSignOut();
    signedOut(null);
  }, [signedOut]);
  // A key revoked while the page is open leads back to sign-in, which says so.
  const keyRefused = useCallback(() => signedOut({ kind: 'revoked' }), [signedOut]);

  /** Signs in with a key typed on the sign-in page: a refusal says why, and keeps nothing. */
  async function signIn(key: string): Promise<void> {
    const answer = await whoIs(key, keyRefused);
    if ('session' in answer) {
      storedKey.write(key);
      setCheck({ state: 'signedIn', session: { ...answer.session, signOut } });
    } else
      signedOut(answer.refused === 'key' ? { kind: 'wrongKey' } : { kind: 'unavailable', code: answer.code });
  }

  // A key kept in this tab, or held by another open tab, is checked on the first render; while the service
  // is down it is kept and checked again, never forgotten for an outage.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs once, on the first render
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    async function resume(wait: number): Promise<void> {
      const key = storedKey.read() ?? (await keyFromOpenTabs());
      if (stopped) return;
      if (!key) return setCheck({ state: 'signedOut', reason: null });
      const answer = await whoIs(key, keyRefused);
      if (stopped) return;
      if ('session' in answer) {
        storedKey.write(key);
        setCheck({ state: 'signedIn', session: { ...answer.session, signOut } });
      } else if (answer.refused === 'key') signedOut({ kind: 'revoked' });
      else {
        setCheck({ state: 'unreachable', code: answer.code });
        timer = setTimeout(() => void resume(Math.min(wait * 2, RETRY_MOST_MS)), wait);
      }
    }
    void resume(RETRY_FIRST_MS);
    const leave = joinOpenTabs(() =>
      setCheck({ state: 'signedOut', reason: { kind: 'signedOutElsewhere' } }),
    );
    return () => {
      stopped = true;
      clearTimeout(timer);
      leave();
    };
  }, []);

  if (check.state === 'unreachable') return <Unreachable code={check.code} onSignOut={signOut} />;
  if (check.state === 'checking') return <Loading />;
  if (check.state === 'signedOut') return <SignIn onSignIn={signIn} reason={check.reason} />;
  return (
    <SessionContext.Provider value={check.session}>
      <Provider value={check.session.client}>
        <Layout>
          <Suspense fallback={<Loading />}>
            <Routes>
              <Route path="/" element={<RunsPage />} />
              <Route path="/runs" element={<RunsPage />} />
              <Route path="/runs/:uuid" element={<RunPage />} />
              <Route path="/servers" element={<ServersPage />} />
              <Route path="/servers/:server" element={<ServerPage />} />
              <Route path="/stats" element={<StatsPage />} />
              <Route path="/inbox" element={<InboxPage />} />
              <Route path="/keys" element={<KeysPage />} />
              <Route path="*" element={<Navigate to="/" replace />} />
            </Routes>
          </Suspense>
        </Layout>
      </Provider>
    </SessionContext.Provider>
  );
}

/** The service did not answer while a kept key was checked: said, with the key kept and tried again. */
function Unreachable({ code, onSignOut }: { code: string; onSignOut: () => void }) {
  const { t } = useWords();
  usePageTitle(t('viewer.unreachable.title'));
  return (
    <main className="sign-in">
      <h1>runledger</h1>
      <p role="status">{t('viewer.unreachable.text', { code })}</p>
      <p className="note">{t('viewer.unreachable.retrying')}</p>
      <button type="button" onClick={onSignOut}>
        {t('viewer.unreachable.otherKey')}
      </button>
    </main>
  );
}

function Loading() {
  const { t } = useWords();
  return <p className="note">{t('viewer.loading')}</p>;
}

function Layout({ children }: { children: React.ReactNode }) {
  const { t } = useWords();
  const to = useLocalPath();
  const { viewer, signOut } = useSession();
  // After a navigation (Apply, a page, a link) focus starts at the content, not at the top of the body.
  const main = useRef<HTMLElement>(null);
  const location = useLocation();
  const first = useRef(true);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the address changes
  useEffect(() => {
    if (first.current) first.current = false;
    else main.current?.focus();
  }, [location.pathname, location.search]);
  return (
    <>
      <a className="skip-link" href="#content">
        {t('viewer.skipToContent')}
      </a>
      <header className="top">
        <Link to={to('/')} className="brand">
          {t('viewer.title')}
        </Link>
        <nav>
          <NavLink to={to('/runs')}>{t('viewer.nav.runs')}</NavLink>
          <NavLink to={to('/stats')}>{t('viewer.nav.stats')}</NavLink>
          <NavLink to={to('/servers')}>{t('viewer.nav.servers')}</NavLink>
          {/* Only keys that may decide see the inbox. */}
          {viewer.permissions.includes('APPROVE_RUNS') && (
            <NavLink to={to('/inbox')}>{t('viewer.nav.inbox')}</NavLink>
          )}
          {/* Only keys that may manage keys see the keys. */}
          {viewer.permissions.includes('MANAGE_KEYS') && (
            <NavLink to={to('/keys')}>{t('viewer.nav.keys')}</NavLink>
          )}
        </nav>
        <span className="spacer" />
        <LanguageSwitch />
        <span className="actor">{t('viewer.signedInAs', { actor: viewer.actor })}</span>
        <button type="button" onClick={signOut}>
          {t('viewer.signOut')}
        </button>
      </header>
      <main id="content" ref={main} tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
