// Package optout holds the numbers that asked a company to stop sending
// to them (opt-outs), and the rules that read such a request in an SMS
// (keywords such as STOP and START). Sending checks the list before a
// message reaches a provider; an opt-out of the chat channel only comes
// from the chat provider (the person blocked the company's chat service).
//
// Package optout uses the standard library and package messaging only.
package optout
