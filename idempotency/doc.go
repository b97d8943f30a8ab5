// Package idempotency lets a client retry a request that creates
// something without doing it twice: the first request with an
// Idempotency-Key runs, and the same key with the same request within
// Window gets the first answer again (status and body), also while the
// first is still running (it waits for it, up to Wait). The same key with
// another request is refused. Keys are per company and kept by a Store, so
// they hold across restarts and across processes sharing the database.
//
// A request that failed without deciding anything (the server's fault, a
// 5xx, or a 429 asking to come back later) forgets its key, so that the
// retry runs. A request whose process died while it ran holds its key for
// Abandoned; after that a retry takes the key over and runs.
//
// Package idempotency uses the standard library and package messaging
// only.
package idempotency
