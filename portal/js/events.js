// The controller's event stream (GET /api/v1/events, Server-Sent Events) read with fetch() and a
// stream parser rather than EventSource: EventSource cannot send the Authorization header, and
// the token must not go into a URL (logs, history) or a cookie (CSRF). So this does what
// EventSource would: parse the text/event-stream format, remember the last id, reconnect after
// a drop with Last-Event-ID (backing off, honouring "retry:"), and treat a silent connection as
// dropped (the server sends a comment at least every 15 s). Views subscribe by event type.

const SILENCE_MS = 45000;

export class EventHub {
  constructor({getToken, onUnauthorized}) {
    this.getToken = getToken;
    this.onUnauthorized = onUnauthorized;
    this.lastId = null;
    this.listeners = new Map(); // type -> Set(fn); '*' gets every event
    this.statusListeners = new Set();
    this.status = 'idle';
    this.abort = null;
    this.stopped = true;
    this.retryMs = 1000;
  }

  // Subscribe fn(data, type, id) to one event type ('*': all; 'reset': the server lost our place,
  // refetch; 'open': a connection (re)opened, refetch what may have changed meanwhile).
  // Returns the unsubscribe function.
  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
    return () => this.listeners.get(type).delete(fn);
  }

  onStatus(fn) {
    this.statusListeners.add(fn);
    fn(this.status);
    return () => this.statusListeners.delete(fn);
  }

  setStatus(s) {
    if (s === this.status) return;
    this.status = s;
    for (const fn of this.statusListeners) fn(s);
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop();
  }

  stop() {
    this.stopped = true;
    if (this.abort) this.abort.abort();
    this.setStatus('idle');
  }

  async loop() {
    let backoff = this.retryMs;
    while (!this.stopped) {
      this.setStatus(this.status === 'live' ? 'reconnecting' : this.status === 'idle' ? 'connecting' : this.status);
      let gotData = false;
      try {
        gotData = await this.connectOnce();
      } catch (e) {
        if (this.stopped) return;
      }
      if (this.stopped) return;
      this.setStatus('reconnecting');
      if (gotData) backoff = this.retryMs;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 15000);
    }
  }

  // One connection: resolves when it ends (true if any event or comment came).
  async connectOnce() {
    const ctl = new AbortController();
    this.abort = ctl;
    const headers = {Accept: 'text/event-stream', Authorization: 'Bearer ' + this.getToken()};
    if (this.lastId !== null) headers['Last-Event-ID'] = this.lastId;
    const r = await fetch('/api/v1/events', {headers, cache: 'no-store', credentials: 'omit', signal: ctl.signal});
    if (r.status === 401) {
      this.stop();
      this.onUnauthorized();
      return false;
    }
    if (!r.ok || !r.body) {
      try { await r.body?.cancel(); } catch (e) { /* gone already */ }
      return false;
    }
    this.setStatus('live');
    // Views refetch on 'open': what changed before this connection is not in the stream.
    this.dispatch('open', '{}', null);
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let watchdog = setTimeout(() => ctl.abort(), SILENCE_MS);
    let buf = '', data = [], type = '', id = null, any = false;
    try {
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        any = true;
        clearTimeout(watchdog);
        watchdog = setTimeout(() => ctl.abort(), SILENCE_MS);
        buf += value;
        // Lines end with CRLF, LF or CR; a CR at the very end may be half of a CRLF.
        let m;
        const re = /\r\n|\n|\r(?!$)/g;
        let start = 0;
        while ((m = re.exec(buf)) !== null) {
          const line = buf.slice(start, m.index);
          start = m.index + m[0].length;
          if (line === '') {
            if (data.length) this.dispatch(type || 'message', data.join('\n'), id);
            data = [];
            type = '';
            continue;
          }
          if (line.startsWith(':')) continue; // a comment: the keepalive
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? '' : line.slice(colon + 1);
          if (val.startsWith(' ')) val = val.slice(1);
          if (field === 'data') data.push(val);
          else if (field === 'event') type = val;
          else if (field === 'id' && !val.includes('\0')) { id = val; this.lastId = val; }
          else if (field === 'retry' && /^\d+$/.test(val)) this.retryMs = Math.max(500, Number(val));
        }
        buf = buf.slice(start);
        if (buf.length > 1 << 20) throw new Error('event line too long');
      }
    } finally {
      clearTimeout(watchdog);
      try { reader.releaseLock(); } catch (e) { /* released */ }
    }
    return any;
  }

  dispatch(type, text, id) {
    let data = null;
    try { data = JSON.parse(text); } catch (e) { data = {text}; }
    for (const key of [type, '*']) {
      const set = this.listeners.get(key);
      if (!set) continue;
      for (const fn of [...set]) {
        // A view's bug must not stop the stream; it is logged (the browser tests fail on it).
        try { fn(data, type, id); } catch (e) { console.error(e); }
      }
    }
  }
}
