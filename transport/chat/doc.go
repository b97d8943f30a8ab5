// Package chat is Herald's adapter of the chat provider's wire contract,
// described below: a Client that implements delivery.ChatSender over HTTP,
// and CallbackHandler, the endpoint that receives the provider's signed
// status and reply callbacks and feeds them to a delivery.ChatEventHandler.
//
// # Sending
//
// SendChat POSTs one JSON body to {BaseURL}/send_message with the
// X-Auth-Token header. The body carries service_id, dest, seq, ttl (whole
// seconds of ChatMessage.TTL, 86400 when zero, clamped to 30..1209600),
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
// *delivery.SendError with Code the number and Details its name (see
// LookupStatus): 1 and 7 transient, the others permanent, unknown codes
// permanent and named by their number. HTTP 401 is a permanent failure
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
// for the dispatcher to retry later. When ctx ends, SendChat returns an
// error wrapping ctx.Err().
//
// # Callbacks
//
// CallbackHandler verifies X-Content-Signature (hex HMAC-SHA256 of the raw
// body keyed with the callback secret, compared in constant time) before
// parsing, turns status and reply events into delivery.ChatEvent and
// answers 200 only once the handler stored the event. Sign computes the
// signature, for providers and tests.
//
// The SMS fallback triggers 8, 9 and 10 come back as permanent failures at
// send time, and as failed status events with that error_code after
// acceptance; IsFallbackCode tells them apart from other failures.
package chat
