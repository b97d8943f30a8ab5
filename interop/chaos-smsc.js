'use strict';
// An SMSC for Herald's chaos suite (chaos/), on the npm package smpp in
// server mode, that can be told to misbehave while it runs.
//
// It binds any system_id, answers every submit_sm with a decimal message id
// (unique across restarts) and sends a DELIVRD receipt for it shortly after. Receipts are kept in a
// store-and-forward queue, as an SMSC keeps them: each goes to any bound
// session, and one whose session closed before its deliver_sm_resp is sent
// again on the next bound session.
//
// Every accepted submit is written to stdout as one JSON line BEFORE its
// submit_sm_resp is sent, with write(2) itself (fs.writeSync, retried while
// the pipe is full: process.stdout would queue the line in memory when the
// pipe is full, and SIGKILL would lose it), so a reader of the output knows
// every submit the ESME may believe accepted, even when this process is
// killed with SIGKILL:
//
//   {"event":"submit","to":"447...","id":17,"session":2}
//
// Commands, one a line on stdin:
//
//   stall    stop answering submit_sm (they are held, unanswered, and not
//            logged); enquire_link is still answered, so the connection
//            stays up and the ESME's window fills
//   resume   answer the held submits (late) and every later one at once
//   drop     destroy every open connection (no unbind)
//   stats    only report the counts
//
//   seconds  report the counts and, per wall-clock second, the submits
//            accepted and throttled: "seconds": [[start ms, accepted,
//            throttled], ...]
//
// Every command is answered with a "done" line carrying the counts: submits
// (accepted), throttled, receipts sent and acknowledged, and first and last,
// the times (ms since the epoch) of the first and the latest accepted
// submit. The load program of bench/product runs it with "quiet", which
// leaves the submit lines out (it reads the counts only).
//
// With bind-rate=N each bound session may submit N submit_sm a second, as
// SMSCs limit each bind: beyond, a submit_sm is answered ESME_RTHROTTLED
// (0x58), not accepted and not logged as a submit. limit=fixed (the
// default) counts in fixed one-second windows of the wall clock, so a
// burst at the start of a window is throttled once N are in, even when
// the average is below N; limit=sliding counts the submits accepted in the
// last second.
//
// Usage: node chaos-smsc.js <port> [host] [receipt delay in ms] [quiet] [bind-rate=N] [limit=fixed|sliding]
const fs = require('fs');
const smpp = require('smpp');

const usage = 'usage: node chaos-smsc.js <port> [host] [receipt delay in ms] [quiet] [bind-rate=N] [limit=fixed|sliding]\n';
const positional = [];
let quiet = false;
let bindRate = 0;
let limitKind = 'fixed';
for (const arg of process.argv.slice(2)) {
  if (arg === 'quiet') {
    quiet = true;
  } else if (arg.startsWith('bind-rate=')) {
    bindRate = Number(arg.slice('bind-rate='.length));
  } else if (arg.startsWith('limit=')) {
    limitKind = arg.slice('limit='.length);
  } else {
    positional.push(arg);
  }
}
const port = Number(positional[0]);
const host = positional[1] || '127.0.0.1';
const receiptDelay = Number(positional[2] || 5);
if (!Number.isInteger(port) || port < 0 || !Number.isFinite(receiptDelay) ||
  !Number.isInteger(bindRate) || bindRate < 0 || !['fixed', 'sliding'].includes(limitKind)) {
  process.stderr.write(usage);
  process.exit(2);
}

// emit writes one event line to stdout, synchronously and whole.
function emit(event) {
  const line = Buffer.from(JSON.stringify(event) + '\n');
  let off = 0;
  while (off < line.length) {
    try {
      off += fs.writeSync(1, line, off, line.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') {
        throw e;
      }
    }
  }
}

function smppDate(d) {
  const p = (n) => String(n).padStart(2, '0');
  return p(d.getUTCFullYear() % 100) + p(d.getUTCMonth() + 1) + p(d.getUTCDate()) +
    p(d.getUTCHours()) + p(d.getUTCMinutes());
}

// Message ids start from the clock, so that a restarted SMSC never gives an
// id an earlier run gave (receipts are matched by id).
let nextId = Date.now() * 1000;
let nextSession = 1;
let stalled = false;
const held = []; // [session, pdu] of the submits held while stalled
const sessions = new Set(); // open sessions
const bound = new Set(); // bound sessions, in bind order
const receipts = []; // receipts waiting for a bound session
let counts = { submits: 0, throttled: 0, receipts: 0, acks: 0, held: 0, first: 0, last: 0 };
const seconds = []; // [start ms, accepted, throttled], in time order

// countSecond counts one submit answered now, accepted or throttled.
function countSecond(now, accepted) {
  const start = now - (now % 1000);
  let s = seconds[seconds.length - 1];
  if (!s || s[0] !== start) {
    s = [start, 0, 0];
    seconds.push(s);
    if (seconds.length > 86400) {
      seconds.shift();
    }
  }
  s[accepted ? 1 : 2]++;
}

// allowed reports whether session may submit one more now under bind-rate,
// and counts it when it may.
function allowed(session, now) {
  if (bindRate === 0) {
    return true;
  }
  if (limitKind === 'fixed') {
    const start = now - (now % 1000);
    if (session.windowStart !== start) {
      session.windowStart = start;
      session.windowCount = 0;
    }
    if (session.windowCount >= bindRate) {
      return false;
    }
    session.windowCount++;
    return true;
  }
  const recent = session.recent; // times of the accepted submits, oldest first
  while (recent.length > 0 && recent[0] <= now - 1000) {
    recent.shift();
  }
  if (recent.length >= bindRate) {
    return false;
  }
  recent.push(now);
  return true;
}

// accept logs a submit and answers it, then schedules its receipt.
function accept(session, pdu) {
  if (!sessions.has(session)) {
    return; // its connection is gone: the ESME will retry it
  }
  const now = Date.now();
  if (!allowed(session, now)) {
    counts.throttled++;
    countSecond(now, false);
    session.send(pdu.response({ command_status: smpp.ESME_RTHROTTLED }));
    return;
  }
  countSecond(now, true);
  const id = nextId++;
  counts.submits++;
  counts.last = now;
  if (counts.first === 0) {
    counts.first = counts.last;
  }
  if (!quiet) {
    emit({ event: 'submit', to: pdu.destination_addr, id: id, session: session.herald });
  }
  session.send(pdu.response({ message_id: String(id) }));
  if ((pdu.registered_delivery & 0x03) === 1) {
    const now = smppDate(new Date());
    setTimeout(() => {
      receipts.push({
        source_addr: pdu.destination_addr, source_addr_ton: 1, source_addr_npi: 1,
        destination_addr: pdu.source_addr,
        esm_class: 0x04,
        short_message: 'id:' + id + ' sub:001 dlvrd:001 submit date:' + now + ' done date:' + now +
          ' stat:DELIVRD err:000 text:',
        receipted_message_id: String(id),
        message_state: 2,
      });
      flush();
    }, receiptDelay);
  }
}

// flush sends the queued receipts to the bound sessions, in turn.
function flush() {
  while (receipts.length > 0 && bound.size > 0) {
    const targets = Array.from(bound);
    const r = receipts.shift();
    const session = targets[counts.receipts % targets.length];
    counts.receipts++;
    const sent = session.deliver_sm(r, (resp) => {
      counts.acks++;
      session.unacked.delete(r);
      if (resp.command_status !== 0) {
        receipts.push(r); // refused: try again later
        setTimeout(flush, 100);
      }
    });
    if (sent) {
      session.unacked.add(r);
    } else {
      receipts.unshift(r);
      bound.delete(session);
    }
  }
}

const server = smpp.createServer(function (session) {
  session.herald = nextSession++;
  session.unacked = new Set();
  session.recent = [];
  sessions.add(session);
  session.on('error', (e) => emit({ event: 'error', session: session.herald, message: String(e) }));
  session.on('close', () => {
    sessions.delete(session);
    bound.delete(session);
    for (const r of session.unacked) {
      receipts.push(r); // never acknowledged: forward it again
    }
    session.unacked.clear();
    emit({ event: 'close', session: session.herald });
  });
  for (const cmd of ['bind_transceiver', 'bind_transmitter', 'bind_receiver']) {
    session.on(cmd, (pdu) => {
      emit({ event: 'bind', command: cmd, system_id: pdu.system_id, session: session.herald });
      session.send(pdu.response({ system_id: 'chaos-smsc' }));
      if (cmd !== 'bind_transmitter') {
        bound.add(session);
        flush();
      }
    });
  }
  session.on('enquire_link', (pdu) => session.send(pdu.response()));
  session.on('unbind', (pdu) => {
    emit({ event: 'unbind', session: session.herald });
    bound.delete(session);
    session.send(pdu.response());
    session.close();
  });
  session.on('submit_sm', (pdu) => {
    if (stalled) {
      counts.held++;
      held.push([session, pdu]);
      return;
    }
    accept(session, pdu);
  });
});

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  input += chunk;
  let nl;
  while ((nl = input.indexOf('\n')) >= 0) {
    const cmd = input.slice(0, nl).trim();
    input = input.slice(nl + 1);
    if (cmd === 'stall') {
      stalled = true;
    } else if (cmd === 'resume') {
      stalled = false;
      for (const [session, pdu] of held.splice(0)) {
        accept(session, pdu);
      }
    } else if (cmd === 'drop') {
      for (const session of Array.from(sessions)) {
        session.destroy();
      }
    } else if (cmd === 'seconds') {
      emit({ event: 'done', command: cmd, held: held.length, counts: counts, seconds: seconds });
      continue;
    } else if (cmd !== '' && cmd !== 'stats') {
      emit({ event: 'error', message: 'unknown command ' + JSON.stringify(cmd) });
      continue;
    }
    emit({ event: 'done', command: cmd, held: held.length, counts: counts });
  }
});

server.listen(port, host, () => emit({ event: 'listening', host: host, port: server.address().port }));
process.on('SIGTERM', () => {
  emit({ event: 'stopped', counts: counts });
  process.exit(0);
});
