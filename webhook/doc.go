// Package webhook holds Herald's outgoing events: the endpoints a company
// registers to receive them, the rules of their URLs and secrets, and the
// signature every request carries.
//
// A receiver checks that a request came from Herald with Verify:
//
//	err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance)
//
// The signature header is "t=<unix seconds>,v1=<hex HMAC-SHA256>", the
// HMAC keyed with the endpoint's secret over "<t>.<body>". While a secret
// is being rotated the header carries one v1 for each of the two secrets,
// so a receiver holding either accepts it.
//
// An endpoint may take its events in batches (Endpoint.Batch): one
// request then carries {"events": [...]}, signed the same way over the
// whole body, and a failed batch is sent again whole. ParseEvents reads
// either body.
//
// Package webhook uses the standard library and package messaging only;
// the requests themselves are sent by an adapter.
package webhook
