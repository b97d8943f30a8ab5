// Package campaign holds the rules and use cases of sending: templates,
// the campaign state machine (a pure transition table), pending-capacity
// admission, and the ports (Store) the use cases need from storage.
// Companies, keys, senders and chat services are package accounts';
// campaign reads senders and chat services through accounts.Lookup.
//
// # Control
//
// A campaign in progress can be paused, resumed and cancelled (Pause,
// Resume, Cancel), a Ready one scheduled (Schedule, started by StartDue
// once its time comes, in whichever process gets there first). A cancel
// fails the messages not handed to a provider yet (DetailsCancelled) in
// the transaction that completes the campaign. Sends may carry a validity
// (BulkSend.ValidityPeriod, Recipient.ValidityPeriod on AddMessage, or the
// template's default) and a bulk send a window of the day
// (BulkSend.Window); package delivery applies both. A refusal for want of
// capacity says when room is expected (CapacityHint) from the company's
// recent drain rate.
//
// # Text
//
// Every text a use case stores goes through template.CheckChars: valid
// UTF-8, no control character U+0000-U+001F but tab, line feed and
// carriage return. That covers campaign names and descriptions, direct
// message texts and SMS fallback texts, external user ids, placeholder
// names and values (request-level and per recipient, whether the template
// uses them or not), and, in package accounts, company names and chat
// service fields; templates are
// checked by template.Check, SMS sender ids have their own narrower
// alphabet. A refused text is an Invalid error on the field at fault
// ("recipients[3].placeholders.name", "placeholders" for a bad name) and
// nothing is stored. On a bulk send a recipient with such a text fails
// the whole request, as malformed JSON does: it is a fault of the caller's
// program, not of the data (unlike an invalid phone number, which is
// skipped and reported), and sending to the others would hide it.
//
// # Rendered length
//
// The limits of a template's fields bind the messages rendered from it
// (see template.Compiled): templateContent 1,600 characters on SMS, 1,000
// on chat (85 for a Survey question), the SMS fallback 1,600, rendered
// URLs 2,048 bytes. Every send checks them at request time, before the
// campaign is created or its capacity reserved, by computing each
// message's length from the template and the values (template.Bound)
// rather than by rendering it, so that a request costs in proportion to
// its own size however its values multiply:
//
//   - A bulk recipient whose message would exceed a limit is skipped and
//     reported like a recipient with an invalid number: counted in
//     SkippedCount and listed, by its number as sent, in
//     SendResult.ContentTooLong. When no recipient is left the request is
//     Invalid, on the placeholder that takes the most room in the first
//     skipped recipient's message: "placeholders.<name>" when it is a
//     request-level value (which then makes every message too long),
//     "recipients[i].placeholders.<name>" when it is the recipient's own.
//   - An add-message whose message would exceed a limit is Invalid on
//     "placeholders.<name>".
//   - Direct sends take no placeholders: their texts are checked as they
//     are (messageContent 1,600 or 1,000, smsFallbackText 1,600).
//
// Rendering checks again (template.Bound.Render), so that no path can
// write a message over its limit; during a bulk preparation such a
// failure, which the request-time check makes unexpected, fails the
// campaign.
//
// # Missing values
//
// A placeholder without a value, neither the recipient's nor the
// request's, stays in the message as written. A bulk send counts the
// recipients lacking each placeholder at request time, after the other
// skips (SendResult.MissingPlaceholders); with SkipMissing it leaves them
// out, listed by their numbers as sent in
// SendResult.MissingPlaceholderPhoneNumbers. An add-message names what
// it lacks (Added.MissingPlaceholders), or is Invalid with SkipMissing.
package campaign
