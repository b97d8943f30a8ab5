// Herald Console: the router (on location.hash), the page frame (header,
// navigation, signed-in identity) and the session's end.

import {h, replace} from './dom.js';
import {session} from './session.js';
import {setUnauthorizedHandler} from './api.js';
import {errorState, loading, notice} from './ui.js';
import * as signin from './views/signin.js';
import * as campaigns from './views/campaigns.js';
import * as campaign from './views/campaign.js';
import * as messages from './views/messages.js';
import * as templates from './views/templates.js';
import * as templateEditor from './views/template-editor.js';
import * as bulk from './views/bulk.js';
import * as companies from './views/companies.js';
import * as company from './views/company.js';
import * as overview from './views/overview.js';
import * as inbound from './views/inbound.js';
import * as optouts from './views/optouts.js';
import * as webhooks from './views/webhooks.js';
import * as connectors from './views/connectors.js';
import * as routesView from './views/routes.js';

const routes = [
  {path: /^\/signin$/, view: signin, title: 'Sign in'},
  {path: /^\/campaigns$/, view: campaigns, role: 'company', nav: 'campaigns', title: 'Campaigns'},
  {path: /^\/campaigns\/new$/, view: bulk, role: 'company', nav: 'new', title: 'New bulk campaign'},
  {path: /^\/campaigns\/([^/]+)$/, view: campaign, role: 'company', nav: 'campaigns', title: 'Campaign'},
  {path: /^\/messages$/, view: messages, role: 'company', nav: 'messages', title: 'Messages'},
  {path: /^\/templates$/, view: templates, role: 'company', nav: 'templates', title: 'Templates'},
  {path: /^\/templates\/new\/(sms|chat)$/, view: templateEditor, role: 'company', nav: 'templates', title: 'New template', params: ['kind']},
  {path: /^\/templates\/([^/]+)$/, view: templateEditor, role: 'company', nav: 'templates', title: 'Template', params: ['id']},
  {path: /^\/overview$/, view: overview, role: 'company', nav: 'overview', title: 'Overview'},
  {path: /^\/inbound$/, view: inbound, role: 'company', nav: 'inbound', title: 'Inbound SMS'},
  {path: /^\/opt-outs$/, view: optouts, role: 'company', nav: 'opt-outs', title: 'Opt-outs'},
  {path: /^\/webhooks$/, view: webhooks, role: 'company', nav: 'webhooks', title: 'Webhooks'},
  {path: /^\/webhooks\/([^/]+)$/, view: webhooks, role: 'company', nav: 'webhooks', title: 'Webhook deliveries'},
  {path: /^\/operator\/overview$/, view: overview, role: 'operator', nav: 'op-overview', title: 'Overview'},
  {path: /^\/operator\/connectors$/, view: connectors, role: 'operator', nav: 'connectors', title: 'SMPP connectors'},
  {path: /^\/operator\/routes$/, view: routesView, role: 'operator', nav: 'routes', title: 'Routes'},
  {path: /^\/operator\/companies$/, view: companies, role: 'operator', nav: 'companies', title: 'Companies'},
  {path: /^\/operator\/companies\/([^/]+)$/, view: company, role: 'operator', nav: 'companies', title: 'Company'},
];

const NAV = {
  company: [
    {id: 'overview', href: '#/overview', label: 'Overview'},
    {id: 'campaigns', href: '#/campaigns', label: 'Campaigns'},
    {id: 'new', href: '#/campaigns/new', label: 'New campaign'},
    {id: 'messages', href: '#/messages', label: 'Messages'},
    {id: 'templates', href: '#/templates', label: 'Templates'},
    {id: 'inbound', href: '#/inbound', label: 'Inbound'},
    {id: 'opt-outs', href: '#/opt-outs', label: 'Opt-outs'},
    {id: 'webhooks', href: '#/webhooks', label: 'Webhooks'},
  ],
  operator: [
    {id: 'op-overview', href: '#/operator/overview', label: 'Overview'},
    {id: 'companies', href: '#/operator/companies', label: 'Companies'},
    {id: 'connectors', href: '#/operator/connectors', label: 'Connectors'},
    {id: 'routes', href: '#/operator/routes', label: 'Routes'},
  ],
};

const HOME = {company: '/campaigns', operator: '/operator/companies'};

let current = null; // the AbortController of the page shown
let pendingFlash = null;

// flash shows a message at the top of the next page.
export function flash(text, kind = 'success') {
  pendingFlash = {text, kind};
}

export function navigate(path, opts = {}) {
  const target = '#' + path;
  if (opts.replace) {
    history.replaceState(null, '', target);
    route();
  } else if (location.hash === target) {
    route();
  } else {
    location.hash = target;
  }
}

function parseHash() {
  let raw = location.hash.replace(/^#/, '') || '/';
  try {
    raw = decodeURI(raw);
  } catch (_) { /* keep it encoded */ }
  const q = raw.indexOf('?');
  const path = q >= 0 ? raw.slice(0, q) : raw;
  const query = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
  return {path: path.replace(/\/+$/, '') || '/', query};
}

function renderTopbar(sess, activeNav) {
  const bar = document.getElementById('topbar');
  const brand = h('a', {class: 'brand', href: '#/'}, h('img', {src: 'favicon.svg', alt: '', width: 24, height: 24}), h('span', null, 'Herald Console'));
  if (!sess) {
    replace(bar, brand);
    return;
  }
  const items = NAV[sess.role] || [];
  const nav = h('nav', {class: 'mainnav', 'aria-label': 'Main'}, h('ul', null, items.map((it) =>
    h('li', null, h('a', {href: it.href, 'aria-current': it.id === activeNav ? 'page' : null}, it.label)))));
  const who = sess.role === 'company'
    ? [h('span', {class: 'role-tag'}, 'Company'), h('span', {class: 'who-name', id: 'identity'}, sess.label || 'Signed in with an API key')]
    : [h('span', {class: 'role-tag role-operator'}, 'Operator'), h('span', {class: 'who-name', id: 'identity'}, sess.label || 'Admin token')];
  const out = h('button', {type: 'button', class: 'btn btn-ghost', id: 'signout', onclick: () => signOut()}, 'Sign out');
  replace(bar, brand, nav, h('div', {class: 'identity'}, h('span', {class: 'who'}, who), out));
}

export function signOut(message) {
  session.clear();
  if (message) flash(message, 'warning');
  navigate('/signin');
}

export function refreshIdentity() {
  const {path} = parseHash();
  const r = routes.find((x) => x.path.test(path));
  renderTopbar(session.get(), r && r.nav);
}

async function route() {
  if (current) current.abort();
  const ctrl = new AbortController();
  current = ctrl;
  const sess = session.get();
  const {path, query} = parseHash();
  if (!sess && path !== '/signin') {
    navigate('/signin', {replace: true});
    return;
  }
  if (path === '/' || (sess && path === '/signin')) {
    navigate(sess ? HOME[sess.role] : '/signin', {replace: true});
    return;
  }
  const r = routes.find((x) => x.path.test(path));
  const main = document.getElementById('main');
  if (!r) {
    renderTopbar(sess, null);
    replace(main, h('div', {class: 'page-header'}, h('h1', {tabindex: '-1', id: 'page-title'}, 'Page not found')),
      notice('info', 'There is no page at this address. ', h('a', {href: '#/'}, 'Go to the start page')));
    document.title = 'Not found · Herald Console';
    return;
  }
  if (r.role && (!sess || sess.role !== r.role)) {
    navigate(sess ? HOME[sess.role] : '/signin', {replace: true});
    return;
  }
  renderTopbar(sess, r.nav);
  const m = path.match(r.path);
  const params = {};
  (r.params || ['id']).forEach((name, i) => { if (m[i + 1] !== undefined) params[name] = decodeURIComponent(m[i + 1]); });
  document.title = `${r.title} · Herald Console`;
  const flashBox = pendingFlash ? notice(pendingFlash.kind, pendingFlash.text) : null;
  if (flashBox) flashBox.id = 'flash';
  pendingFlash = null;
  const body = h('div', {class: 'page'});
  replace(main, flashBox, body);
  replace(body, loading());
  const ctx = {
    main: body, params, query, signal: ctrl.signal, navigate, flash, refreshIdentity,
    setTitle: (t) => { document.title = `${t} · Herald Console`; },
  };
  try {
    await r.view.render(ctx);
  } catch (err) {
    if (ctrl.signal.aborted || (err && err.name === 'AbortError')) return;
    replace(body, h('div', {class: 'page-header'}, h('h1', {tabindex: '-1', id: 'page-title'}, r.title)), errorState(err, () => route()));
  }
  if (ctrl.signal.aborted) return;
  // Move the focus to the new page's heading, as a page load would.
  const heading = main.querySelector('h1');
  if (heading && !main.contains(document.activeElement)) {
    if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
    heading.focus({preventScroll: true});
  }
}

// An address under the console's base (a link to /console/campaigns/ID)
// opens the same page as #/campaigns/ID.
(function pathToHash() {
  const basePath = new URL(document.baseURI).pathname;
  const path = location.pathname;
  if (path !== basePath && path.startsWith(basePath) && !location.hash) {
    history.replaceState(null, '', basePath + '#/' + path.slice(basePath.length) + location.search);
  }
})();

setUnauthorizedHandler(() => {
  if (session.get()) signOut('The server no longer accepts your key or token. Sign in again.');
});

window.addEventListener('hashchange', route);
route();
