package messaging

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SendWindow is the part of the day, in the recipient's local time, in
// which a bulk campaign's messages may be sent (quiet hours outside it).
// From and To are minutes after midnight; From after To is a window over
// midnight (20:00 to 08:00). TimeZone, when set, is the IANA zone every
// recipient is taken to be in; otherwise each recipient's zone comes from
// the phone number.
type SendWindow struct {
	From, To int
	TimeZone string
}

// ParseSendWindow reads a window as the API gives it: from and to as
// "HH:MM" (to may be "24:00"), timeZone an IANA zone or empty. Errors are
// Invalid on sendWindow.from, sendWindow.to or sendWindow.timeZone.
func ParseSendWindow(from, to, timeZone string) (SendWindow, error) {
	var fe FieldErrors
	w := SendWindow{TimeZone: timeZone}
	var ok bool
	if w.From, ok = clockMinutes(from, false); !ok {
		fe.Add("sendWindow.from", "sendWindow.from must be a time of day HH:MM (00:00 to 23:59), not %q", from)
	}
	if w.To, ok = clockMinutes(to, true); !ok {
		fe.Add("sendWindow.to", "sendWindow.to must be a time of day HH:MM (00:00 to 24:00), not %q", to)
	}
	if _, bad := fe["sendWindow.to"]; !bad && w.From == w.To {
		fe.Add("sendWindow.to", "sendWindow.to must differ from sendWindow.from")
	}
	if timeZone != "" {
		if _, err := time.LoadLocation(timeZone); err != nil || timeZone == "Local" {
			fe.Add("sendWindow.timeZone", "sendWindow.timeZone must be an IANA time zone such as Europe/Paris, not %q", timeZone)
		}
	}
	return w, fe.Err()
}

// clockMinutes reads "HH:MM" as minutes after midnight; end allows 24:00.
func clockMinutes(s string, end bool) (int, bool) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh > 24 || (hh == 24 && (mm != 0 || !end)) {
		return 0, false
	}
	return hh*60 + mm, true
}

// Clock writes minutes after midnight as "HH:MM".
func Clock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

// Open tells whether t, seen in loc, is inside the window; when it is
// not, next is the moment the window opens next (in loc's wall clock: on
// a day whose opening a clock change skips, the first moment after it).
func (w SendWindow) Open(t time.Time, loc *time.Location) (open bool, next time.Time) {
	lt := t.In(loc)
	now := lt.Hour()*60 + lt.Minute()
	if w.From < w.To {
		if now >= w.From && now < w.To {
			return true, time.Time{}
		}
	} else if now >= w.From || now < w.To { // over midnight
		return true, time.Time{}
	}
	day := lt
	if now >= w.From {
		day = lt.AddDate(0, 0, 1)
	}
	return false, time.Date(day.Year(), day.Month(), day.Day(), w.From/60, w.From%60, 0, 0, loc)
}
