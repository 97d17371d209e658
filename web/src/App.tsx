import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { Link, Navigate, NavLink, Route, Routes } from 'react-router';
import { Provider } from 'urql';
import { createApiClient, errorCode } from './client.ts';
import { LanguageSwitch } from './components.tsx';
import type { ViewerSessionQuery } from './gql/graphql.ts';
import { i18n } from './i18n.ts';
import { useLocale, useLocalPath, useWords } from './locale.ts';
import { ViewerSessionQuery as ViewerSessionDocument } from './operations.ts';
import { InboxPage } from './pages/Inbox.tsx';
import { RunPage } from './pages/Run.tsx';
import { RunsPage } from './pages/Runs.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { type Session, SessionContext, storedKey, useSession } from './session.ts';

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
  | { state: 'signedOut'; wrongKey: boolean }
  | { state: 'signedIn'; session: Session };

/** Asks the service who a key is: the viewer, or null when the key is not valid. */
async function whoIs(
  key: string,
  onKeyRefused: () => void,
): Promise<{ session: Omit<Session, 'signOut'> } | { refused: string }> {
  const client = createApiClient(key, onKeyRefused);
  const result = await client.query(ViewerSessionDocument, {}).toPromise();
  if (result.error || !result.data) return { refused: result.error ? errorCode(result.error) : 'UNKNOWN' };
  return { session: { client, viewer: result.data.viewer as ViewerSessionQuery['viewer'] } };
}

export function App() {
  const locale = useLocale();
  useEffect(() => {
    void i18n.changeLanguage(locale);
    document.documentElement.lang = locale;
  }, [locale]);
  const [check, setCheck] = useState<Check>(() =>
    storedKey.read() ? { state: 'checking' } : { state: 'signedOut', wrongKey: false },
  );

  const signOut = useMemo(
    () => () => {
      storedKey.clear();
      setCheck({ state: 'signedOut', wrongKey: false });
    },
    [],
  );

  async function signIn(key: string): Promise<void> {
    const answer = await whoIs(key, signOut);
    if ('refused' in answer) {
      storedKey.clear();
      setCheck({ state: 'signedOut', wrongKey: answer.refused === 'UNAUTHENTICATED' });
      return;
    }
    storedKey.write(key);
    setCheck({ state: 'signedIn', session: { ...answer.session, signOut } });
  }

  // A key kept from earlier in this tab is checked once; a revoked key leads back to sign-in.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs once, on the first render
  useEffect(() => {
    const key = storedKey.read();
    if (key) void signIn(key);
  }, []);

  if (check.state === 'checking') return <Loading />;
  if (check.state === 'signedOut') return <SignIn onSignIn={signIn} wrongKey={check.wrongKey} />;
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
              <Route path="*" element={<Navigate to="/" replace />} />
            </Routes>
          </Suspense>
        </Layout>
      </Provider>
    </SessionContext.Provider>
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
  return (
    <>
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
        </nav>
        <span className="spacer" />
        <LanguageSwitch />
        <span className="actor">{t('viewer.signedInAs', { actor: viewer.actor })}</span>
        <button type="button" onClick={signOut}>
          {t('viewer.signOut')}
        </button>
      </header>
      <main>{children}</main>
    </>
  );
}
