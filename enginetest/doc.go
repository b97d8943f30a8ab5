// Package enginetest holds the model-based test of the delivery engine:
// random sequences of operations (bulk, direct and transactional sends,
// start, schedule, pause, resume, cancel, the clock moving past validity
// and retry times, receipts in any order, a throttling or failing
// connector, a saturated one, opt-outs, a process killed and restarted, a
// second process on the same store, direct chat sends with an SMS
// fallback to numbers the provider delivers, shows read, refuses as
// blocked or reports as not on the channel, and the provider's reports in
// any order) run against memstore, SQLite and Postgres through
// herald.New, with the engine's invariants checked after every step. At
// the end every chat message is final as its number says, with a fallback
// SMS exactly for codes 8, 9 and 10, and the counters match the messages.
// Each store's run prints its seed. The package has tests only; see
// model_test.go and chat_test.go.
package enginetest
