// Sign in: a company with its API key, an operator with the admin token.
// The secret is checked against the server before it is kept.

import {h, replace} from '../dom.js';
import {get, ApiError} from '../api.js';
import {session} from '../session.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';
import {busy} from '../ui.js';

// companyLabel names the company of a key: its chat brand, else its
// first SMS sender.
export async function companyLabel(secret) {
  try {
    const services = await get('/api/v1/chat-services', {secret});
    if (Array.isArray(services) && services.length) return services[0].brandName;
    const senders = await get('/api/v1/sms-senders', {secret});
    if (Array.isArray(senders) && senders.length) return 'Sender ' + senders[0].senderId;
  } catch (_) { /* the label is a nicety */ }
  return 'Company';
}

function companyForm(ctx) {
  const key = field({label: 'API key', name: 'apiKey', type: 'password', required: true, id: 'signin-key',
    hint: 'The key an operator created for your company (om_…). It is kept in this tab only, until you sign out or close it.',
    attrs: {autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off'}});
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'signin-key-submit'}, 'Sign in');
  const form = h('form', {class: 'card form', id: 'signin-company', novalidate: true},
    h('h2', null, 'Company'),
    h('p', {class: 'muted'}, 'Campaigns, messages, templates and survey answers.'),
    formError(), key.wrap, h('div', {class: 'form-actions'}, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const secret = key.input.value.trim();
    if (!secret) {
      key.setError('Enter the API key.');
      key.input.focus();
      return;
    }
    await busy(submit, 'Checking…', async () => {
      try {
        await get('/api/v1/campaigns', {secret, query: {pageSize: 1}});
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) key.setError('This key is unknown or was revoked.');
        else if (err instanceof ApiError && err.status === 503) key.setError(`${err.message || 'The server cannot take this key now'}. The company of this key may not be activated yet: ask the operator.`);
        else showErrors(form, err);
        key.input.focus();
        return;
      }
      const label = await companyLabel(secret);
      session.set('company', secret, label);
      key.input.value = '';
      ctx.refreshIdentity();
      ctx.navigate('/campaigns');
    });
  });
  return form;
}

function operatorForm(ctx) {
  const tok = field({label: 'Admin token', name: 'adminToken', type: 'password', required: true, id: 'signin-token',
    hint: 'HERALD_ADMIN_TOKEN of this server (herald serve --demo prints one).',
    attrs: {autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off'}});
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'signin-token-submit'}, 'Sign in as operator');
  const form = h('form', {class: 'card form', id: 'signin-operator', novalidate: true},
    h('h2', null, 'Operator'),
    h('p', {class: 'muted'}, 'Companies, API keys, SMS senders and chat services.'),
    formError(), tok.wrap, h('div', {class: 'form-actions'}, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const secret = tok.input.value.trim();
    if (!secret) {
      tok.setError('Enter the admin token.');
      tok.input.focus();
      return;
    }
    await busy(submit, 'Checking…', async () => {
      try {
        // The endpoint meant for it: 200 with the right token, 401 with
        // a wrong one, 404 "Admin API Disabled" when the admin API is off.
        await get('/admin/v1/whoami', {secret});
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) tok.setError('This is not the admin token of this server.');
        else if (err instanceof ApiError && err.status === 404) tok.setError('The admin API is disabled on this server: start it with HERALD_ADMIN_TOKEN set.');
        else showErrors(form, err);
        tok.input.focus();
        return;
      }
      session.set('operator', secret, 'Operator');
      tok.input.value = '';
      ctx.refreshIdentity();
      ctx.navigate('/operator/companies');
    });
  });
  return form;
}

export async function render(ctx) {
  replace(ctx.main,
    h('div', {class: 'signin'},
      h('div', {class: 'signin-intro'},
        h('h1', {tabindex: '-1', id: 'page-title'}, 'Sign in to Herald Console'),
        h('p', {class: 'muted'}, 'Send and follow SMS and chat campaigns, or set companies up as the operator of this server.')),
      h('div', {class: 'signin-forms'}, companyForm(ctx), operatorForm(ctx))));
}
