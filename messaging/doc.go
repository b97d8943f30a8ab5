// Package messaging is Herald's shared vocabulary: identifiers, channels,
// statuses, the resources every other package talks about (companies,
// senders, chat services, templates, campaigns, messages, survey results),
// the one error type with its codes, phone number normalisation, and the
// Backoff every retry of Herald's waits by.
//
// It imports the standard library only and holds no I/O. Rules that need a
// store or a network live in the packages that declare the ports they use.
package messaging
