import { type FormEvent, useId, useState } from 'react';
import { LanguageSwitch, usePageTitle } from '../components.tsx';
import { useWords } from '../locale.ts';
import type { SignInReason } from '../session.ts';

export function SignIn({
  onSignIn,
  reason,
}: {
  onSignIn: (key: string) => Promise<void>;
  /** Why sign-in is shown, said above the form; null on a first visit or after signing out here. */
  reason: SignInReason | null;
}) {
  const { t } = useWords();
  const id = useId();
  usePageTitle(t('viewer.signIn.title'));
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    try {
      await onSignIn(key.trim());
    } finally {
      setBusy(false);
    }
  }
  return (
    <main className="sign-in">
      <h1>runledger</h1>
      <form onSubmit={submit}>
        <h2>{t('viewer.signIn.title')}</h2>
        <label htmlFor={id}>{t('viewer.signIn.key')}</label>
        <input
          id={id}
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={key}
          onChange={(event) => setKey(event.target.value)}
          required
        />
        {reason && (
          <p role="alert" className={reason.kind === 'signedOutElsewhere' ? 'note' : 'error'}>
            {reason.kind === 'unavailable'
              ? t('viewer.signIn.unavailable', { code: reason.code })
              : t(`viewer.signIn.${reason.kind}`)}
          </p>
        )}
        <button type="submit" disabled={busy || key.trim() === ''}>
          {t('viewer.signIn.submit')}
        </button>
        <p className="note">{t('viewer.signIn.hint')}</p>
      </form>
      <LanguageSwitch />
    </main>
  );
}
