// Package delivery turns Pending messages into sends through provider
// ports and applies what providers report back. It declares the Store port
// it needs.
package delivery
