// Package infobip is Herald's adapter of Infobip's Viber Business Messages
// API: Provider describes it to the chat router and builds, for one chat
// service, an Adapter that sends the service's messages and serves its
// delivery, seen and inbound reports.
//
// # Reference
//
// The request and report shapes follow Infobip's public API reference
// for Viber Business Messages, "Send Viber messages" (POST
// /viber/2/messages) and its webhooks, as published at
// https://www.infobip.com/docs/api/channels/viber/viber-business-messages
// and in Infobip's generated Java client
// (github.com/infobip/infobip-api-java-client, models Viber*, read at its
// commit of 2026-03-31). Status groups and ids follow
// https://www.infobip.com/docs/essentials/api-essentials/response-status-and-error-codes.
// docs/providers/infobip.md lists each field and where it comes from.
//
// # Sending
//
// SendChat POSTs one message to {baseUrl}/viber/2/messages with
// "Authorization: App <apiKey>". The body names the service's sender,
// one destination whose messageId is Herald's message id, the content of
// the message type, and options.validityPeriod in seconds when the message
// has a time to live (at most 48 hours, Infobip's limit). webhooks.callbackData
// carries Herald's message id too, so every report names the message
// even when Infobip's own id differs. When the service has a callback URL,
// webhooks.delivery.url and webhooks.seen.url point to it.
//
// A retry sends the same messageId. Infobip answers a message id it has
// taken before with status REJECTED_DUPLICATE_MESSAGE_ID (23), which
// SendChat reports as an accepted message (AlreadySent).
//
// # Answers
//
// HTTP 200 carries one status per destination: the PENDING, DELIVERED
// and ACCEPTED groups accept the message; the others fail it with the
// reason of its status (see FailureReason). HTTP 400 is a rejected
// message, 401, 403 and 404 a refused service (wrong key or base URL),
// 408, 429 and 5xx, timeouts and network errors are transient; a 429
// carries its Retry-After in SendError.RetryAfter.
//
// # Reports
//
// Infobip posts delivery reports, seen reports and inbound messages in
// batches ({"results": [...]}) to the service's callback address. Infobip
// signs none of them: it authenticates its webhook requests with HTTP
// Basic credentials configured on the subscription (security type
// BASIC). ServeHTTP compares them with credentials.callbackUsername and
// credentials.callbackPassword in constant time and answers 401 without
// reporting anything when they differ. Each report is remembered in the
// service's ReplayGuard (its message id and status); a request whose every
// report was taken before is a replay, answered 401. The statuses of one
// request go to one Reporter.ChatStatuses call, its inbound messages to
// Reporter.ChatInbound, and the request is answered 200 only once they
// returned nil (500 otherwise, so that Infobip sends it again). A report
// of a message Herald did not send is acknowledged and dropped.
//
// # Surveys
//
// A survey goes out as a LIST message: the question and the option texts.
// Its trackingData, which Viber gives back with the person's reply, holds
// Herald's message id and a short digest of each option text, so that a
// reply names its message and the option picked (ChatInbound of kind
// InboundReply) without any state in the adapter.
package infobip
