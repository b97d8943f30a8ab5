package template

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/messaging"
)

// MediaInfo is what an HTTP HEAD request learned about a media URL.
type MediaInfo struct {
	// StatusCode is the HTTP status of the final response, after redirects.
	StatusCode int
	// ContentLength is the size of the media in bytes, -1 when the server
	// did not say.
	ContentLength int64
	// ContentType is the Content-Type header, "" when absent.
	ContentType string
}

// OK reports whether the status is 2xx.
func (m MediaInfo) OK() bool { return m.StatusCode >= 200 && m.StatusCode <= 299 }

// MediaProber is the port through which media URLs are checked before a
// template is accepted. transport/media implements it over HTTP.
type MediaProber interface {
	// Probe sends a HEAD request to rawURL (https only) and reports the
	// final response. It returns an error when no response was obtained:
	// a refused URL, a network failure, a timeout, too many redirects. A
	// response with any status is not an error. An address the prober may
	// not connect to (egress) is refused before any connection, with an
	// error wrapping egress.ErrNotAllowed.
	Probe(ctx context.Context, rawURL string) (MediaInfo, error)
}

// mediaTarget is one media URL of a template and its size limit.
type mediaTarget struct {
	field string // JSON path
	url   string
	limit int64
	video bool // its Content-Length fills Config.FileSize
}

// mediaTargets lists the probe-able media URLs of t: images (ImageOnly,
// ImagePlusText, every carousel item), the video and its thumbnail, and
// the file of a File template unless its URL has placeholders.
func mediaTargets(t *messaging.Template) []mediaTarget {
	c := t.Config
	if t.Channel != messaging.ChannelChat || c == nil {
		return nil
	}
	var ts []mediaTarget
	add := func(field, u string, limit int64, video bool) {
		if u == "" || HasPlaceholders(u) {
			return
		}
		ts = append(ts, mediaTarget{field: configPrefix + field, url: u, limit: limit, video: video})
	}
	switch t.MessageType {
	case messaging.TypeImageOnly, messaging.TypeImagePlusText:
		add("imageUrl", c.ImageURL, MaxImageBytes, false)
	case messaging.TypeCarousel:
		for i, it := range c.Items {
			add("items["+strconv.Itoa(i)+"].imageUrl", it.ImageURL, MaxImageBytes, false)
		}
	case messaging.TypeVideo:
		add("videoUrl", c.VideoURL, MaxVideoBytes, true)
		add("thumbnailUrl", c.ThumbnailURL, MaxThumbnailBytes, false)
	case messaging.TypeFile:
		add("fileUrl", c.FileURL, MaxFileBytes, false)
	}
	return ts
}

// ValidateMedia probes every media URL of a chat template through p, at
// the same time, and returns nil or an Invalid *messaging.Error with one
// field per failing URL: not HTTPS, an address that is not allowed
// (egress.ErrNotAllowed from the prober), unreachable, a non-2xx answer, or a
// Content-Length over the limit of its kind (image and thumbnail 1 MB,
// video and file 200 MB; 1 MB = 1,048,576 bytes). A size the server does
// not give is not checked. The probe errors are wrapped in the returned
// error (Err) for logging; the field messages do not repeat them.
//
// The Content-Length of a reachable video is written to t.Config.FileSize.
// Duration cannot be learned from a HEAD request: the caller's value is
// kept. URLs with placeholders (a fileUrl) cannot be probed before
// rendering and are skipped; so are empty URLs, which Validate reports. SMS
// templates and chat types without media pass without a probe.
//
// When ctx ends before the probes finish, ValidateMedia returns ctx's error
// (wrapped) instead of field errors.
func ValidateMedia(ctx context.Context, p MediaProber, t *messaging.Template) error {
	fe, causes, err := checkMedia(ctx, p, t)
	if err != nil {
		return err
	}
	if len(fe) == 0 {
		return nil
	}
	e := &messaging.Error{Code: messaging.Invalid, Name: messaging.NameBadRequest, Message: "Validation failed",
		Fields: map[string]string(fe)}
	if len(causes) > 0 {
		e.Err = errors.Join(causes...)
	}
	return e
}

// CheckMedia is ValidateMedia returning the field errors themselves (see
// Check). Its error is not nil only when ctx ended first.
func CheckMedia(ctx context.Context, p MediaProber, t *messaging.Template) (messaging.FieldErrors, error) {
	fe, _, err := checkMedia(ctx, p, t)
	return fe, err
}

type probeResult struct {
	info MediaInfo
	err  error
}

func checkMedia(ctx context.Context, p MediaProber, t *messaging.Template) (messaging.FieldErrors, []error, error) {
	targets := mediaTargets(t)
	if len(targets) == 0 {
		return nil, nil, nil
	}
	if p == nil {
		return nil, nil, errors.New("validate media: no MediaProber given")
	}
	var fe messaging.FieldErrors

	// Probe each distinct HTTPS URL once, all at the same time.
	index := map[string]int{}
	var urls []string
	for _, tg := range targets {
		if msg := urlProblem(tg.url); msg != "" {
			fe.Add(tg.field, "%s %s", FieldName(tg.field), msg)
			continue
		}
		if _, ok := index[tg.url]; !ok {
			index[tg.url] = len(urls)
			urls = append(urls, tg.url)
		}
	}
	results := make([]probeResult, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			info, err := p.Probe(ctx, u)
			results[i] = probeResult{info, err}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("validate media: %w", err)
	}

	var causes []error
	for _, tg := range targets {
		i, ok := index[tg.url]
		if !ok {
			continue // not HTTPS, reported above
		}
		r, name := results[i], FieldName(tg.field)
		switch {
		case errors.Is(r.err, egress.ErrNotAllowed):
			fe.Add(tg.field, "%s must point at a public internet address", name)
			causes = append(causes, fmt.Errorf("%s: %w", tg.field, r.err))
		case r.err != nil:
			fe.Add(tg.field, "%s is not reachable", name)
			causes = append(causes, fmt.Errorf("%s: %w", tg.field, r.err))
		case !r.info.OK():
			fe.Add(tg.field, "%s is not reachable: the server answered HTTP %d", name, r.info.StatusCode)
		case r.info.ContentLength > tg.limit:
			fe.Add(tg.field, "%s is larger than %d MB (%d bytes)", name, tg.limit>>20, r.info.ContentLength)
		}
		if tg.video && r.err == nil && r.info.OK() && r.info.ContentLength >= 0 {
			t.Config.FileSize = r.info.ContentLength
		}
	}
	return fe, causes, nil
}
