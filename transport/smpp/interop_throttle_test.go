package smpp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/transport/smpp"
)

// limitedSMSC is interop/chaos-smsc.js limiting each bind.
type limitedSMSC struct {
	addr  string
	stdin io.Writer
	lines chan string
}

// smscCounts is the answer of chaos-smsc.js to "seconds".
type smscCounts struct {
	Counts struct {
		Submits   int `json:"submits"`
		Throttled int `json:"throttled"`
	} `json:"counts"`
	Seconds [][3]int64 `json:"seconds"` // start ms, accepted, throttled
}

// startLimitedSMSC runs chaos-smsc.js taking perBind submit_sm a second
// on each bind, counted as limit says (fixed or sliding).
func startLimitedSMSC(t *testing.T, perBind int, limit string) *limitedSMSC {
	t.Helper()
	node, dir := interopNode(t)
	addr := freeAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(node, "chaos-smsc.js", port, host, "5", "quiet",
		fmt.Sprintf("bind-rate=%d", perBind), "limit="+limit)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	s := &limitedSMSC{addr: addr, stdin: stdin, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	s.wait(t, `"event":"listening"`)
	return s
}

// wait returns the next line holding want.
func (s *limitedSMSC) wait(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			require.True(t, ok, "the SMSC exited")
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			t.Fatalf("no %s from the SMSC", want)
		}
	}
}

// counts asks the SMSC for its counts and seconds.
func (s *limitedSMSC) counts(t *testing.T) smscCounts {
	t.Helper()
	_, err := io.WriteString(s.stdin, "seconds\n")
	require.NoError(t, err)
	var c smscCounts
	require.NoError(t, json.Unmarshal([]byte(s.wait(t, `"command":"seconds"`)), &c))
	return c
}

// TestInteropThrottlingSMSC: an independent SMSC (interop/chaos-smsc.js)
// takes 200 submit_sm a second on each bind and answers ESME_RTHROTTLED
// beyond, counting in fixed one-second windows (a burst at a window's
// start is throttled once 200 are in) or over a sliding second. A Client
// without any rate setting sends 2,000 texts a bind at once. Each session
// finds the limit: the SMSC accepts at least 85 % of it in its whole
// seconds on average (about 95 % on an idle machine; the log has the
// figures), the throttled answers stay few (under 7.5 % of the
// submit_sm, about 1 % on an idle machine; under 2 % after the first two
// seconds), every throttled part is submitted again and every text is
// accepted once.
func TestInteropThrottlingSMSC(t *testing.T) {
	const perBind = 200
	for _, tc := range []struct {
		limit string
		binds int
		n     int
	}{
		{"fixed", 1, 2000},
		{"fixed", 2, 4000},
		{"sliding", 1, 2000},
	} {
		t.Run(fmt.Sprintf("%s window, %d bind(s)", tc.limit, tc.binds), func(t *testing.T) {
			smsc := startLimitedSMSC(t, perBind, tc.limit)
			c := newClient(t, smsc.addr, nil, withBinds(tc.binds), func(cfg *smpp.Config) { cfg.SubmitTimeout = 10 * time.Second })
			waitBindsUp(t, c, tc.binds)

			start := time.Now()
			requireNoErrors(t, sendAll(t, c, tc.n, 2*time.Minute, "limited"))
			elapsed := time.Since(start)

			got := smsc.counts(t)
			cs := c.State()
			require.Equal(t, tc.n, got.Counts.Submits, "each text accepted once")
			require.Equal(t, uint64(got.Counts.Throttled), cs.Throttled)
			require.Equal(t, cs.Throttled, cs.Retries, "every throttled part was submitted again")
			require.Equal(t, uint64(tc.n)+cs.Retries, cs.Submits)
			require.Zero(t, cs.SubmitErrors)

			// Whole seconds (the first and the last left out); the
			// seconds after the first two are the steady state.
			var whole []int64
			var sum, steadyAccepted, steadyThrottled int64
			for i, s := range got.Seconds {
				if i > 0 && i < len(got.Seconds)-1 {
					whole = append(whole, s[1])
					sum += s[1]
				}
				if i > 2 {
					steadyAccepted += s[1]
					steadyThrottled += s[2]
				}
			}
			require.GreaterOrEqual(t, len(whole), 3, "the sends last long enough to measure: %v", got.Seconds)
			mean := float64(sum) / float64(len(whole)) / float64(tc.binds)
			share := float64(cs.Throttled) / float64(cs.Submits)
			steady := float64(steadyThrottled) / float64(max(1, steadyAccepted+steadyThrottled))
			t.Logf("%d texts in %s: %.0f/s a bind overall, %.0f/s a bind in whole seconds %v (limit %d); "+
				"%d throttled (%.1f %% of %d submit_sm; %.1f %% after the first two seconds)",
				tc.n, elapsed.Round(time.Millisecond), float64(tc.n)/elapsed.Seconds()/float64(tc.binds), mean, whole, perBind,
				cs.Throttled, 100*share, cs.Submits, 100*steady)
			require.GreaterOrEqual(t, mean, 0.85*perBind, "each session finds the SMSC's limit and stays close under it")
			// Most throttled answers are those in flight when the SMSC
			// first throttles a session: a round trip's worth, which a
			// loaded machine lengthens. About 1 % in all on an idle one.
			require.Less(t, share, 0.075, "few throttled answers")
			require.Less(t, steady, 0.02, "hardly any once the limit is found")
		})
	}
}
