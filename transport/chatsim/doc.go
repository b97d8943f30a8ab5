// Package chatsim is a chat provider simulator serving Herald's chat
// provider contract (see package transport/chat) over HTTP, for the demo mode
// and for tests of chat clients. A Server is an http.Handler for POST
// /send_message; Start serves it on a listener of its own (loopback in
// tests and demos).
//
// # Requests
//
// A request whose X-Auth-Token differs from Config.Token (when set) is
// answered HTTP 401. The body is decoded strictly: a Content-Type other
// than application/json, malformed JSON or an unknown field is 3 BAD_DATA.
// Then, in order:
//
//	missing service_id, dest or seq                  3 BAD_DATA
//	service_id not in Config.ServiceIDs (when set)    2 BAD_SERVICE_ID
//	dest not 7 to 15 digits                          27 INVALID_PHONE_NUMBER
//	ttl outside 30..1209600 (absent is fine)         20 INVALID_TTL
//	type outside 1..8                                 5 BAD_MESSAGE_TYPE
//	content missing for the type, or an object of    6 BAD_PARAMETERS
//	another type (image outside 2 and 4, button
//	outside 3, 4 and 7, video, file, carousel or
//	survey outside 7, 8, 5, 6), a file_type not
//	lower-case pdf, doc, docx, txt, rtf, xls, xlsx,
//	csv, ppt, pptx, zip or rar
//
// A valid request whose seq was accepted before is answered 12
// ALREADY_SENT with the message_token given the first time, and nothing is
// sent again (the last Config.SeqMemory accepted seqs are remembered). A
// rejected seq is not remembered: its retry is judged again.
//
// # Outcomes by number
//
// The outcome of a valid new message is chosen by its destination number
// (Faults.StatusFor overrides it):
//
//	ends in 0008:  8 USER_BLOCKED
//	ends in 0009:  9 NOT_VIBER_USER
//	ends in 0010: 10 NO_SUITABLE_DEVICE
//	ends in Config.LateFailureSuffix (off by default; tests use "0011"):
//	               0 accepted, then a failed callback with error_code 9:
//	               the provider learns after acceptance that the number
//	               cannot take chat messages, which exercises the SMS
//	               fallback after acceptance
//	otherwise:     0 accepted with a fresh message_token, then a delivered
//	               callback and a seen callback; a Survey (type 6) is then
//	               answered with a reply choosing option (last digit of the
//	               number) mod (number of options), with its text and value
//
// # Callbacks
//
// Callbacks go to Config.CallbackURL as the contract's status and reply
// events, with X-Content-Signature the hex HMAC-SHA256 of the body keyed
// with Config.CallbackSecret and timestamp the time (Config.Now, in Unix
// milliseconds) the event was first posted. The events of one message are
// posted in order, each after the previous one was answered 200 and its
// delay passed (DeliveredDelay from acceptance, SeenDelay, ReplyDelay). A
// callback answered otherwise is posted again, byte for byte, with an
// exponential backoff (CallbackBackoff), at most CallbackAttempts times;
// then it and the events after it are given up. A scheduler keeps pending
// callbacks in a heap by due time and hands the due ones, in batches, to a
// fixed pool of CallbackWorkers goroutines, so the number of goroutines
// stays bounded whatever the load. Each worker keeps a connection of its
// own to CallbackURL and writes a callback's request in one piece, so a
// callback costs the simulator little more than a write and a read. With
// Config.CallbackBatch above 1 a request carries the due events of up to
// that many messages, a JSON array of events each with its own id (the
// message_token and the step's number); a due event waits up to
// CallbackBatchWait for others, and a refused request is posted again
// whole, byte for byte.
//
// # Faults and records
//
// Faults (in Config or at run time with SetFaults) make the simulator
// answer HTTP 500 to the first requests, 429 to the next ones or to every
// Nth, delay its answers, lose the answers of the first accepted messages
// (the connection is closed after the message was accepted), answer chosen
// statuses for chosen numbers, post every callback twice, or post seen
// before delivered. Stats counts what happened; with Config.Record the
// simulator also keeps every decoded request, its raw body and the status
// answered (Requests, Received).
package chatsim
