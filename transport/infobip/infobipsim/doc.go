// Package infobipsim is a simulator of Infobip's Viber Business Messages
// API, for the demo mode and for tests of the infobip adapter: it serves
// POST /viber/2/messages as Infobip's public reference describes it, and
// posts delivery reports, seen reports and inbound replies back the way
// Infobip does, in batches, with HTTP Basic credentials.
//
// # Requests
//
// A request without "Authorization: App <apiKey>" of Config.Credentials
// is answered 401. Past Config.RatePerSecond requests in one second the
// answer is 429 with Retry-After: 1. The body is decoded strictly: an
// unknown field, a content of another type's fields, a missing required
// field (sender, destinations[].to, the content of its type: text,
// mediaUrl, mediaDuration, thumbnailUrl, fileName, options, cards, a
// button's title and action), a number that is not 7 to 15 digits, an
// unsupported file or image type, a validity period that is not positive
// or a callbackData past 4000 characters is answered 400 with Infobip's
// error body (errorCode E400 and one violation per field).
//
// Each destination gets the messageId it names (a fresh one otherwise)
// and status PENDING_ENROUTE. A messageId taken before is answered with
// status REJECTED_DUPLICATE_MESSAGE_ID (23), and nothing is sent again.
//
// # Outcomes by number
//
//	ends in 0008: UNDELIVERABLE_NOT_DELIVERED, error USER_BLOCKED
//	ends in 0009: UNDELIVERABLE_NOT_DELIVERED, error NOT_VIBER_USER
//	ends in 0010: UNDELIVERABLE_NOT_DELIVERED, error NO_SUITABLE_DEVICE
//	otherwise:    DELIVERED_TO_HANDSET, then a seen report; a LIST
//	              (survey) is then answered with the option at (last
//	              digit of the number) mod (number of options), its text
//	              and the message's trackingData
//
// # Reports
//
// Delivery reports go to the message's webhooks.delivery.url, seen
// reports to webhooks.seen.url, each else to Config.CallbackURL (the
// subscription), inbound messages always to Config.CallbackURL. Reports
// due together for one address are posted together, up to 100 in one
// {"results": [...]} body, with the Basic credentials callbackUsername and
// callbackPassword. The reports of one message follow each other: the
// next is due only once the previous one was answered 2xx. A post
// answered otherwise is made again with a growing pause, 6 times at most.
package infobipsim
