// Logging in: an API token (rya1.ID.SECRET), checked with GET /api/v1/whoami and then kept in
// this tab's sessionStorage (docs/portal.md says why not a cookie).

import {h, notice} from '../dom.js';

export function loginView(ctx, {message, login}) {
  const input = h('input', {id: 'token', name: 'token', type: 'password', autocomplete: 'off',
    spellcheck: 'false', required: true, placeholder: 'rya1.…', 'aria-describedby': 'token-help'});
  const status = h('div', {class: 'login-status'});
  const button = h('button', {type: 'submit', class: 'primary'}, 'Log in');
  const form = h('form', {class: 'login', 'aria-labelledby': 'login-title', on: {
    submit: async (ev) => {
      ev.preventDefault();
      const token = input.value.trim();
      status.replaceChildren();
      if (!/^rya1\.[0-9a-f]{16}\.[0-9a-f]{64}$/.test(token)) {
        status.append(notice('That is not an API token: it looks like rya1.<16 hex digits>.<64 hex digits>.'));
        input.focus();
        return;
      }
      button.disabled = true;
      try {
        await login(token);
      } catch (e) {
        status.append(notice(e.status === 401 ? 'The controller refused this token: ' + e.message
          : 'Could not log in: ' + e.message));
        input.focus();
      } finally {
        button.disabled = false;
      }
    },
  }},
  h('h1', {id: 'login-title'}, 'Log in to Railyard'),
  h('label', {for: 'token'}, 'API token'),
  input,
  h('p', {id: 'token-help', class: 'help'},
    'An API token from your controller\'s administrator (', h('code', null, 'railyard-controller api-token create'),
    '). It is kept in this browser tab only, until you log out or close the tab.'),
  button, status);
  if (message) form.insertBefore(notice(message, 'info'), form.children[1]);
  ctx.root.append(form);
  input.focus();
}
