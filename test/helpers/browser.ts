// A headless Chromium (playwright-core, Debian's /usr/bin/chromium) for browser sign-in flows, and
// a bounded walker that signs in at every test IdP login form met on the way.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export interface TestBrowser {
  /** A fresh context (its own cookies); close it when done, or let close() end them all. */
  context(): Promise<BrowserContext>;
  close(): Promise<void>;
}

export const CHROMIUM = '/usr/bin/chromium';

export async function startBrowser(): Promise<TestBrowser> {
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
  return {
    context: () => browser.newContext(),
    close: () => browser.close(),
  };
}

export interface SignInOptions {
  /** Stop once the page's URL matches (a RegExp, or a predicate on the URL). */
  until?: RegExp | ((url: string) => boolean);
  /** The whole walk's bound (default 20 s). */
  timeoutMs?: number;
}

/**
 * Opens url in the page and signs in as `username` at every test IdP login form met on the way
 * (any number of redirects between servers), until the page's URL matches `until` or a page
 * without a login form is reached; returns the final URL and the page's text.
 */
export async function followSignIn(page: Page, url: string, username: string, options: SignInOptions = {}): Promise<{ url: string; text: string }> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  const remaining = (): number => {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`followSignIn: gave up at ${page.url()} (timeout)`);
    return left;
  };
  const until = options.until;
  const done = (current: string): boolean => (until === undefined ? false : typeof until === 'function' ? until(current) : until.test(current));

  await page.goto(url, { waitUntil: 'load', timeout: remaining() });
  while (!done(page.url())) {
    const form = page.locator('form[action^="/interaction/"]').filter({ has: page.locator('#username') });
    if ((await form.count()) === 0) break;
    await page.fill('#username', username, { timeout: remaining() });
    // HTTP redirects do not commit a document, so the next main-frame navigation is where the chain ends.
    const navigated = page.waitForEvent('framenavigated', { predicate: (frame) => frame === page.mainFrame(), timeout: remaining() });
    await Promise.all([navigated, page.click('#submit', { timeout: remaining() })]);
    await page.waitForLoadState('load', { timeout: remaining() });
  }
  return { url: page.url(), text: await page.locator('body').innerText({ timeout: remaining() }) };
}
