package metawhatsapp

import (
	"sync"
	"time"
)

// ReplayHold is how long a webhook's key is kept to refuse its replay.
const ReplayHold = 24 * time.Hour

// maxRetakes bounds the keys of failed webhooks an adapter remembers.
const maxRetakes = 1 << 14

// retakes are the keys of webhooks whose report failed, when the replay
// guard cannot forget them: the provider's resend of such a body is taken
// once by this adapter. A resend reaching another process is refused.
type retakes struct {
	mu   sync.Mutex
	keys map[string]time.Time
}

func (r *retakes) add(key string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]time.Time{}
	}
	if len(r.keys) >= maxRetakes {
		now := time.Now()
		for k, t := range r.keys {
			if t.Before(now) || len(r.keys) >= maxRetakes {
				delete(r.keys, k)
			}
		}
	}
	r.keys[key] = until
}

// take reports whether key was a failed webhook's, and forgets it.
func (r *retakes) take(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[key]; !ok {
		return false
	}
	delete(r.keys, key)
	return true
}
