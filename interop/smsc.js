'use strict';
// A small SMSC for Herald's SMPP interoperability test, on the npm package
// smpp in server mode: it binds any system_id, answers submit_sm with
// zero-padded decimal message ids, reassembles concatenated texts, and sends
// a DELIVRD receipt for every part that asked for one, quoting the id
// without its padding (clients must normalise ids). It prints one JSON
// event per line on stdout. A line on stdin
//   mo {"from": ..., "to": ..., "parts": ["...", ...], "ref": N}
// sends an SMS from a handset to the bound sessions: one deliver_sm a part
// (esm_class 0, the text encoded as the package chooses), with a
// concatenation header when there are several parts.
//
// Usage: node smsc.js <port>
const smpp = require('smpp');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: node smsc.js <port>\n');
  process.exit(2);
}

let nextId = 1;
const partial = new Map();

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

function smppDate(d) {
  const p = (n) => String(n).padStart(2, '0');
  return p(d.getUTCFullYear() % 100) + p(d.getUTCMonth() + 1) + p(d.getUTCDate()) +
    p(d.getUTCHours()) + p(d.getUTCMinutes());
}

function concatInfo(udh) {
  for (const ie of udh || []) {
    if (ie[0] === 0x00 && ie.length === 5) {
      return { ref: ie[2], total: ie[3], index: ie[4] };
    }
  }
  return null;
}

const sessions = new Set();

require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.startsWith('mo ')) {
    return;
  }
  const mo = JSON.parse(line.slice(3));
  const total = mo.parts.length;
  mo.parts.forEach((text, i) => {
    const short_message = total > 1
      ? { udh: Buffer.from([5, 0, 3, mo.ref & 0xff, total, i + 1]), message: text }
      : text;
    for (const session of sessions) {
      session.deliver_sm({
        source_addr: mo.from, source_addr_ton: 1, source_addr_npi: 1,
        destination_addr: mo.to, esm_class: 0, short_message: short_message,
      });
    }
  });
  emit({ event: 'mo_sent', parts: total });
});

const server = smpp.createServer(function (session) {
  sessions.add(session);
  session.on('close', () => sessions.delete(session));
  session.on('error', (e) => emit({ event: 'error', message: String(e) }));
  for (const cmd of ['bind_transceiver', 'bind_transmitter', 'bind_receiver']) {
    session.on(cmd, (pdu) => {
      emit({ event: 'bind', command: cmd, system_id: pdu.system_id });
      session.send(pdu.response({ system_id: 'node-smsc' }));
    });
  }
  session.on('enquire_link', (pdu) => session.send(pdu.response()));
  session.on('unbind', (pdu) => {
    emit({ event: 'unbind' });
    session.send(pdu.response());
    session.close();
  });
  session.on('deliver_sm_resp', (pdu) => {
    emit({ event: 'receipt_ack', seq: pdu.sequence_number, status: pdu.command_status });
  });
  session.on('submit_sm', (pdu) => {
    const id = nextId++;
    session.send(pdu.response({ message_id: String(id).padStart(10, '0') }));
    const sm = pdu.short_message || {};
    const text = typeof sm.message === 'string' ? sm.message : String(sm.message || '');
    const concat = concatInfo(sm.udh);
    emit({
      event: 'submit', seq: pdu.sequence_number, id: id,
      source_addr: pdu.source_addr, source_addr_ton: pdu.source_addr_ton, source_addr_npi: pdu.source_addr_npi,
      destination_addr: pdu.destination_addr, dest_addr_ton: pdu.dest_addr_ton, dest_addr_npi: pdu.dest_addr_npi,
      esm_class: pdu.esm_class, data_coding: pdu.data_coding, registered_delivery: pdu.registered_delivery,
      concat: concat, text: text,
    });

    const key = pdu.source_addr + '>' + pdu.destination_addr + '#' + (concat ? concat.ref : 'single');
    if (!concat) {
      emit({ event: 'message', to: pdu.destination_addr, text: text, parts: 1 });
    } else {
      const parts = partial.get(key) || new Array(concat.total).fill(null);
      parts[concat.index - 1] = text;
      partial.set(key, parts);
      if (parts.every((p) => p !== null)) {
        partial.delete(key);
        emit({ event: 'message', to: pdu.destination_addr, text: parts.join(''), parts: parts.length });
      }
    }

    if ((pdu.registered_delivery & 0x03) === 1) {
      const now = smppDate(new Date());
      setTimeout(() => {
        session.deliver_sm({
          source_addr: pdu.destination_addr, source_addr_ton: 1, source_addr_npi: 1,
          destination_addr: pdu.source_addr,
          esm_class: 0x04,
          short_message: 'id:' + id + ' sub:001 dlvrd:001 submit date:' + now + ' done date:' + now +
            ' stat:DELIVRD err:000 text:' + text.slice(0, 20).replace(/[^\x20-\x7E]/g, '?'),
          receipted_message_id: String(id),
          message_state: 2,
        });
      }, 5);
    }
  });
});

server.listen(port, '127.0.0.1', () => emit({ event: 'listening', port: port }));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
