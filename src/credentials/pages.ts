// The connect flow's few pages: one short sentence each (and the secret form), no scripts, no
// external assets; every value is escaped.
export interface PageStep {
  status: number;
  html: string;
}

export function page(status: number, text: string, form?: { action: string; csrf: string }): PageStep {
  const body = form
    ? `<form method="post" action="${escape(form.action)}"><input type="hidden" name="csrf" value="${escape(form.csrf)}"><label>Secret <input type="password" name="secret" id="secret" autocomplete="off" required></label> <button type="submit" id="submit">Save</button></form>`
    : '';
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><meta name="referrer" content="same-origin"><title>Switchyard sign-in</title></head><body><h1>Switchyard</h1><p id="message">${escape(text)}</p>${body}</body></html>`;
  return { status, html };
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
