package smpp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/smpp"
)

// smscEvent is one line the interop SMSC prints.
type smscEvent struct {
	Event      string `json:"event"`
	Port       int    `json:"port"`
	Command    string `json:"command"`
	SystemID   string `json:"system_id"`
	Seq        uint32 `json:"seq"`
	ID         int    `json:"id"`
	Source     string `json:"source_addr"`
	SourceTON  int    `json:"source_addr_ton"`
	SourceNPI  int    `json:"source_addr_npi"`
	Dest       string `json:"destination_addr"`
	DestTON    int    `json:"dest_addr_ton"`
	DestNPI    int    `json:"dest_addr_npi"`
	EsmClass   int    `json:"esm_class"`
	DataCoding int    `json:"data_coding"`
	RegDlv     int    `json:"registered_delivery"`
	Concat     *struct {
		Ref, Total, Index int
	} `json:"concat"`
	To     string `json:"to"`
	Text   string `json:"text"`
	Parts  int    `json:"parts"`
	Status int    `json:"status"`
}

// interopNode returns the path of node and of interop/, skipping the test
// when either or interop/node_modules is missing, unless
// HERALD_TEST_SMPP_INTEROP=1 (then it fails).
func interopNode(t *testing.T) (node, dir string) {
	t.Helper()
	required := os.Getenv("HERALD_TEST_SMPP_INTEROP") == "1"
	missing := func(why string) {
		t.Helper()
		if required {
			t.Fatalf("HERALD_TEST_SMPP_INTEROP=1 but %s (run npm ci in interop/)", why)
		}
		t.Skipf("interop SMSC unavailable: %s", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	dir, err = filepath.Abs(filepath.Join("..", "..", "interop"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "smpp", "package.json")); err != nil {
		missing("interop/node_modules/smpp is not installed")
	}
	return node, dir
}

// TestInteropNodeSMSC runs the adapter against an independent SMSC: the
// npm package smpp in server mode (interop/smsc.js). It skips when node or
// interop/node_modules is missing, unless HERALD_TEST_SMPP_INTEROP=1.
func TestInteropNodeSMSC(t *testing.T) {
	node, dir := interopNode(t)
	addr := freeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(node, "smsc.js", port)
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
	events := make(chan smscEvent, 256)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev smscEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				events <- ev
			}
		}
		close(events)
	}()
	next := func(kind string) smscEvent {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				require.True(t, ok, "the SMSC exited")
				require.NotEqual(t, "error", ev.Event, ev.Text)
				if ev.Event == kind {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %s event from the SMSC", kind)
			}
		}
	}
	require.Equal(t, port, strconv.Itoa(next("listening").Port))

	rs := newSink()
	mo := &inboundSink{}
	c := newClient(t, addr, rs.handle, func(cfg *smpp.Config) { cfg.InboundHandler = mo.handle })
	bind := next("bind")
	require.Equal(t, "bind_transceiver", bind.Command)
	require.Equal(t, "herald", bind.SystemID)

	texts := []struct {
		name string
		text string
		dc   int
	}{
		{"short", "Hello from Herald: 100% ok @ £2", 0},
		{"long with extension characters", strings.Repeat("Long text {with} [brackets] and € signs. ", 9), 0},
		{"UCS-2 with emoji", strings.Repeat("Привет 😀 ", 20), 8},
	}
	for _, tt := range texts {
		t.Run(tt.name, func(t *testing.T) {
			seg := template.Segment(tt.text)
			res, err := c.Send(ctxTimeout(t, 10*time.Second), delivery.SMS{From: "Herald", To: "447700900123", Text: tt.text})
			require.NoError(t, err)
			require.Len(t, res.PartIDs, seg.Segments)

			seqs := map[uint32]bool{}
			ref := -1
			for i := range seg.Segments {
				sub := next("submit")
				require.Equal(t, "Herald", sub.Source)
				require.Equal(t, [2]int{5, 0}, [2]int{sub.SourceTON, sub.SourceNPI})
				require.Equal(t, "447700900123", sub.Dest)
				require.Equal(t, [2]int{1, 1}, [2]int{sub.DestTON, sub.DestNPI})
				require.Equal(t, tt.dc, sub.DataCoding)
				require.Equal(t, 1, sub.RegDlv)
				require.False(t, seqs[sub.Seq], "distinct sequence numbers")
				seqs[sub.Seq] = true
				require.Equal(t, strconv.Itoa(sub.ID), res.PartIDs[i], "the padded id, normalised")
				if seg.Segments > 1 {
					require.NotNil(t, sub.Concat)
					require.Equal(t, seg.Segments, sub.Concat.Total)
					require.Equal(t, i+1, sub.Concat.Index)
					if ref >= 0 {
						require.Equal(t, ref, sub.Concat.Ref)
					}
					ref = sub.Concat.Ref
				} else {
					require.Nil(t, sub.Concat)
				}
			}
			msg := next("message")
			require.Equal(t, tt.text, msg.Text, "the independent SMSC decodes and joins the text")
			require.Equal(t, seg.Segments, msg.Parts)

			for _, id := range res.PartIDs {
				r := rs.waitFor(t, id)
				require.Equal(t, "DELIVRD", r.State)
				require.Equal(t, "000", r.Err)
			}
			for range res.PartIDs {
				require.Equal(t, 0, next("receipt_ack").Status, "receipts acknowledged ESME_ROK")
			}
		})
	}

	// Handsets reply: one part in the GSM alphabet with extension
	// characters, one in UCS-2, and a text in two parts with a
	// concatenation header; the independent SMSC encodes them.
	t.Run("mobile-originated", func(t *testing.T) {
		for _, line := range []string{
			`mo {"from":"447700900123","to":"Herald","parts":["STOP {now} 5€"]}`,
			`mo {"from":"447700900124","to":"Herald","parts":["Да, всё хорошо 👍"]}`,
			`mo {"from":"447700900125","to":"Herald","parts":["first half, ","second half"],"ref":42}`,
		} {
			_, err := io.WriteString(stdin, line+"\n")
			require.NoError(t, err)
			next("mo_sent")
		}
		require.Eventually(t, func() bool {
			mo.mu.Lock()
			defer mo.mu.Unlock()
			return len(mo.parts) == 4
		}, 10*time.Second, 10*time.Millisecond)
		mo.mu.Lock()
		defer mo.mu.Unlock()
		byFrom := map[string][]delivery.InboundPart{}
		for _, p := range mo.parts {
			require.Equal(t, "Herald", p.To)
			byFrom[p.From] = append(byFrom[p.From], p)
		}
		require.Equal(t, "STOP {now} 5€", byFrom["447700900123"][0].Text)
		require.Equal(t, 1, byFrom["447700900123"][0].Count)
		require.Equal(t, "Да, всё хорошо 👍", byFrom["447700900124"][0].Text)
		halves := byFrom["447700900125"]
		require.Len(t, halves, 2)
		for _, p := range halves {
			require.Equal(t, [2]int{42, 2}, [2]int{p.Ref, p.Count})
		}
		require.ElementsMatch(t, []string{"first half, ", "second half"}, []string{halves[0].Text, halves[1].Text})
		require.ElementsMatch(t, []int{1, 2}, []int{halves[0].Seq, halves[1].Seq})
	})
	require.NoError(t, c.Close(ctxTimeout(t, 5*time.Second)))
	next("unbind")
}
