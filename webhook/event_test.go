package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// TestMessageStatusDataAsEncodingJSON checks that the data appended
// without reflection is what encoding/json writes of it.
func TestMessageStatusDataAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 28, 3, 4, 5, 6e6, time.UTC)
	later := at.Add(time.Minute)
	ids := messaging.NewIDGenerator(func() time.Time { return at })
	base := messaging.Message{ID: ids.New(), CompanyID: ids.New(), CampaignID: ids.New(), Channel: messaging.ChannelSMS,
		Phone: "+33600000001", CreatedAt: at}
	cases := map[string]func(m *messaging.Message){
		"pending":   func(m *messaging.Message) { m.Status = messaging.StatusPending },
		"sent":      func(m *messaging.Message) { m.Status, m.SentAt = messaging.StatusSent, &at },
		"delivered": func(m *messaging.Message) { m.Status, m.SentAt, m.DeliveredAt = messaging.StatusDelivered, &at, &later },
		"failed": func(m *messaging.Message) {
			m.Status, m.Details, m.SMSErrorCode, m.ExternalUserID = messaging.StatusFailed, `rejected "<x>" & é\n`, "0x0b", "user\t1"
		},
		"chat failed": func(m *messaging.Message) {
			m.Channel, m.Status, m.Details = messaging.ChannelChat, messaging.StatusFailed, "USER_BLOCKED (8)"
		},
		"fallback seen": func(m *messaging.Message) {
			m.FallbackFor, m.Status, m.SentAt, m.DeliveredAt, m.SeenAt = ids.New(), messaging.StatusSeen, &at, &later, &later
		},
	}
	for name, set := range cases {
		m := base
		set(&m)
		e := MessageStatusEvent(ids.New(), &m, at)
		var d MessageStatusData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("%s: %v in %s", name, err, e.Data)
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Data) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, e.Data, want)
		}
	}
}

// TestDescribeReadsStatusRef checks that Describe reads the status the
// reference carries.
func TestDescribeReadsStatusRef(t *testing.T) {
	at := time.Date(2026, 11, 28, 3, 4, 5, 0, time.UTC)
	ids := messaging.NewIDGenerator(func() time.Time { return at })
	m := messaging.Message{ID: ids.New(), CompanyID: ids.New(), Channel: messaging.ChannelSMS, Phone: "+33600000001",
		Status: messaging.StatusDelivered, CreatedAt: at, SentAt: &at, DeliveredAt: &at}
	ref := MessageStatusRef(ids.New(), m.CompanyID, m.ID, messaging.StatusSent, at)
	var d MessageStatusData
	if err := json.Unmarshal(Describe(ref, &m).Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Status != messaging.StatusSent || d.DeliveredAt != nil || d.SentAt == nil {
		t.Errorf("described %+v, want Sent without deliveredAt", d)
	}
	if got := readStatusRef([]byte(`{ "status" : "Seen" }`)); got.Status != messaging.StatusSeen {
		t.Errorf("spaced reference read as %q", got.Status)
	}
}
