// Package inbound holds the SMS people send to the senders (mobile-
// originated messages): their parts, as the SMPP adapter hands them over,
// put together and stored once complete, attributed to the company whose
// approved sender they were sent to, and listed to that company.
//
// Package inbound uses the standard library and the domain packages
// messaging and delivery (for the part the adapter hands over) only.
package inbound
