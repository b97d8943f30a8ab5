package smpp_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/transport/smpp"
	"github.com/stretchr/testify/require"
)

func TestNormalizeMessageID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"12345", "12345"},
		{"0012345", "12345"},
		{"000", "0"},
		{"00000000A1B2", "a1b2"},
		{"a1b2", "a1b2"},
		{"A1B2", "a1b2"},
		{" 0042\x00", "42"},
		{"msg-0001-X", "msg-0001-X"},
		{"", ""},
		{" \x00", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, smpp.NormalizeMessageID(tt.in), "%q", tt.in)
	}
	// the forms a submit_sm_resp and a receipt may use meet
	require.Equal(t, smpp.NormalizeMessageID("00000000000F"), smpp.NormalizeMessageID("f"))
}

func TestParseReceiptText(t *testing.T) {
	loc := time.FixedZone("SMSC", 2*3600)
	tests := []struct {
		name  string
		text  string
		id    string
		state string
		err   string
		at    time.Time
	}{
		{
			name: "standard",
			text: "id:0000000001AB sub:001 dlvrd:001 submit date:2511221340 done date:2511221341 stat:DELIVRD err:000 text:Hello",
			id:   "1ab", state: "DELIVRD", err: "000",
			at: time.Date(2025, 11, 22, 13, 41, 0, 0, loc),
		},
		{
			name: "seconds in dates, upper-case keys",
			text: "ID:98765 SUB:001 DLVRD:000 SUBMIT DATE:251122134005 DONE DATE:251122134159 STAT:UNDELIV ERR:001 TEXT:x",
			id:   "98765", state: "UNDELIV", err: "001",
			at: time.Date(2025, 11, 22, 13, 41, 59, 0, loc),
		},
		{
			name: "long state spelling, no err, no dates",
			text: "id:abc-1 stat:DELIVERED", id: "abc-1", state: "DELIVRD", err: "000",
		},
		{
			name: "keys in another order, text with keys inside",
			text: "stat:REJECTD err:003 id:77 text:id:1 stat:DELIVRD", id: "77", state: "REJECTD", err: "003",
		},
		{
			name: "unreadable done date",
			text: "id:5 done date:99999 stat:EXPIRED err:002", id: "5", state: "EXPIRED", err: "002",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := smpp.ParseReceiptText(tt.text, loc)
			require.NoError(t, err)
			require.Equal(t, tt.id, r.ProviderID)
			require.Equal(t, tt.state, r.State)
			require.Equal(t, tt.err, r.Err)
			require.True(t, tt.at.Equal(r.At), "at %v, want %v", r.At, tt.at)
		})
	}
	for _, bad := range []string{"", "hello there", "sub:001 stat:DELIVRD", "id: stat:DELIVRD"} {
		_, err := smpp.ParseReceiptText(bad, nil)
		require.ErrorIs(t, err, smpp.ErrNotReceipt, "%q", bad)
	}
}

func TestStatusError(t *testing.T) {
	tests := []struct {
		status    uint32
		permanent bool
		code      string
		details   string
	}{
		{0x58, false, "0x00000058", "ESME_RTHROTTLED"},
		{0x14, false, "0x00000014", "ESME_RMSGQFUL"},
		{0x08, false, "0x00000008", "ESME_RSYSERR"},
		{0x64, false, "0x00000064", "ESME_RX_T_APPN"},
		{0x0B, true, "0x0000000B", "ESME_RINVDSTADR: Invalid Dest Addr"},
		{0x0A, true, "0x0000000A", "ESME_RINVSRCADR"},
		{0x45, true, "0x00000045", "ESME_RSUBMITFAIL"},
		{0x400, true, "0x00000400", "unknown command_status"},
	}
	for _, tt := range tests {
		e := smpp.StatusError(tt.status)
		require.Equal(t, tt.permanent, e.Permanent, tt.code)
		require.Equal(t, tt.code, e.Code)
		require.Contains(t, e.Details, tt.details)
	}
}

func TestIDFormatCanonical(t *testing.T) {
	tests := []struct {
		f      smpp.IDFormat
		in     string
		want   string
		reason string
	}{
		{smpp.IDAsSent, "00FF", "ff", "as sent: NormalizeMessageID"},
		{smpp.IDHex, "0001E240", "123456", "hexadecimal read as a number"},
		{smpp.IDHex, "1e240", "123456", "case does not matter"},
		{smpp.IDDecimal, "000123456", "123456", "decimal read as a number"},
		{smpp.IDDecimal, "1e240", "1e240", "not a decimal number: kept"},
		{smpp.IDHex, "msg-1", "msg-1", "not a number: kept"},
		{smpp.IDHex, "FFFFFFFFFFFFFFFFFF", "ffffffffffffffffff", "past 64 bits: kept"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.f.Canonical(tt.in), tt.reason)
	}
	for in, want := range map[string]smpp.IDFormat{"": smpp.IDAsSent, "as-sent": smpp.IDAsSent, "HEX": smpp.IDHex, "decimal": smpp.IDDecimal} {
		got, err := smpp.ParseIDFormat(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := smpp.ParseIDFormat("octal")
	require.Error(t, err)
}

// A receipt text is read without copying it: the values are substrings of
// the text, and an id already in lower case needs no new string. One
// receipt comes for every SMS, so this is on the hot path.
func TestParseReceiptTextAllocatesNothing(t *testing.T) {
	text := "id:1ab sub:001 dlvrd:001 submit date:2511221340 done date:2511221341 stat:DELIVRD err:000 text:Hello"
	allocs := testing.AllocsPerRun(100, func() {
		r, err := smpp.ParseReceiptText(text, time.UTC)
		if err != nil || r.ProviderID != "1ab" {
			t.Fatalf("%+v, %v", r, err)
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkParseReceiptText(b *testing.B) {
	text := "id:0000000001AB sub:001 dlvrd:001 submit date:2511221340 done date:2511221341 stat:DELIVRD err:000 text:Hello"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := smpp.ParseReceiptText(text, time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}
