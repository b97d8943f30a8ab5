// Package vonage is Herald's adapter of the Vonage Messages API (v1) for
// chat services on Viber (the provider's channel viber_service) and
// WhatsApp (whatsapp). Provider describes it to Herald; New builds the
// adapter of one service, which sends its messages and serves its
// webhooks. docs/providers/vonage.md says how to set a service up and
// which reference each field follows.
//
// # Sending
//
// SendChat posts one JSON body to {baseUrl}/v1/messages, authenticated by
// a bearer JWT signed RS256 with the application's private key (claims
// application_id, iat, exp five minutes later, a random jti). The body
// names message_type, channel, to, from (the service's Sender) and
// client_ref (Herald's message id, which the status webhooks carry back);
// webhook_url and webhook_version "v1" when the service has a callback
// URL. The shapes by message type:
//
//	type               viber_service                     whatsapp
//	1 SimpleText       text                              text
//	2 ImageOnly        image {url, caption}              image {url, caption}
//	3 ButtonPlusText   text + viber_service.action       custom interactive cta_url
//	4 ImagePlusText    image + viber_service.action      custom cta_url, image header
//	5 Carousel         refused                           refused
//	6 Survey           refused                           custom interactive button (up to 3
//	                                                     short options) or list
//	7 Video            video {url, thumb_url, caption}   video {url, caption}; no button
//	                   + viber_service duration,
//	                   file_size (MB), action
//	8 File             file {url, name, caption}         file {url, caption, name}
//
// A Viber message's TTL goes as viber_service.ttl (whole seconds, held to
// 30..259200); WhatsApp messages carry none. A WhatsApp message whose
// config names a providerTemplate goes as a template message (name,
// parameters in order, whatsapp.policy "deterministic" and locale the
// template's language), whatever its type. Without one it goes only when
// Settings.Contacts says the person wrote within CustomerWindow; else
// SendChat fails ReasonNotPermitted without a request. Survey options are
// sent with ids OptionID(message id, index), which a reply gives back.
//
// The Messages API has no idempotency key: a retry after a lost answer
// may send the message twice. client_ref lets the webhooks of either
// copy name the message.
//
// # Answers
//
// 202 with message_uuid is an acceptance. A refusal's problem body names
// a code in its type (".../api-errors/messages#1020"), mapped by
// ErrorCodes; code 1320 (already sent) is an acceptance with AlreadySent.
// HTTP 429, and code 1000 (throttled), are transient with RetryAfter from
// Retry-After and wrap delivery.ErrRateLimited; 408, 5xx, timeouts and network errors are
// transient; 401, 402, 403 and 404 without a code refuse the service;
// other 4xx reject the message.
//
// # Webhooks
//
// ServeHTTP verifies the bearer JWT of each webhook (HS256 with the
// signature secret, payload_hash the SHA-256 of the body, iat within
// DefaultSignatureWindow, jti not taken before through Settings.Replays or
// MemoryReplays): a forged or replayed one is answered 401, an unsigned
// one 503 (Vonage signs it when it posts again). It then maps statuses
// (delivered, read, rejected and undeliverable; submitted reports
// nothing) to one Reporter.ChatStatuses call, and inbound text and
// replies to Reporter.ChatInbound, and answers 200 once they are stored.
package vonage
