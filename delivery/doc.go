// Package delivery turns Pending messages into sends through provider
// ports and applies what providers report back. It declares the ports it
// needs: Store (storage), SMSSender and ChatSender (the transports),
// Directory (how a campaign's messages are sent) and Observer (metrics).
//
// # Dispatcher
//
// A Dispatcher runs one lane per channel whose sender is configured. A
// lane claims due Pending messages of InProgress campaigns in batches
// (Store.ClaimDue: they become Sending, leased for Config.Lease), sends
// each through its port, concurrently, and records the results in batches:
// results and SMS receipts that arrive while a batch is being written are
// grouped into the next one, written in one transaction
// (Store.ApplyBatch). A lane keeps at most its concurrency
// (Config.SMSConcurrency, Config.ChatConcurrency) messages claimed and not
// recorded, and claims again once half a batch of places is free; when
// nothing is due it polls every Config.PollInterval, or at once after Wake.
// A lane whose sender implements ReadyWaiter (the SMPP adapter, while no
// session is bound) claims nothing until the sender is ready: during a
// provider outage messages stay Pending and keep their attempts. A lane
// whose sender implements SendLimiter (the chat client, while its provider
// does not answer) keeps no more messages claimed than the sender allows:
// one at a time probes the provider, spaced by the sender's WaitReady,
// instead of every claimed message failing in turn.
//
// A sender that routes among connectors (ConnectorPicker) tells the lane
// which connector each SMS goes through and how many SMS a capped one can
// use at once: the lane counts its SMS in flight by connector and gives a
// campaign's next claims no more than the room its connector has left
// (Claim.CampaignQuotas), so a connector capped at a low rate never holds
// the lane's places while another connector idles. A claimed SMS whose
// capped connector holds its budget already (the first claim of a campaign
// whose connector the lane does not know yet) is not sent: it goes back to
// Pending at its due time, and the claim counts as one of its attempts. An
// uncapped connector has no bound.
//
// A campaign paused or cancelled while its messages are being sent has
// them withdrawn (Dispatcher.Halt, called by the process that halted it;
// the others read the halted campaigns every Config.HaltInterval): an SMS
// still waiting in the adapter's queue, none of its parts written, gives
// up its place (SMS.Withdraw, ErrWithdrawn) and goes back to Pending at
// its due time, or fails CANCELLED; one already on the wire finishes.
//
// Results:
//   - Sent: SMS with one provider id per part (the first is the message's
//     ProviderMessageID, all of them are recorded for receipts); chat with
//     the provider's message token (ALREADY_SENT is a success too).
//   - A permanent failure (IsPermanent) ends the message Failed with the
//     failure's details and code, for instance "USER_BLOCKED (8)" or
//     "ESME_RINVDSTADR: Invalid Dest Addr (0x0000000B)".
//   - Any other failure (throttling, a full queue, a lost connection, a
//     timeout) puts the message back to Pending, due after an exponential
//     backoff with jitter (Config.RetryBackoff) that grows with its
//     attempts; the transient failure of its Config.MaxAttempts-th attempt
//     fails it ("Gave up after 12 attempts: ...").
//
// A message's route (its campaign's approved SMS sender name, chat
// service, fallback sender name, chat type and extras) comes from the
// Directory, cached per campaign for Config.RouteTTL. A fallback SMS
// (Message.FallbackFor set) goes through the SMS lane with the campaign's
// fallback sender. Every Config.CompleteInterval, InProgress bulk campaigns
// none of whose messages is Pending or Sending are completed
// (Store.CompleteDrained), whatever made their last message final: a send
// result, the validity sweep (also while the campaign was paused), an
// opt-out, a chat callback or another process. Transactional campaigns
// never complete.
//
// # Validity and send windows
//
// Before it sends a claimed message, a lane checks its expiry (Expiry: the
// message's ExpiresAt, else its bulk campaign's start plus ValidFor): one
// past it fails with details messaging.DetailsExpired and never reaches a
// provider (a chat message so failed gets no fallback SMS). What is left
// of the validity goes with the send: SMS.Validity (the SMPP
// validity_period) or ChatSend.TTL (at least MinChatTTL). Every
// Config.ExpireInterval, messages past their validity that nothing claims
// (a paused campaign, a provider down) are failed the same way
// (Store.ExpireMessages). A campaign with a send window
// (messaging.SendWindow) has each message checked against the window in
// its recipient's zone (the window's own, else Config.Zones from the
// number, else UTC): one outside goes back to Pending, due when the window
// opens there; that claim counts as one of its attempts.
//
// # Chat
//
// Delivery speaks Herald's words only (chatport.go): a chat message goes
// out as a ChatSend, naming Herald's chat service (ServiceID) and its id
// at the provider (Sender); the provider's acceptance is a ChatAccepted,
// and its failures *SendError made with ChatFailure, whose ChatReason
// reads the one code table, ChatCodes. Adapters map their providers'
// codes to those reasons.
//
// Chat messages carry a reference number (ChatSend.Ref), the provider's
// idempotency key: the store assigns it durably the first time the message
// is claimed (Store.ChatSeqs) from a counter that processes sharing the
// database share, and it stays the same on every retry, so a provider that
// already accepted the message says so instead of sending it twice. A
// permanent chat failure goes through Config.OnChatFailure, the one place
// where the SMS fallback hooks in (NeedsFallback: the reasons ChatCodes
// marks Fallback); without it the message is recorded Failed. A transient
// failure with SendError.RetryAfter (a provider's rate limit) is retried
// no sooner than that.
//
// What providers report back goes through one Reporter (herald.New makes
// it: Reports): SMS receipts, inbound SMS, chat statuses (ChatStatus,
// applied by ChatEvents.ChatStatuses in one store write per callback) and
// what people send on chat channels (ChatInbound: survey answers, opt-outs,
// the last contact of each person with each service).
//
// # Receipts
//
// HandleReceipt is the SMS adapter's ReceiptHandler. Receipts are stored
// in the transactions that record send results, and each call returns once
// its transaction committed, so the adapter acknowledges a receipt only
// once it is stored. A receipt may arrive before the Sent of its message
// was recorded (the SMSC can answer right after submit_sm_resp): when this
// dispatcher is recording that Sent, the receipt goes into the same
// transaction or a later one; otherwise it is kept and applied when the
// parts are recorded. DELIVRD delivers a part and a message is
// Delivered once all its parts are; UNDELIV, EXPIRED and REJECTD fail it
// with details UNDELIVERED, EXPIRED and REJECTED and the receipt's err as
// SMSErrorCode. A repeated receipt changes nothing, and so does one an
// SMSC sends again after a rebind.
//
// Receipts that never come (lost with an SMSC that crashed, or never
// sent) would leave messages Sent and waited for for ever. After
// Config.ReceiptTimeout (48 hours; set it to the validity period when
// submits carry one) an SMS whose receipts have not all come stays Sent,
// with Details "NO_RECEIPT: no delivery receipt within 48h0m0s", and is
// counted Unconfirmed instead of waiting (Store.ExpireReceipts, every
// Config.ReceiptSweepInterval): the campaign's pending count no longer
// holds it. A receipt that comes later still settles it.
//
// Send results and receipts are written by Config.Writers writers, one
// transaction each at a time: one on SQLite, whose single writer takes
// transactions in turn, two on Postgres (see Features). A send
// result goes to the writer its first part id picks, and so does that
// part's receipt, so that they share a transaction or follow each other,
// and writers side by side touch different messages.
//
// # Crash safety
//
// No message is lost: a message leaves Pending only in the claim
// transaction, and leaves Sending only when its result is recorded. Every
// claim names the process that made it (Config.Instance), and each
// process writes a heartbeat every Config.HeartbeatInterval while it runs
// (Store.Heartbeat). The messages of a process that dies stay Sending
// until one of these takes them back to Pending (Store.RecoverClaims), to
// be sent again:
//   - the same process restarted: Run takes back the claims of its
//     Instance before it claims anything, at once;
//   - any live dispatcher sharing the store, every Config.RecoverInterval
//     (2s), once the dead process's last heartbeat is older than
//     Config.ClaimLease (10s);
//   - any dispatcher, once a claim is older than Config.Lease (5 minutes),
//     whatever the heartbeats: the bound of a claim that is never
//     released.
//
// A claim may also be stored while ClaimDue reports an error: the
// connection to the database dropped during the commit. The live process
// never got those messages, and its heartbeats keep them. So a lane whose
// claim failed takes that claim's messages back before it claims again,
// once the store answers: each claim of a process has a lease of its own
// (to the microsecond), and the owner and the lease name the claim
// (Recovery.Unknown).
//
// A process claims only while its last heartbeat written is at most half
// the claim lease old: a lane finding it older writes one first, and
// claims nothing while that fails. Otherwise a process whose heartbeat at
// the start failed (or was last written long ago) would claim under a name
// the others take for dead, and they would take its claims back while it
// sends them.
//
// A process never takes back its own claims for a late heartbeat, and
// takes no other process's claims for one while its own heartbeats have
// failed within the last ClaimLease: when the store itself was
// unreachable (a database restart), every heartbeat is late and no
// process died; their sends in flight are recorded once the store is back.
//
// Messages taken back keep their due time: they are claimed again before
// the messages of the campaign not tried yet, rather than after them.
//
// A process that stops cleanly removes its heartbeat (it holds no claims
// by then). Two live processes must not share an Instance: each would
// take the other's claims when it starts, and those messages would be
// sent twice (never lost).
//
// Delivery to the SMSC is therefore at least once. A message accepted by
// the SMSC is submitted again in three cases only. First, when its process
// died (or lost the store for longer than the drain allows) between the
// submit and the commit of its Sent: its result was not recorded. Those
// are the messages claimed and not recorded at the time, at most
// Config.SMSConcurrency per process: one crash submits at most that many
// SMS a second time, each of them once more. Second, when the SMSC's answer
// to a submit was lost (no submit_sm_resp within the adapter's timeout, or
// the connection dropped after the submit): the send failed transiently
// and is retried, as it must be, since the SMSC may not have it. Third,
// when one part of a long SMS failed transiently after others were
// accepted: the message is retried whole, its accepted parts included (the
// adapter cannot resume a concatenated message halfway). Receipts of a
// submission whose Sent was never recorded are kept and purged after
// Config.ReceiptRetention; the message is then settled by the receipts of
// its new submission. Chat messages are resent with the same sequence
// number, which the provider deduplicates.
//
// When the context of Run ends, the lanes stop claiming; the sends in
// flight finish and their results are recorded (drain). Sends still running
// after Config.DrainTimeout are cancelled and their messages put back to
// Pending (they may have reached the provider: at least once again).
package delivery
