package chaos_test

import (
	"bufio"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sizes and times of the SMSC scenarios.
const (
	smscKillMessages   = 4000
	smscKills          = 2
	smscDown           = 3 * time.Second // between an SMSC kill and its restart
	stallMessages      = 3000
	stallFor           = 12 * time.Second // longer than the adapter's 10s submit timeout
	stallKilledRestart = 2 * time.Second
)

// TestSMSCKilled kills the SMSC with SIGKILL at random points of a bulk
// SMS campaign and starts it again on the same address a few seconds
// later.
func TestSMSCKilled(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			log := newSubmitLog()
			sm := startSMSC(t, log, "", "127.0.0.1", 0)
			env := heraldEnv("HERALD_DATABASE_URL="+st.url(t), "HERALD_SMPP_ADDR="+sm.addr())
			h := startHerald(t, bin, freeAddr(t), env)
			c := newClient(t, h.base(), newAnswers())
			co := c.provision("Acme")
			ph := phones(3, smscKillMessages)
			id := c.smsCampaign(co, ph, "smsc-kill")

			rnd := newRand(t)
			points := make([]float64, smscKills)
			for i := range points {
				points[i] = 0.15 + 0.6*rnd.Float64()
			}
			slices.Sort(points)
			var resumes []time.Duration
			var restarted time.Time
			var readyz []string // GET /readyz while the SMSC is down
			began := time.Now()
			c.start(id)
			for _, p := range points {
				log.waitDistinct(t, int(p*smscKillMessages), 2*time.Minute)
				log.mark("SMSC killed")
				sm.kill()
				time.Sleep(smscDown / 2)
				readyz = append(readyz, probeReadyz(c))
				time.Sleep(smscDown - smscDown/2)
				sm = sm.restart(t, "")
				restarted = time.Now()
				if d, ok := firstSubmitAfter(log, restarted, time.Minute); ok {
					resumes = append(resumes, d)
				}
			}
			c.completed(id, 3*time.Minute)
			completed := time.Now()

			o := checkSMS(t, c, bin, env, id, "smsc-kill", ph, log)
			f := newFigure("2 SMSC kill -9 + restart", st.name, smscKillMessages, o)
			if len(resumes) > 0 {
				f.Times["SMSC restart to next submit (max)"] = dur(slices.Max(resumes))
			}
			f.Times["last SMSC restart to Completed"] = dur(completed.Sub(restarted))
			f.Times["campaign"] = dur(completed.Sub(began))
			f.Answers = c.log.summary()
			f.Notes = append(f.Notes, fmt.Sprintf("SMSC down %s each time; messages it accepted without a receipt stay Sent", smscDown),
				"GET /readyz with the SMSC down: "+strings.Join(readyz, "; "))
			f.Notes = append(f.Notes, duplicateNotes(t, o.byFault)...)
			record(t, f)
			h.stop(30 * time.Second)
		})
	}
}

// TestSMSCStalled makes the SMSC stop answering submit_sm while it keeps
// the connection (enquire_link answered) until herald's window is full,
// for longer than the submit timeout; then it resumes (answering the held
// submits late) or is killed and restarted.
func TestSMSCStalled(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	for _, st := range stores {
		for _, then := range []string{"resumes", "killed"} {
			t.Run(st.name+"/"+then, func(t *testing.T) {
				log := newSubmitLog()
				sm := startSMSC(t, log, "", "127.0.0.1", 0)
				env := heraldEnv("HERALD_DATABASE_URL="+st.url(t), "HERALD_SMPP_ADDR="+sm.addr())
				h := startHerald(t, bin, freeAddr(t), env)
				c := newClient(t, h.base(), newAnswers())
				co := c.provision("Acme")
				ph := phones(4, stallMessages)
				id := c.smsCampaign(co, ph, "smsc-stall")

				p := 0.2 + 0.4*newRand(t).Float64()
				began := time.Now()
				c.start(id)
				log.waitDistinct(t, int(p*stallMessages), 2*time.Minute)
				sm.command("stall")
				log.mark("SMSC stalled")
				time.Sleep(stallFor / 2)
				window := metric(t, c, "herald_smpp_window_in_use")
				time.Sleep(stallFor - stallFor/2)
				ended := time.Now()
				if then == "resumes" {
					sm.command("resume")
				} else {
					sm.kill()
					time.Sleep(stallKilledRestart)
					sm = sm.restart(t, "")
				}
				c.completed(id, 3*time.Minute)
				completed := time.Now()

				o := checkSMS(t, c, bin, env, id, "smsc-stall", ph, log)
				f := newFigure("3 SMSC stall "+stallFor.String()+", then "+then, st.name, stallMessages, o)
				f.Times["stall end to Completed"] = dur(completed.Sub(ended))
				f.Times["campaign"] = dur(completed.Sub(began))
				f.Answers = c.log.summary()
				f.Notes = append(f.Notes, "herald_smpp_window_in_use mid-stall: "+window)
				f.Notes = append(f.Notes, duplicateNotes(t, o.byFault)...)
				record(t, f)
				h.stop(30 * time.Second)
			})
		}
	}
}

// probeReadyz returns herald's answer to GET /readyz: status,
// Retry-After and body.
func probeReadyz(c *client) string {
	status, hdr, body, err := c.do("GET", "/readyz", nil, "")
	if err != nil {
		return "no answer: " + err.Error()
	}
	s := fmt.Sprint(status)
	if ra := hdr.Get("Retry-After"); ra != "" {
		s += " Retry-After " + ra
	}
	return s + " " + strings.TrimSpace(string(body))
}

// metric returns the value of the first sample of the metric name in
// herald's /metrics, or "absent".
func metric(t *testing.T, c *client, name string) string {
	t.Helper()
	status, _, body, err := c.do("GET", "/metrics", nil, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			return m[2]
		}
	}
	return "absent"
}
