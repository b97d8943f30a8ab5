// Package chat is Herald's adapter of the chat provider's wire contract,
// described below: a Client that implements delivery.ChatSender over HTTP,
// and CallbackHandler, the endpoint that receives the provider's signed
// status and reply callbacks and reports them to a delivery.Reporter.
// Provider describes the protocol as the chat provider "herald" among
// those a chat service may name (see transport/chatprovider).
//
// # Sending
//
// SendChat POSTs one JSON body to {BaseURL}/send_message with the
// X-Auth-Token header. The body carries service_id (ChatSend.Sender),
// dest, seq (ChatSend.Ref), ttl (whole
// seconds of ChatSend.TTL, 86400 when zero, clamped to 30..1209600),
// type and tracking_data (the message id), a message object, and the object
// of the type. Only the fields of the message's type are sent, and empty
// optional ones are left out:
//
//	1 SimpleText      message.text
//	2 ImageOnly       message.image (+ message.text when set)
//	3 ButtonPlusText  message.text, message.button {caption, action}
//	4 ImagePlusText   message.text, message.image, message.button
//	5 Carousel        message.text when set; carousel.items [{title, image_url,
//	                  primary_button {label, action_url}, secondary_button when set}]
//	6 Survey          message.text (the question); survey.options [{text, value}]
//	7 Video           message.text and message.button when set; video {url,
//	                  thumbnail_url when set, file_size, duration}
//	8 File            message.text when set; file {url, file_name, file_type}
//
// file_type is lower-case; when the configuration has none it is the
// extension of the file name. The message object is always present, empty
// when the type has nothing to put in it. The body is encoded by hand into
// pooled buffers shared by the attempts of one send.
//
// # Answers
//
// Status 0 is a success and returns the message_token (accepted as a JSON
// string or number); 12 ALREADY_SENT is a success with AlreadySent, the
// token as the provider gave it (possibly empty). Every other status is a
// *delivery.SendError (StatusError) with Reason its neutral reason
// (Reasons), Code and Details that reason's in delivery.ChatCodes, and
// Provider the protocol's name and code (LookupStatus): 1 and 7
// transient, the others permanent, unknown codes permanent. HTTP 401 is a permanent failure
// "BAD_TOKEN" (the configured token is wrong: every message would fail
// alike); other 4xx but 408 and 429 are permanent too ("HTTP 404").
//
// HTTP 408, 429 and 5xx, status 1 and 7, timeouts (Config.Timeout per
// attempt), connection errors and unreadable or mismatching responses
// (another seq) are transient: SendChat retries them Config.Retries times
// with a jittered exponential backoff (honouring a Retry-After in seconds,
// up to Backoff.Max), always with the same body and so the same seq, which
// makes a retry after a lost response safe: the provider answers 12. When
// the retries run out the last transient *delivery.SendError is returned
// for the dispatcher to retry later, with RetryAfter when the provider
// sent one. When ctx ends, SendChat returns an
// error wrapping ctx.Err().
//
// # Callbacks
//
// CallbackHandler verifies X-Content-Signature (hex HMAC-SHA256 of the raw
// body keyed with the callback secret, compared in constant time) before
// parsing, refuses a body taken before (its signature is kept for
// ReplayHold in CallbackConfig.Replays: the store's guard in a
// deployment) with 401, turns status events into delivery.ChatStatus and reply and
// subscription events into delivery.ChatInbound, and answers 200 only once
// the Reporter stored them. In a deployment the status events and their
// keys are written in one store transaction. Sign computes the
// signature, for providers and tests.
//
// # Codes and reasons
//
// Reasons maps each failure code to Herald's neutral reason; the SMS
// fallback follows the reason (delivery.ChatCodes): 8 blocked, 9 not on
// the channel and 10 no suitable device fall back, whether they come back
// at send time or as failed status events after acceptance.
// IsFallbackCode tells them apart from other failures.
//
//	code  name                  reason
//	1     INTERNAL_FAILURE      transient
//	2     BAD_SERVICE_ID        service_refused
//	3     BAD_DATA              rejected
//	5     BAD_MESSAGE_TYPE      unsupported
//	6     BAD_PARAMETERS        rejected
//	7     TIMEOUT               transient
//	8     USER_BLOCKED          blocked
//	9     NOT_VIBER_USER        not_on_channel
//	10    NO_SUITABLE_DEVICE    no_suitable_device
//	13    NOT_PERMITTED         not_permitted
//	20    INVALID_TTL           rejected
//	27    INVALID_PHONE_NUMBER  invalid_number
//	other (named by number)     rejected
//
// A failed message's details are the name and code of its reason in
// delivery.ChatCodes ("USER_BLOCKED (8)"), the same whether the send's
// answer or a failed status event reported it: 6, 20 and unknown codes
// read "BAD_DATA (3)", 7 "INTERNAL_FAILURE (1)". The protocol's own name
// and code stay in the logs.
package chat
