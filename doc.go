// Package herald is a messaging platform library: it sends SMS over SMPP
// and rich chat-channel messages to phone numbers, from templates with
// {{placeholders}} or raw text, tracks every message from Pending to
// Delivered, Seen or Failed, falls back from chat to SMS, and summarises
// survey answers. Many companies share one deployment, each behind its own
// API key.
//
// The module is shaped library first, with adapters at the edge:
//
//	messaging   the vocabulary: IDs, channels, statuses, resources, the error type
//	egress      the addresses Herald may connect to for a tenant, and the dialer that checks them
//	template    template validation, placeholders, GSM-7/UCS-2 segmentation (pure)
//	accounts    companies, API keys and authentication, senders, chat services
//	campaign    templates, campaign state machine, admission, sending use cases
//	delivery    the dispatcher, provider ports, chat events, fallback, crash recovery
//	survey      recording survey answers, their list and summary
//	store       Store adapters: memstore (in-memory), sqlstore (SQLite, Postgres), storetest
//	transport   provider adapters: SMPP, the chat providers and their router, media probing, simulators
//	routing     SMPP connectors and the routes SMS take through them
//	server      the HTTP API v1 and the admin API, built from the façade
//	console     Herald Console, the web pages served under /console/
//	client      a Go client of a remote Herald's API (client/admin: of its admin API)
//	cmd/herald  the binary: configuration, adapters, New, serve
//	examples    programs that embed the library
//
// Imports point down that list only: the domain packages (messaging,
// template, accounts, campaign, delivery, survey) never import a database driver, a
// router or an SMPP library; the adapters implement the ports the domain
// packages declare, and only cmd/herald and examples choose them.
//
// # Embedding
//
// New assembles Herald from a Store and the transports: the use cases
// (Accounts, Campaigns, Surveys), the dispatcher that sends due messages, the chat
// callbacks with their SMS fallback, survey answers, and the recovery of
// work a stopped process left behind, with every internal wire made:
// messages that become due wake the dispatcher, the SMS and chat
// transports are built with the one Reporter of what providers report
// back (receipts, inbound SMS, chat statuses and what people send on chat
// channels: Herald.Reporter), a permanent chat failure whose reason falls
// back (blocked, not on the channel, no suitable device) is sent again as
// SMS. Run runs it until its
// context ends, purging old finished campaigns' messages when
// Config.Retention is set. See ExampleNew.
package herald
