// Formatting of numbers, times and statuses.

const nf = new Intl.NumberFormat(undefined);

export function num(n) {
  return typeof n === 'number' && isFinite(n) ? nf.format(n) : '–';
}

export function pct(n, digits = 1) {
  if (typeof n !== 'number' || !isFinite(n)) return '–';
  return n.toFixed(digits).replace(/\.0+$/, '') + '%';
}

const dtf = new Intl.DateTimeFormat(undefined, {year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit'});
const tf = new Intl.DateTimeFormat(undefined, {hour: '2-digit', minute: '2-digit', second: '2-digit'});

export function dateTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : dtf.format(d);
}

const tfms = new Intl.DateTimeFormat(undefined, {hour: '2-digit', minute: '2-digit', second: '2-digit', fractionalSecondDigits: 1});

// time formats a time of day; with tenths of a second when fine is set.
export function time(d, fine) {
  return (fine ? tfms : tf).format(d);
}

// ago says how long ago iso was, for recent times.
export function ago(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (isNaN(s)) return '';
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export const STATUS_LABEL = {
  Draft: 'Draft', Queuing: 'Queuing', Ready: 'Ready', InProgress: 'In progress', Paused: 'Paused', Completed: 'Completed', Cancelled: 'Cancelled', Failed: 'Failed',
  Pending: 'Pending', Sending: 'Sending', Sent: 'Sent', Delivered: 'Delivered', Seen: 'Seen',
};

// campaignStatus is the status a campaign is shown with: the API answers a
// cancelled campaign Completed with cancelledAt, shown as Cancelled.
export function campaignStatus(c) {
  return c && c.status === 'Completed' && c.cancelledAt ? 'Cancelled' : c && c.status;
}

export const CHANNEL_LABEL = {Smpp: 'SMS', Chat: 'Chat'};

export const MESSAGE_TYPES = [
  {id: 1, name: 'SimpleText', label: 'Text'},
  {id: 2, name: 'ImageOnly', label: 'Image'},
  {id: 3, name: 'ButtonPlusText', label: 'Text and button'},
  {id: 4, name: 'ImagePlusText', label: 'Image, text and button'},
  {id: 5, name: 'Carousel', label: 'Carousel'},
  {id: 6, name: 'Survey', label: 'Survey'},
  {id: 7, name: 'Video', label: 'Video'},
  {id: 8, name: 'File', label: 'File'},
];

export function typeLabel(t) {
  const m = MESSAGE_TYPES.find((x) => x.id === Number(t) || x.name === t);
  return m ? m.label : String(t);
}

export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${s / 60} min`;
  if (s < 86400) return `${s / 3600} h`;
  return `${s / 86400} d`;
}
