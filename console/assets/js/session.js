// The signed-in identity. The API key or admin token lives in
// sessionStorage only: it is gone when the tab closes, it is never put in
// a URL and never written to the console or a log.

const KEY = 'herald.console.session';

export const session = {
  // get returns {role: 'company'|'operator', secret, label} or null.
  get() {
    try {
      const v = JSON.parse(sessionStorage.getItem(KEY) || 'null');
      if (v && (v.role === 'company' || v.role === 'operator') && typeof v.secret === 'string' && v.secret) return v;
    } catch (_) { /* a damaged entry is no session */ }
    return null;
  },
  set(role, secret, label) {
    sessionStorage.setItem(KEY, JSON.stringify({role, secret, label: label || ''}));
  },
  setLabel(label) {
    const v = this.get();
    if (v) this.set(v.role, v.secret, label);
  },
  clear() {
    sessionStorage.removeItem(KEY);
  },
};

// memo keeps small non-secret lists (ids and names the operator created in
// this tab) for servers that cannot list them yet.
export const memo = {
  list(name) {
    try {
      const v = JSON.parse(sessionStorage.getItem('herald.console.memo.' + name) || '[]');
      return Array.isArray(v) ? v : [];
    } catch (_) {
      return [];
    }
  },
  put(name, item, key = 'id') {
    const items = this.list(name).filter((x) => x[key] !== item[key]);
    items.unshift(item);
    sessionStorage.setItem('herald.console.memo.' + name, JSON.stringify(items.slice(0, 100)));
  },
  remove(name, id, key = 'id') {
    const items = this.list(name).filter((x) => x[key] !== id);
    sessionStorage.setItem('herald.console.memo.' + name, JSON.stringify(items));
  },
};
