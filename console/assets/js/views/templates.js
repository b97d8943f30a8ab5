// The company's templates: SMS and chat, with their type, and a way to
// create, edit and delete them.

import {h, replace} from '../dom.js';
import {get, del, enc} from '../api.js';
import {dateTime, typeLabel, CHANNEL_LABEL} from '../format.js';
import {pageHeader, emptyState, pager, table, row, confirmDialog, toast} from '../ui.js';

const COLUMNS = [{label: 'Name'}, {label: 'Channel'}, {label: 'Type'}, {label: 'Content', class: 'col-text'}, {label: 'Updated'}, {label: 'Actions', class: 'col-actions'}];

export async function render(ctx) {
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const list = await get('/api/v1/templates', {query: {page, pageSize: 20}, signal: ctx.signal});
  const header = pageHeader('Templates',
    h('a', {class: 'btn btn-primary', href: '#/templates/new/sms', id: 'new-sms-template'}, 'New SMS template'),
    h('a', {class: 'btn btn-secondary', href: '#/templates/new/chat', id: 'new-chat-template'}, 'New chat template'));
  if (!list.templates.length) {
    replace(ctx.main, header, emptyState('No templates yet',
      'A template is the text of a campaign, with {{placeholders}} filled in for each recipient. SMS templates send text; chat templates send text, images, buttons, carousels, surveys, videos or files.',
      h('a', {class: 'btn btn-primary', href: '#/templates/new/sms'}, 'New SMS template'),
      h('a', {class: 'btn btn-secondary', href: '#/templates/new/chat'}, 'New chat template')));
    return;
  }
  const rows = list.templates.map((t) => {
    const delBtn = h('button', {type: 'button', class: 'btn btn-ghost btn-small btn-danger-text'}, 'Delete');
    delBtn.setAttribute('aria-label', `Delete ${t.name}`);
    delBtn.addEventListener('click', async () => {
      const ok = await confirmDialog({title: `Delete “${t.name}”?`, text: 'Campaigns already sent keep their messages. This cannot be undone.', confirm: 'Delete template', danger: true});
      if (!ok) {
        delBtn.focus();
        return;
      }
      try {
        await del(`/api/v1/templates/${enc(t.id)}`);
        toast(`Template “${t.name}” deleted.`);
        ctx.navigate('/templates' + (page > 1 ? '?page=' + page : ''));
      } catch (err) {
        toast('Delete failed: ' + err.message, 'error');
      }
    });
    return row(COLUMNS, [
      h('a', {href: '#/templates/' + enc(t.id), class: 'strong'}, t.name),
      CHANNEL_LABEL[t.channelType] || t.channelType,
      typeLabel(t.messageType),
      h('span', {class: 'message-text clamp'}, t.templateContent || '—'),
      dateTime(t.updatedAt),
      h('div', {class: 'row-actions'}, h('a', {class: 'btn btn-ghost btn-small', href: '#/templates/' + enc(t.id), 'aria-label': `Edit ${t.name}`}, 'Edit'), delBtn),
    ], {dataset: {templateId: t.id}});
  });
  replace(ctx.main, header, table(COLUMNS, rows, {id: 'templates-table', caption: 'Templates'}), pager(list, (p) => '#/templates?page=' + p));
}
