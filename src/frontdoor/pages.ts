// The front door's two pages: the consent page (who asks, for what, as whom) and the refusal
// page for a request that cannot be redirected back. No scripts, no external assets, every value
// escaped; framing refused (a consent button must never be clicked through someone else's page).
import { formActionSource } from './rules.js';

export interface ConsentView {
  flow: string;
  csrf: string;
  clientName: string;
  clientId: string;
  kind: 'cimd' | 'dcr';
  redirectUri: string;
  firstTime: boolean;
  user: string;
  resource: string;
}

const STYLE = 'body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}.note{color:#8a4b00}button{margin-right:1rem;padding:.4rem 1.2rem}';

function document(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><meta name="referrer" content="same-origin"><title>${escape(title)}</title><style>${STYLE}</style></head><body><h1>Switchyard</h1>${body}</body></html>`;
}

function headers(formAction: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    // same-origin, not no-referrer: with no-referrer the form's POST carries `Origin: null`, which the edge refuses.
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action ${formAction}`,
  };
}

/** The consent page: its form posts to /oauth/consent, whose answer redirects to the client (form-action names it). */
export function consentPage(view: ConsentView): Response {
  const redirect = new URL(view.redirectUri);
  const clientHost = view.kind === 'cimd' ? new URL(view.clientId).hostname : undefined;
  const notes = [
    view.kind === 'dcr' ? 'This client registered itself: its name is unverified.' : undefined,
    view.firstTime ? 'This is the first time you are asked about this client.' : undefined,
    /^(localhost|127\.|\[::1\])/.test(redirect.host) ? 'It receives the answer on this computer (a local address): allow only a client you started yourself.' : undefined,
  ].filter((note): note is string => note !== undefined);
  const body =
    `<p id="request"><strong id="client-name">${escape(view.clientName)}</strong>${clientHost ? ` (<span id="client-host">${escape(clientHost)}</span>)` : ' (<span id="unverified">unverified</span>)'} asks to use <strong id="resource">${escape(view.resource)}</strong> as <strong id="user">${escape(view.user)}</strong>.</p>` +
    `<p>It will be sent back to <strong id="redirect-host">${escape(redirect.protocol === 'http:' || redirect.protocol === 'https:' ? redirect.host : redirect.protocol)}</strong>.</p>` +
    notes.map((note) => `<p class="note">${escape(note)}</p>`).join('') +
    `<form method="post" action="/oauth/consent"><input type="hidden" name="flow" value="${escape(view.flow)}"><input type="hidden" name="csrf" value="${escape(view.csrf)}">` +
    `<button type="submit" name="decision" value="approve" id="approve">Allow</button><button type="submit" name="decision" value="deny" id="deny">Deny</button></form>`;
  return new Response(document('Allow access? — Switchyard', body), { status: 200, headers: headers(`'self' ${formActionSource(view.redirectUri)}`) });
}

/** A refusal shown to the user, never a redirect (the redirect URI is not trusted, or unknown); `extra` headers such as Retry-After. */
export function refusalPage(status: number, message: string, extra: Record<string, string> = {}): Response {
  return new Response(document('Sign-in refused — Switchyard', `<p id="message">${escape(message)}</p>`), { status, headers: { ...headers("'none'"), ...extra } });
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
