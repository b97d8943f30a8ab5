// Package accounts holds the account use cases of a Herald deployment:
// companies (each one tenant, created inactive), their API keys (shown
// once, stored as a selector and a SHA-256 hash, one current key a
// company) and authentication by key, the SMS sender names a company
// registers and the operator approves, and the chat services (brand
// accounts at the chat provider) a company sends with.
//
// The Store port declares what the use cases need from storage; Lookup is
// its part that sending and the dispatcher read too. Like the other domain
// packages, accounts does no I/O of its own.
package accounts
