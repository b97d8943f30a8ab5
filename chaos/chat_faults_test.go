package chaos_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sizes and times of the chat scenario.
const (
	chatMessages   = 2000
	chat5xxFor     = 8 * time.Second
	chatTimeoutFor = 12 * time.Second // longer than the chat client's 10s request timeout
)

// TestChatProviderFaults sends a bulk chat campaign while the provider,
// from a quarter of the messages on, answers 500 and 503, then stops
// answering (every other message accepted before its answer is lost),
// before it recovers.
func TestChatProviderFaults(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			addr := freeAddr(t)
			prov := startChatProvider(t, "chat-token", "http://"+addr+"/callbacks/chat", "chat-secret")
			env := heraldEnv("HERALD_DATABASE_URL="+st.url(t), "HERALD_CHAT_URL="+prov.url,
				"HERALD_CHAT_TOKEN=chat-token", "HERALD_CHAT_CALLBACK_SECRET=chat-secret")
			h := startHerald(t, bin, addr, env)
			c := newClient(t, h.base(), newAnswers())
			co := c.provision("Acme")
			var tpl struct{ ID string }
			c.api("POST", "/templates/chat", fmt.Sprintf(`{"name":"chaos","messageType":1,"templateContent":"Hello {{name}}, chaos test","chatServiceId":%d}`, co.chatServiceID),
				http.StatusCreated, &tpl)
			ph := phones(8, chatMessages)
			id := c.bulk("/chat/send", tpl.ID, ph, "chat-faults")

			var (
				once      sync.Once
				recovered = make(chan time.Time, 1)
			)
			prov.mu.Lock()
			prov.onAccept = func(n int) {
				if n < chatMessages/4 {
					return
				}
				once.Do(func() {
					prov.setMode(providerErrors)
					go func() {
						time.Sleep(chat5xxFor)
						prov.setMode(providerTimeout)
						time.Sleep(chatTimeoutFor)
						prov.setMode(providerOK)
						recovered <- time.Now()
					}()
				})
			}
			prov.mu.Unlock()

			began := time.Now()
			c.start(id)
			c.completed(id, 4*time.Minute)
			completed := time.Now()
			var back time.Time
			select {
			case back = <-recovered:
			default:
				t.Fatal("the campaign completed before the provider recovered")
			}
			prov.callbacks.Wait()

			cj, rows := settle(t, c, id, "chat-faults", "Chat", ph)
			require.Equal(t, "Completed", cj.Status)
			answers, dests, duplicated := prov.stats()
			for _, p := range ph {
				require.Positive(t, dests[p], "the provider never accepted the message to %s", p)
			}
			require.Zero(t, duplicated, "messages the provider accepted under two seqs: delivered twice")
			require.Empty(t, prov.callbackErr, "callbacks herald never answered 200")
			require.Empty(t, c.log.undocumented(), "5xx answers other than 503 with Retry-After")
			checked := bin.check(t, env)

			f := newFigure("6 chat provider timeouts and 5xx", st.name, chatMessages, outcome{rows: rows, checked: checked})
			f.Duplicates = duplicated
			f.Faults = 2
			f.Times["provider recovered to Completed"] = dur(completed.Sub(back))
			f.Times["campaign"] = dur(completed.Sub(began))
			f.Answers = c.log.summary()
			kinds := make([]string, 0, len(answers))
			for k, v := range answers {
				kinds = append(kinds, fmt.Sprintf("%s x%d", k, v))
			}
			sort.Strings(kinds)
			f.Notes = append(f.Notes, fmt.Sprintf("provider answering 5xx for %s, then timing out for %s, from %d messages accepted", chat5xxFor, chatTimeoutFor, chatMessages/4),
				"provider answers: "+strings.Join(kinds, ", "))
			record(t, f)
			h.stop(30 * time.Second)
		})
	}
}
