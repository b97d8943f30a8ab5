// Package campaign holds the rules and use cases of sending: the campaign
// state machine (a pure transition table), pending-capacity admission, and
// the ports (Store) the use cases need from storage.
package campaign
