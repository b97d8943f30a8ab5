// Package chaos is Herald's chaos suite. Its tests build the herald binary
// (cmd/herald), run it in a process of its own as an operator
// would, with its peers in other processes (an SMSC on the npm package
// smpp, interop/chaos-smsc.js; a Postgres cluster of the suite's own; a
// chat provider speaking the protocol of docs/chat-provider.md over real HTTP), and
// break one thing at a time while bulk campaigns are sent: herald killed
// with SIGKILL and restarted while a webhook endpoint takes every event
// (and, on Postgres, taken over by a second
// process sharing the database), the SMSC killed, the SMSC stalling with a
// full window, an SMPP link with latency and loss, Postgres restarted, the
// chat provider timing out and answering 5xx.
//
// Every scenario ends with the same checks: every accepted message reached
// a final state or Sent, the SMSC (or the chat provider) received every
// message at least once, the duplicates stay within the bound of the
// delivery package's crash-safety guarantees, every campaign counter equals
// the count of its rows, the API answered no 5xx but the documented 503s,
// and no herald process wrote a panic.
//
// The suite runs when HERALD_TEST_CHAOS=1 and skips otherwise, so that go
// test ./... stays fast. It needs node with interop/node_modules (npm ci in
// interop/), the PostgreSQL server binaries (initdb, pg_ctl; run as user
// postgres when the tests run as root) for its Postgres scenarios, and root
// for the network scenario's namespace (it falls back to a proxy in the
// test process without it). RELIABILITY.md at the repository root
// describes the scenarios and their figures.
package chaos
