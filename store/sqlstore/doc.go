// Package sqlstore is Herald's SQL adapter of the storage ports
// (campaign.Store, delivery.Store and survey.Store), on SQLite or
// PostgreSQL through bun.
//
// # Databases
//
// Open takes a URL:
//
//   - sqlite://path opens (and creates) the SQLite database file at path
//     (sqlite:///abs/path for an absolute one) through modernc.org/sqlite,
//     pure Go. The database runs in WAL mode with synchronous=NORMAL. Writes
//     go through one connection whose transactions begin IMMEDIATE, so
//     writers queue in the process and wait for other processes within the
//     busy timeout instead of failing half-way; reads use a separate pool
//     of read-only connections and never wait for the writer. In-memory
//     databases are not supported: with separate pools each connection
//     would see a database of its own. Use a file in a temporary directory
//     instead.
//   - postgres://... (or postgresql://...) opens a pool through pgdriver.
//     Query parameters that pgdriver does not interpret are sent as
//     run-time parameters, so search_path=name selects a schema.
//
// Migrations are embedded, one folder per dialect, and run on Open with
// bun's migrate package inside one transaction that holds a lock for its
// whole length (SQLite: an IMMEDIATE transaction; Postgres: a
// transaction-level advisory lock keyed by the schema), so that several
// processes opening the same fresh database at once migrate it exactly
// once.
//
// Config.ReadOnly opens an existing database for an operator's read, such
// as herald check: no file is created, no migration runs (SQLite opens
// the file with mode=ro; Postgres sessions start read-only transactions),
// and a database that is not Herald's or lacks a migration is refused.
//
// Open's errors name the database: the path, or the URL with its password
// masked.
//
// # Schema
//
// Identifiers are UUIDs: 16-byte blobs on SQLite, uuid on Postgres. Times
// are UTC: INTEGER microseconds since the Unix epoch on SQLite, timestamptz
// on Postgres; an optional time that is unset is NULL. Chat configurations
// are JSON (jsonb on Postgres).
//
// Campaigns carry their counters (messages by status, and fallback SMS by
// status) and companies their pending count, so reading them costs one row
// whatever the number of messages. Every change of a message's status
// updates these counters in the same transaction. The indexes are the ones
// the queries need: Pending messages by campaign, channel and due time
// (claiming), Sending ones by lease end (recovery), messages by phone
// number and by external user id; SMS parts by provider id (receipts) and
// the parts of long messages by message; campaigns in progress; visible campaigns by company and creation time; survey results
// by campaign and answer time, unique per message. On SQLite the phone and
// external user id indexes are (company, value, creation time) B-trees; on
// Postgres they are hash indexes on the value alone, because a batch's
// numbers come in any order and a B-tree costs about twice as much CPU to
// insert random keys into, and the claim index is split by channel. There
// are no foreign keys: the store checks in its transactions that a
// message's campaign exists and belongs to its company, and nothing is ever
// deleted but the messages of a campaign whose preparation failed.
//
// # Pending count
//
// A company's pending count is kept equal to what ReconcilePending
// computes: campaign by campaign, the Pending and Sending messages
// (fallback SMS included) plus, for a campaign still Queuing, Planned
// minus the messages inserted (never below zero). Every write moves it by
// exactly the change of that sum. Consequently a campaign created Queuing
// reserves its Planned messages, one created in any other status reserves
// nothing, and InsertMessages leaves the count alone as long as the
// messages are Pending and within their campaign's reservation.
//
// # Concurrency
//
// Capacity admission (CreateCampaign, AdmitMessages) is one conditional
// update of the company's pending count in the transaction that writes the
// rows. ClaimDue picks the campaigns in progress first and then claims
// from each one's Pending messages in due order, so that the messages of a
// campaign not started yet cost nothing; on Postgres it locks with FOR
// UPDATE SKIP LOCKED, on SQLite the single writer serialises claims.
// ApplyUpdates reads the current statuses of its messages in the write
// transaction (FOR UPDATE on Postgres), applies the allowed moves in one
// bulk update and adjusts the counters. A batch that moves a message back
// to Pending also reads, after its messages, the campaigns of its changed
// messages (locked in id order on Postgres), and fails CANCELLED those
// whose campaign is cancelled; CancelCampaign locks its campaign before
// its Pending messages (skipping those held), so one of the two always
// sees the other. Transactions lock messages, then
// campaigns, then companies, in id order; a Postgres transaction that
// still loses a deadlock or a serialisation conflict is run again.
//
// # An unreachable database
//
// Every method reports a database that cannot be reached or is not taking
// work for now as messaging.StoreUnavailable (Code Unavailable, with a
// RetryAfter; the HTTP layer answers 503 with Retry-After): a connection
// refused or lost, Postgres starting up, shutting down or out of
// connections, SQLite locked by another process beyond BusyTimeout, or its
// disk full. A pooled Postgres connection is checked before it is used
// again (one non-blocking read: a restarted server has closed it), so
// that after a restart the pool opens new connections instead of failing
// one request per dead one.
//
// # Claims
//
// A claim writes its owner in messages.claimed_by; processes write their
// heartbeats in the claimers table. RecoverClaims takes back, in one
// statement over the few Sending messages, the claims past their lease,
// those of owners whose heartbeat is stale or missing, and those of the
// owner named.
//
// # Delivery
//
// The parts of an SMS recorded Sent, and receipts that came before their
// part was recorded, are rows of sms_parts keyed by the provider's part id;
// a receipt and the recording of its part meet on that key (see
// ApplyReceipts). Chat sequence numbers come from the chat_seq sequence on
// Postgres and a counters row on SQLite, both started at the time the
// schema was created in microseconds since the epoch.
//
// The delivery path (claims, status updates, receipts) runs thousands of
// statements a second with batches of every size. Its statements take a
// batch as one JSON argument bound by the driver, expanded in the
// statement by json_each (SQLite) or jsonb_array_elements (Postgres), so
// that their texts never change: each is prepared once per connection and
// reused, where a VALUES or IN list of the batch's size would be parsed
// and planned again every time.
//
// # Secrets
//
// SMPP connector passwords, webhook secrets and chat service credentials
// are stored sealed by the Config.Secrets box (package internal/secretbox),
// each bound to its row. Without a box the store refuses to write a secret
// (messaging.SecretKeyMissing) and reads those stored in clear by earlier
// versions; with one, Open seals those (SealSecrets) and fails when a
// stored secret is sealed under a key the box lacks. SealSecrets with all
// set re-seals under the current key what older keys sealed (herald
// secrets rotate). On SQLite the transactions writing or deleting secrets
// run with secure_delete on, so a replaced value is zeroed in the file.
//
// # Bulk inserts
//
// InsertMessages writes on Postgres with a binary COPY FROM STDIN (the
// server parses no text), and on SQLite with one prepared multi-row INSERT
// reused across chunks of the batch, in which the columns that every
// message of the batch shares are written as constants and only the others
// are bound. On both, columns at their default in the whole batch are left
// out of the insert. Identifiers are 16-byte blobs on SQLite rather than their
// 36-character text: every message carries three and every index entry
// one or two, and the smaller rows and keys insert about a fifth faster.
package sqlstore
