// Package smpp is Herald's SMPP 3.4 adapter: a Client that implements
// delivery.SMSSender over one transceiver session with an SMSC and feeds the
// SMSC's delivery receipts to a delivery.ReceiptHandler.
//
// It encodes and decodes PDUs with github.com/linxGnu/gosmpp's pdu package and
// runs its own session around them, because the session layer of that
// library does not fit a sender that must never lose a receipt nor exceed its
// window: it acknowledges deliver_sm before the application has stored it,
// its windowed request tracking registers a request after writing it (a fast
// SMSC's response can arrive first and be dropped), its concatenation splitter
// gives every part the same sequence number and counts octets rather than
// septets, and NewSession gives up when the first bind fails.
//
// # Session
//
// New starts binding as a transceiver at once and keeps a session up until
// Close: a failed bind or a lost connection is retried with exponential
// backoff (with jitter) between Config.BindBackoff.Min and Max. The backoff
// resets once a session has stayed up for a minute. An enquire_link goes out
// every Config.EnquireLink; one left unanswered until the next is due ends
// the connection. So an SMSC that hangs with its TCP connection open is
// noticed within two intervals: the session ends, its outstanding submits
// fail with ErrConnectionLost, and the Client binds again. Send waits (up
// to its ctx) for a bound session; WaitReady, the delivery.ReadyWaiter the
// dispatcher consults, waits likewise, so no message is claimed while the
// Client is unbound.
//
// # Submitting
//
// A text is sent as GSM-7 (data_coding 0, one unpacked septet per octet) when
// every character is in the GSM 03.38 tables, else as UCS-2 (data_coding 8,
// UTF-16BE). Texts longer than one SMS are split by template.Segment, never
// inside an escape sequence or a surrogate pair, and sent as concatenated
// parts carrying an 8-bit-reference concatenation header (esm_class UDHI).
// Every part is a submit_sm of its own with its own sequence number and asks
// for a delivery receipt (registered_delivery 1). The source address is the
// sender name (TON 5 alphanumeric, NPI 0), the destination the number
// (TON 1 international, NPI 1 ISDN).
//
// At most Config.Window submit_sm are outstanding at any time. A submit_sm
// stays outstanding until its submit_sm_resp arrives, Config.SubmitTimeout
// passes, or the connection ends, even when the Send that issued it gave up
// earlier; so the SMSC never sees more than Window unanswered requests.
// Config.MaxPerSecond paces submit_sm with a token bucket.
//
// Send returns one provider id per part, normalised by NormalizeMessageID.
// Its errors are *delivery.SendError: ESME_RTHROTTLED, ESME_RMSGQFUL,
// ESME_RSYSERR, ESME_RX_T_APPN and ESME_RINVBNDSTS, timeouts and lost
// connections are transient; every other command_status is permanent, with
// Code the status as 0x%08X and Details its name and meaning. When one part
// of a long text fails the whole Send fails (a permanent failure wins over a
// transient one); a retry submits every part again.
//
// # Framing
//
// PDUs are read, encoded and written with package smppwire, which the SMSC
// simulator shares: a PDU is read whole before it is decoded; its
// command_length must lie between 16 and 64 KiB, else the connection is
// closed before anything is allocated for the body it declares, so a
// corrupt or hostile length costs at most 64 KiB. A body gosmpp's decoders
// cannot read (some of them panic on malformed optional parameters) is an
// error of that PDU, never a crash of the session. The framing has its
// fuzz target in smppwire; here fuzz targets check the reading of
// responses and receipts from any byte stream, the round trip of every
// submit_sm Herald builds, and the receipt parser (go test -fuzz
// FuzzReadReceipt and the like; their corpora are under testdata/fuzz).
//
// # Receipts
//
// A deliver_sm whose esm_class says SMSC delivery receipt (or intermediate
// notification) is turned into a delivery.Receipt: the id and state come from
// the receipted_message_id and message_state TLVs when present, else from
// the "id:... stat:..." text (see ParseReceiptText), err from the text
// ("000" when absent), At from the text's done date, else the time it
// arrived. The deliver_sm_resp is sent only after the handler returned nil;
// a handler error is answered ESME_RX_T_APPN so that the SMSC sends the
// receipt again, and a receipt that cannot be parsed ESME_RX_P_APPN. Other
// deliver_sm (mobile-originated messages) are acknowledged and logged.
// Receipts are handled concurrently, at most Config.ReceiptConcurrency at
// once; past that the session stops reading until one finishes.
package smpp
