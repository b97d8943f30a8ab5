package optout

import (
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Scope is what a number opted out of.
type Scope string

// The scopes.
const (
	// All: every message of the company, SMS and chat.
	All Scope = "All"
	// Chat: chat messages only (SMS, a chat message's fallback included,
	// still go).
	Chat Scope = "Chat"
)

// Valid reports whether s is All or Chat.
func (s Scope) Valid() bool { return s == All || s == Chat }

// Covers reports whether an opt-out of scope s stops a message of channel
// ch.
func (s Scope) Covers(ch messaging.Channel) bool {
	return s == All || (s == Chat && ch == messaging.ChannelChat)
}

// Source says where an opt-out came from.
type Source string

// The sources.
const (
	FromAPI     Source = "api"     // POST /api/v1/opt-outs
	FromKeyword Source = "keyword" // an SMS with an opt-out keyword
	FromChat    Source = "chat"    // the chat provider's unsubscribed event
)

// OptOut is a number that asked a company to stop sending to it.
type OptOut struct {
	CompanyID messaging.ID
	Phone     string // digits only
	Scope     Scope
	Source    Source
	CreatedAt time.Time
}

// Keywords are the words that opt a number out, or back in, when an SMS
// holds one alone (case and surrounding spaces ignored).
type Keywords struct {
	Out, In []string
}

// DefaultKeywords returns the keywords of a company that set none.
func DefaultKeywords() Keywords {
	return Keywords{
		Out: []string{"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"},
		In:  []string{"START", "UNSTOP", "YES"},
	}
}

// Action is what an SMS asks for.
type Action int

// The actions.
const (
	None         Action = iota // not a keyword
	OptOutAction               // opt the number out of every channel
	OptInAction                // opt it back in
)

// Classify reads an SMS's text against the keywords: a keyword alone
// (case and surrounding white space and punctuation ignored) is an action;
// anything else is None.
func Classify(text string, k Keywords) Action {
	w := strings.ToUpper(strings.Trim(text, " \t\r\n.!?"))
	switch {
	case w == "":
		return None
	case slices.Contains(k.Out, w):
		return OptOutAction
	case slices.Contains(k.In, w):
		return OptInAction
	}
	return None
}
