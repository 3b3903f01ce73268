// The portal's entry point: the session (an API token kept in sessionStorage, its role and
// scope from GET /api/v1/whoami), the event stream, and a hash router that mounts one view at a
// time. A view is a function (ctx, ...captures) that draws into ctx.root; what it subscribes to
// through ctx.on() is dropped when the user leaves it.

import {h, clear, fill, notice} from './dom.js';
import * as api from './api.js';
import {EventHub} from './events.js';
import {loginView} from './views/login.js';
import {overviewView} from './views/overview.js';
import {nodesView, nodeView} from './views/nodes.js';
import {deploymentsView, deploymentView} from './views/deployments.js';
import {campaignsView, campaignView} from './views/campaigns.js';
import {signoffsView, signoffView} from './views/signoffs.js';
import {revalidationsView, revalidationView} from './views/revalidations.js';
import {maintenancesView, maintenanceView} from './views/maintenances.js';

const TOKEN_KEY = 'railyard.token';

const routes = [
  [/^\/$/, overviewView, 'overview'],
  [/^\/nodes$/, nodesView, 'nodes'],
  [/^\/nodes\/([^/]+)$/, nodeView, 'nodes'],
  [/^\/deployments$/, deploymentsView, 'deployments'],
  [/^\/deployments\/([^/]+)$/, deploymentView, 'deployments'],
  [/^\/campaigns$/, campaignsView, 'campaigns'],
  [/^\/campaigns\/([^/]+)$/, campaignView, 'campaigns'],
  [/^\/signoffs$/, signoffsView, 'signoffs'],
  [/^\/signoffs\/([^/]+)$/, signoffView, 'signoffs'],
  [/^\/revalidations$/, revalidationsView, 'revalidations'],
  [/^\/revalidations\/([^/]+)$/, revalidationView, 'revalidations'],
  [/^\/maintenances$/, maintenancesView, 'maintenances'],
  [/^\/maintenances\/([^/]+)$/, maintenanceView, 'maintenances'],
];

// Who is logged in, and what the role lets them do (the server decides; this only hides what
// would be refused).
const session = {
  who: null,
  may(perm) { return Boolean(this.who && this.who.permissions.includes(perm)); },
  // Cancelling: its own with operate, anyone's with configure (docs/rest.md).
  mayCancel(obj) {
    return this.may('configure') || (this.may('operate') && obj && obj.actor === this.who.actor);
  },
  scopeText() {
    const c = this.who && this.who.clusters;
    return c === null ? 'every cluster' : c.length ? c.join(', ') : 'no cluster';
  },
};

const events = new EventHub({
  getToken: () => api.getToken(),
  onUnauthorized: () => logout('The session ended: the token was refused (expired or revoked).'),
});

let current = null; // {cleanup, subs}
let loginMessage = null;
let wanted = null; // where to go after logging in

api.setUnauthorizedHandler(() => {
  if (session.who) logout('The session ended: the token was refused (expired or revoked).');
});

function $(id) { return document.getElementById(id); }

function showChrome() {
  const who = session.who;
  $('nav').hidden = !who;
  $('who').hidden = !who;
  if (who) {
    fill($('who-text'), h('span', {class: 'role', dataset: {role: who.role}}, who.role),
      ' · ', h('span', {class: 'scope'}, session.scopeText()));
  }
}

async function login(token) {
  api.setToken(token);
  const who = await api.get('/api/v1/whoami');
  session.who = who;
  sessionStorage.setItem(TOKEN_KEY, token);
  showChrome();
  events.start();
}

function logout(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  events.stop();
  api.setToken(null);
  session.who = null;
  loginMessage = message || null;
  showChrome();
  if (location.hash !== '#/login') location.hash = '#/login';
  else route();
}

function unmount() {
  if (!current) return;
  current.dead = true;
  for (const off of current.subs) off();
  if (current.cleanup) {
    try { current.cleanup(); } catch (e) { console.error(e); }
  }
  current = null;
}

function setActiveNav(section) {
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.section === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function route() {
  const hash = location.hash || '#/';
  if (!hash.startsWith('#/')) return; // an in-page anchor (the skip link)
  const [path, qs] = hash.slice(1).split('?');
  const main = $('main');
  unmount();
  const ctx = {
    api, events, session,
    root: h('div', {class: 'view'}),
    query: new URLSearchParams(qs || ''),
    subs: [],
    dead: false,
    // Subscribe for as long as the view is shown.
    on(type, fn) {
      if (this.dead) return;
      this.subs.push(events.on(type, fn));
    },
    title(t) { document.title = t ? `${t} · Railyard` : 'Railyard'; },
    navigate(p) { location.hash = '#' + p; },
  };
  current = ctx;
  fill(main, ctx.root);

  if (path === '/login' || !session.who) {
    if (path !== '/login') wanted = path;
    setActiveNav(null);
    ctx.title('Log in');
    loginView(ctx, {
      message: loginMessage,
      login: async (token) => {
        await login(token);
        loginMessage = null;
        const to = wanted && wanted !== '/login' ? wanted : '/';
        wanted = null;
        location.hash = '#' + to;
      },
    });
    return;
  }
  for (const [re, view, navSection] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    setActiveNav(navSection);
    const args = m.slice(1).map((x) => {
      try { return decodeURIComponent(x); } catch (e) { return x; }
    });
    try {
      const cleanup = await view(ctx, ...args);
      if (typeof cleanup === 'function') {
        if (ctx.dead) cleanup();
        else ctx.cleanup = cleanup;
      }
    } catch (e) {
      if (ctx.dead) return;
      if (!(e instanceof api.ApiError)) console.error(e);
      ctx.root.append(notice(e instanceof api.ApiError && e.status === 404
        ? 'Not found: ' + e.message : 'Could not load this page: ' + e.message));
    }
    return;
  }
  setActiveNav(null);
  ctx.title('Not found');
  ctx.root.append(h('h1', null, 'Not found'), h('p', null, 'No page at ', h('code', null, path), '.'));
}

function liveIndicator(status) {
  const el = $('live');
  const text = {live: 'live', connecting: 'connecting…', reconnecting: 'reconnecting…', idle: ''}[status] || status;
  el.textContent = text;
  el.dataset.status = status;
}

async function boot() {
  $('logout').addEventListener('click', () => logout('Logged out.'));
  events.onStatus(liveIndicator);
  window.addEventListener('hashchange', route);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) {
    try {
      await login(saved);
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      api.setToken(null);
      loginMessage = 'The saved session is no longer valid: ' + e.message;
    }
  }
  route();
}

boot();
