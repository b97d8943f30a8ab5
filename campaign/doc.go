// Package campaign holds the rules and use cases of sending: the campaign
// state machine (a pure transition table), pending-capacity admission, and
// the ports (Store) the use cases need from storage.
//
// # Text
//
// Every text a use case stores goes through template.CheckChars: valid
// UTF-8, no control character U+0000-U+001F but tab, line feed and
// carriage return. That covers campaign names and descriptions, direct
// message texts and SMS fallback texts, external user ids, placeholder
// names and values (request-level and per recipient, whether the template
// uses them or not), company names and chat service fields; templates are
// checked by template.Check, SMS sender ids have their own narrower
// alphabet. A refused text is an Invalid error on the field at fault
// ("recipients[3].placeholders.name", "placeholders" for a bad name) and
// nothing is stored. On a bulk send a recipient with such a text fails
// the whole request, as malformed JSON does: it is a fault of the caller's
// program, not of the data (unlike an invalid phone number, which is
// skipped and reported), and sending to the others would hide it.
package campaign
