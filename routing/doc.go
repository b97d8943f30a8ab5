// Package routing holds the SMSC connectors an operator sets up and the
// routes that say which connectors each SMS goes through: ordered rules
// matched on the destination's prefix, the company and the sender id,
// each naming connectors with a strategy (failover: the first healthy one;
// round-robin; weighted). The pure rules (Match, Pick) are plain functions
// on plain values; Service checks and stores connectors and routes through
// the Store port, for the admin API.
//
// Package routing uses the standard library and package messaging only.
package routing
