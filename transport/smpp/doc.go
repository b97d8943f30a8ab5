// Package smpp is Herald's SMPP 3.4 adapter: a Client that implements
// delivery.SMSSender over one or more sessions with an SMSC (transceivers by
// default), in plain TCP or TLS, and feeds the SMSC's delivery receipts to a
// delivery.ReceiptHandler.
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
// New starts binding at once and keeps Config.Binds sessions (one by
// default) bound to Config.Addr until Close, all with the same credentials:
// one Client is one connector of an aggregator account. Each session binds
// on its own: a failed bind or a lost connection is retried with
// exponential backoff (with jitter) between Config.BindBackoff.Min and Max,
// counted per session, while the other sessions go on sending. The backoff
// resets once a session has stayed up for a minute. An enquire_link goes out
// every Config.EnquireLink on each session; one left unanswered until the
// next is due ends that connection. So an SMSC that hangs with its TCP
// connection open is noticed within two intervals: the session ends, its
// outstanding submits fail with ErrConnectionLost, and it binds again. Send
// waits (up to its ctx) for a bound session; WaitReady, the
// delivery.ReadyWaiter the dispatcher consults, waits likewise until at
// least one session is bound, so no message is claimed while the Client is
// entirely unbound. State tells, for an admin API, how many sessions are
// bound, the window in use, the counts and the last errors.
//
// Sessions bind as transceivers (bind_transceiver), or as transmitters
// (Config.BindType BindTransmitter), to which the SMSC sends no deliver_sm:
// such a Client never receives receipts nor inbound messages, which must
// then reach Herald through another bind of the account.
//
// With Config.TLS set, every session is SMPP over TLS: a TLS client
// connection to Addr, verified against Config.TLS.RootCAs (the system's
// roots when nil) for the host of Addr unless ServerName says otherwise. A
// certificate that does not verify fails the bind like a refused one, with
// the handshake's error (Client.State's LastBindError), and is retried.
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
// (TON 1 international, NPI 1 ISDN), unless Config.SourceTON, SourceNPI,
// DestTON and DestNPI say otherwise.
//
// At most Config.Window submit_sm are outstanding on a session at any time,
// Binds × Window on the Client. Each part goes to the bound session with
// the fewest outstanding (ties taken in turn); when every bound session's
// window is full, Sends wait for a slot in the order they came. A submit_sm
// stays outstanding until its submit_sm_resp arrives, Config.SubmitTimeout
// passes, or its connection ends, even when the Send that issued it gave
// up earlier; so the SMSC never sees more than Window unanswered requests
// on a session. Config.MaxPerSecond paces the submit_sm of all sessions
// together with one token bucket, first come first served;
// Client.SetMaxPerSecond changes it while the Client runs, for the Sends
// waiting their turn too.
//
// Send returns one provider id per part, normalised by NormalizeMessageID.
// Its errors are *delivery.SendError: ESME_RTHROTTLED and ESME_RMSGQFUL
// once the part cannot be tried again (see Throttling), ESME_RSYSERR,
// ESME_RX_T_APPN and ESME_RINVBNDSTS, timeouts and lost connections are
// transient; every other command_status is permanent, with Code the status
// as 0x%08X and Details its name and meaning. When one part of a long text
// fails the whole Send fails (a permanent failure wins over a transient
// one); a retry submits every part again.
//
// # Throttling
//
// An SMSC answers ESME_RTHROTTLED (0x58) or ESME_RMSGQFUL (0x14) to a
// submit_sm it refuses for now because the client sends too fast. Such a
// part is not failed: the Client slows down and submits it again.
//
//   - The part waits a pause (50ms, doubling with each throttled try of
//     the part up to 1s, with jitter), then takes its turn in the pacing
//     ahead of the parts not submitted yet and is submitted again: the same
//     part of the same text (a throttled submit_sm was refused, not
//     accepted, so the text is not duplicated), on another session than
//     the one that throttled it when one has room. The other parts of the
//     text are not submitted again.
//   - The Send fails, transiently, with the throttled status (Code 0x58 or
//     0x14, wrapping why) only when its context would end before the next
//     try (the pause, then the turn), when it ends meanwhile, when the
//     Client closes, or when another part of the text failed already.
//   - Each session paces its own submit_sm (an SMSC limits each bind, so
//     the others keep theirs). Without Config.MaxPerSecond a session
//     starts at 100/s and, while the SMSC accepts what it sends, doubles
//     its rate every 16 round trips (submit_sm to submit_sm_resp,
//     smoothed; 0.1s to 2s), with at most two round trips' worth in
//     flight; past 5,000/s it is unlimited. So the submits in flight when
//     the SMSC first throttles are few. With a cap it starts unlimited
//     under the cap.
//   - A throttled answer to a submit_sm written since the session's last
//     decision is an event: the session's rate becomes 95% of the
//     submit_sm the SMSC accepted on it over the last second (its limit,
//     as measured), no more than the rate it had, 1/s at least. The
//     answers to the submits already in flight then (an SMSC counting in
//     windows throttles them all at once) are the same event and change
//     nothing. Measured over less than a second (the session had just
//     begun), that count is the SMSC's quota when it counts in windows,
//     but may be short of its rate when it refills a bucket: unless the
//     SMSC keeps refusing, the rate doubles again, every 16 round trips,
//     up to what the rate since the submits began suggests. A new rate
//     under half the old one doubles every second back to that half.
//   - After an event, and when a submit_sm written since is throttled
//     within a second of it (the SMSC's window is spent), the session is
//     held: it sends nothing, then one part (a probe) after 10ms, doubling
//     to 50ms with each probe throttled, and goes on at its rate, without
//     a burst, once a probe is accepted. The rate is not lowered again
//     within that second.
//   - Parts are paced evenly at the rate (a bucket of a twenty-fifth of a
//     second's worth), so that an SMSC counting in fixed one-second
//     windows, a sliding second or a token bucket sees no burst above
//     the rate. Parts go to the sessions with room.
//   - One second after its last throttled answer, a session's rate climbs
//     while the SMSC accepts at least 70% of it: by 1% a second (1/s at
//     least), to find a limit that was raised, and doubling every second
//     again after 15 seconds of such climbing without a throttled answer.
//     An idle session keeps its rate. A session whose rate reaches
//     Config.MaxPerSecond is unlimited under the cap.
//   - While every bound session is paced, the Client paces all its parts
//     at the sum of their rates (Config.MaxPerSecond at most); turns
//     handed out before that sum went down, to parts still waiting for a
//     session, are taken again at the new rate.
//
// Stats and State count the throttled answers (Throttled) and the parts
// submitted again (Retries); State shows the configured cap
// (MaxPerSecond) and the rate the Client paces at now
// (EffectivePerSecond, 0 for unlimited). A throttled submit_sm counts in
// SubmitErrors and LastSubmitError only when its Send gives up on it.
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
// deliver_sm (mobile-originated messages) go to Config.InboundHandler, or
// are acknowledged and logged. Whichever session a deliver_sm comes on is
// the one that answers it. Receipts are handled concurrently, at most
// Config.ReceiptConcurrency at once over all sessions; past that a session
// stops reading until one finishes.
package smpp
