// Package enginetest holds the model-based test of the delivery engine:
// random sequences of operations (bulk, direct and transactional sends,
// start, schedule, pause, resume, cancel, the clock moving past validity
// and retry times, receipts in any order, a throttling or failing
// connector, a saturated one, opt-outs, a process killed and restarted, a
// second process on the same store) run against memstore, SQLite and
// Postgres through herald.New, with the engine's invariants checked after
// every step. The package has tests only; see model_test.go.
package enginetest
