// Package metawhatsapp is Herald's adapter of the WhatsApp Business Cloud
// API of Meta, on the Graph API v23.0. Provider describes it to the chat
// router; the Adapter it builds sends one chat service's messages and
// serves the service's webhook.
//
// # Reference
//
// The shapes follow Meta's OpenAPI description of the Business Messaging
// API, business-messaging-api_v23.0.yaml in github.com/facebook/openapi
// (commit ecba623, read November 2026), and Meta's developer pages under
// https://developers.facebook.com/documentation/business-messaging/whatsapp/
// (messages, webhooks, error codes; pages dated 2025 and 2026).
// docs/providers/meta-whatsapp.md names the page of each field.
//
// # Sending
//
// A service's Sender (Settings.Sender) is its business phone number id;
// ChatSend.Sender is not read. SendChat POSTs one
// JSON message to {BaseURL}/{phone number id}/messages with the header
// "Authorization: Bearer {accessToken}". The message carries Herald's
// message id in biz_opaque_callback_data, which Meta repeats in every
// status webhook of the message. The Cloud API takes no idempotency key
// and no time to live for a message: a retry after a lost answer may be
// delivered twice, and ChatSend.TTL is not sent.
//
// Outside a template, WhatsApp delivers a message only to a person who
// wrote to the business in the last 24 hours (the customer service
// window). SendChat asks Settings.Contacts; outside the window it fails
// with delivery.ReasonNotPermitted without a request. When the message's
// configuration names a ProviderTemplate it is sent as that approved
// template instead, at any time.
//
//	1 SimpleText      text {body}
//	2 ImageOnly       image {link, caption when there is a text}
//	3 ButtonPlusText  interactive cta_url {body, action {display_text, url}}
//	4 ImagePlusText   interactive cta_url with an image header
//	5 Carousel        interactive carousel: one card per item, image header,
//	                  the title as card body, one URL button
//	6 Survey          interactive button (up to 3 options) or list (4 or more):
//	                  each option's id names the message and the option
//	7 Video           video {link, caption}; interactive cta_url with a
//	                  video header when the message has a button
//	8 File            document {link, filename, caption}
//
// Provider().Carries refuses what WhatsApp cannot show: button labels over
// 20 characters, survey options over 20 (buttons) or 24 (list) characters
// or twice the same, a carousel item's second button, videos over 16 MB,
// files other than PDF, DOC, DOCX, XLS, XLSX, PPT, PPTX and TXT.
//
// # Answers
//
// A 200 answer gives the message's wamid (ChatAccepted.ProviderID). An
// error answer carries Meta's error object; its code is mapped to a
// delivery.ChatReason by one table (Codes). HTTP 429 and the throughput
// codes are transient with delivery.ErrRateLimited and the Retry-After
// the answer gave; timeouts, connection errors and 5xx are transient.
//
// # Webhooks
//
// ServeHTTP answers Meta's GET verification with hub.challenge when
// hub.mode is subscribe and hub.verify_token is the service's verifyToken
// (403 otherwise). A POST must carry X-Hub-Signature-256, the hex
// HMAC-SHA256 of the raw body keyed with the app secret, compared in
// constant time: otherwise 401 and nothing is reported. A body taken
// before is refused 401 through Settings.Replays (by default a guard in
// memory of the adapter, holding a day of keys). All the statuses of one
// request go to one Reporter.ChatStatuses call; text messages, replies to
// survey options and template quick replies go to Reporter.ChatInbound.
// The answer is 200 only once the Reporter returned nil, else 500, and the
// key is forgotten (chatprovider.ReplayForgetter) so that Meta's resend is
// taken; with a guard that cannot forget, the adapter takes that resend
// once itself. When the Reporter is a delivery.OnceReporter whose store is
// the guard (Herald's wiring), a body of statuses only is taken in one
// store write, its key with its statuses: a failed write keeps no key.
package metawhatsapp
