package smscsim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

// control calls the control API and decodes its JSON answer into out
// (when not nil); it returns the status.
func control(t *testing.T, base, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	}
	if out != nil {
		require.NoError(t, json.Unmarshal(b, out), "%s", b)
	}
	return resp.StatusCode
}

// TestControlHandler drives a Server through its control API as a fault
// test in another process would: stall and resume, faults, counts of what
// it received, and dropping the connection.
func TestControlHandler(t *testing.T) {
	srv := start(t, smscsim.Config{Record: true})
	api := httptest.NewServer(srv.ControlHandler())
	t.Cleanup(api.Close)
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")

	var empty []smscsim.Count
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/counts", "", &empty))
	require.NotNil(t, empty, "[] rather than null")
	require.Empty(t, empty)

	var st smscsim.Stats
	require.Equal(t, http.StatusOK, control(t, api.URL, "POST", "/stall?what=submits", "", &st))
	require.Equal(t, smscsim.StallSubmits, st.Stalled)
	e.write(submit("447700900000", "twice", 0))
	e.write(submit("447700900000", "twice", 0))
	e.write(submit("447700900001", "once", 0))
	require.Eventually(t, func() bool {
		control(t, api.URL, "GET", "/stats", "", &st)
		return st.Held == 3
	}, 2*time.Second, time.Millisecond)
	require.Equal(t, http.StatusOK, control(t, api.URL, "POST", "/resume", "", &st))
	require.Zero(t, st.Held)
	require.Equal(t, smscsim.Stall(0), st.Stalled)
	for range 3 {
		h, _ := e.read()
		require.Equal(t, data.SUBMIT_SM_RESP, h.CommandID)
	}

	var counts []smscsim.Count
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/counts", "", &counts))
	require.Equal(t, []smscsim.Count{
		{To: "447700900000", Text: "twice", Count: 2},
		{To: "447700900001", Text: "once", Count: 1},
	}, counts)
	var msgs []smscsim.Message
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/messages?to=447700900001", "", &msgs))
	require.Len(t, msgs, 1)
	require.Equal(t, "once", msgs[0].Text)
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/messages?to=1", "", &msgs))
	require.Empty(t, msgs)
	var parts []smscsim.Part
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/parts", "", &parts))
	require.Len(t, parts, 3)
	require.Equal(t, "447700900000", parts[0].To)

	require.Equal(t, http.StatusOK, control(t, api.URL, "PUT", "/faults", `{"Status": 11}`, &st))
	e.write(submit("447700900000", "refused", 0))
	h, _ := e.read()
	require.Equal(t, data.ESME_RINVDSTADR, h.CommandStatus)
	require.Equal(t, http.StatusOK, control(t, api.URL, "PUT", "/faults", `{}`, nil))

	require.Equal(t, http.StatusOK, control(t, api.URL, "POST", "/drop", "", &st))
	require.Equal(t, uint64(1), st.Dropped)
	_ = e.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := e.r.ReadByte()
	require.Error(t, err, "the connection was closed")
}

func TestControlHandlerRefusals(t *testing.T) {
	srv := start(t, smscsim.Config{})
	api := httptest.NewServer(srv.ControlHandler())
	t.Cleanup(api.Close)
	tests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"unknown stall", "POST", "/stall?what=everything", "", http.StatusBadRequest},
		{"faults not JSON", "PUT", "/faults", "{", http.StatusBadRequest},
		{"unknown fault", "PUT", "/faults", `{"Explode": true}`, http.StatusBadRequest},
		{"stall with GET", "GET", "/stall", "", http.StatusMethodNotAllowed},
		{"unknown path", "GET", "/nothing", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.status, control(t, api.URL, tt.method, tt.path, tt.body, nil))
		})
	}
	require.Equal(t, smscsim.Stall(0), srv.Stats().Stalled, "nothing was stalled")
}

// TestControlHandlerLimits: refusing binds, dropping mid-window and the
// submits per second through the control API.
func TestControlHandlerLimits(t *testing.T) {
	srv := start(t, smscsim.Config{})
	api := httptest.NewServer(srv.ControlHandler())
	t.Cleanup(api.Close)

	var rate []smscsim.Second
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/rate", "", &rate))
	require.NotNil(t, rate, "[] rather than null")
	require.Empty(t, rate)

	var st smscsim.Stats
	require.Equal(t, http.StatusOK, control(t, api.URL, "POST", "/refuse-binds?for=1h", "", &st))
	require.False(t, st.BindsRefusedUntil.IsZero())
	require.Equal(t, data.ESME_RBINDFAIL, dial(t, srv).bind(pdu.Transmitter, "herald", "").CommandStatus)
	require.Equal(t, http.StatusBadRequest, control(t, api.URL, "POST", "/refuse-binds?for=soon", "", nil))
	require.Equal(t, http.StatusOK, control(t, api.URL, "POST", "/refuse-binds?for=0s", "", &st))
	require.True(t, st.BindsRefusedUntil.IsZero())

	e := dial(t, srv)
	require.Equal(t, data.ESME_ROK, e.bind(pdu.Transmitter, "herald", "").CommandStatus)
	e.write(submit("447700900000", "x", 0))
	h, _ := e.read()
	require.Equal(t, data.ESME_ROK, h.CommandStatus)
	require.Equal(t, http.StatusOK, control(t, api.URL, "GET", "/rate", "", &rate))
	require.Len(t, rate, 1)
	require.Equal(t, 1, rate[0].Accepted)
	require.Zero(t, rate[0].Throttled)

	require.Equal(t, http.StatusOK, control(t, api.URL, "POST", "/drop-mid-window", "", nil))
	e.write(submit("447700900000", "dropped", 0))
	e.closedByServer()
	require.Eventually(t, func() bool {
		control(t, api.URL, "GET", "/stats", "", &st)
		return st.Dropped == 1 && st.Connections == 0
	}, 2*time.Second, time.Millisecond)
	require.Equal(t, uint64(1), st.Submits)
}
