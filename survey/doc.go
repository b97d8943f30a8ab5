// Package survey records answers to Survey chat messages and summarises
// them. It declares the Store port it needs.
package survey
