// Package metawhatsappsim simulates the WhatsApp Business Cloud API of
// Meta, for the demo and for tests of the meta-whatsapp adapter
// (transport/metawhatsapp). It serves POST
// /{version}/{phone number id}/messages as the Graph API does and sends
// the signed webhooks Meta sends, so that the adapter cannot tell it from
// the provider. Start serves it on a listener of its own; URL is the base
// URL a service's baseUrl takes, with the Graph API version.
//
// # Requests
//
// A request must carry "Authorization: Bearer {accessToken}" of
// Config.Credentials: otherwise HTTP 401, error 190. Beyond
// Config.RatePerSecond requests a second (a bucket refilled continuously)
// the answer is HTTP 429 with Retry-After: 1 and error 130429. The body is
// decoded strictly (a field the reference does not list, or malformed
// JSON: error 100) and checked against the reference's rules: a missing
// field is error 131008, a value out of its rules (a phone number not of 7
// to 15 digits, a title or label too long, 4 reply buttons, a carousel of
// one card, an uploaded media id) error 131009; a type the simulator does
// not serve is error 131051. Errors are HTTP 400 with Meta's error object
// {"error": {message, type, code, error_data {details}, fbtrace_id}}.
//
// An accepted message is answered 200 with a fresh wamid. The simulator,
// like the Cloud API, keeps no idempotency key: a message sent twice is
// two messages.
//
// # Outcomes by number
//
//	ends in 0008:  failed, error 131050 (the person stopped the business's
//	               marketing messages: Herald's blocked)
//	ends in 0009:  failed, error 131026 (no WhatsApp account)
//	ends in 0010:  failed, error 131026 whose details speak of the app's
//	               version (Herald's no suitable device)
//	ends in 0047:  failed, error 131047 (outside the customer window)
//	otherwise:     sent, delivered, then read; a message offering options
//	               (reply buttons, list rows, template quick replies) is
//	               then answered, picking option (last digit of the
//	               number) mod (number of options), with the id it was
//	               given
//
// # Webhooks
//
// Webhooks go to the callback URL (Config.CallbackURL or SetCallbackURL),
// signed with X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of
// the body keyed with the app secret. One goroutine posts them in due
// order: the statuses of one phone number due together go in one request
// (up to 100; it waits 10 ms for more unless 100 are due), each person's
// message in a request of its own, each status
// carrying the biz_opaque_callback_data its message was sent with. A
// webhook answered otherwise than 2xx is posted again, the same bytes,
// after 50 ms, then twice as long each time, at most 8 times; the ones
// after it wait. VerifyCallback makes Meta's GET verification request.
package metawhatsappsim
