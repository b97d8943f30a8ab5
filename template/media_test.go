package template_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// fakeProber answers from a table; unknown URLs answer 200 with an unknown
// length. It records every URL probed.
type fakeProber struct {
	mu      sync.Mutex
	answers map[string]template.MediaInfo
	errs    map[string]error
	calls   []string
}

func (f *fakeProber) Probe(_ context.Context, u string) (template.MediaInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, u)
	if err := f.errs[u]; err != nil {
		return template.MediaInfo{}, err
	}
	if a, ok := f.answers[u]; ok {
		return a, nil
	}
	return template.MediaInfo{StatusCode: 200, ContentLength: -1}, nil
}

func ok(n int64) template.MediaInfo {
	return template.MediaInfo{StatusCode: 200, ContentLength: n, ContentType: "application/octet-stream"}
}

const (
	imgURL   = "https://cdn.example.com/a.jpg"
	videoURL = "https://cdn.example.com/v.mp4"
	thumbURL = "https://cdn.example.com/t.jpg"
	fileURL  = "https://files.example.com/invoice.pdf"
)

func TestValidateMedia(t *testing.T) {
	errDown := errors.New("connection refused")
	image := func(u string) *messaging.Template {
		tm := chatTemplate(messaging.TypeImageOnly)
		tm.Config.ImageURL = u
		return tm
	}
	video := func(thumb string) *messaging.Template {
		tm := chatTemplate(messaging.TypeVideo)
		tm.Config.ThumbnailURL = thumb
		tm.Config.Duration = 30
		return tm
	}
	file := func(u string) *messaging.Template {
		tm := chatTemplate(messaging.TypeFile)
		tm.Config.FileURL = u
		return tm
	}
	carousel := func() *messaging.Template { return chatTemplate(messaging.TypeCarousel) }
	item1 := items(3)[1].ImageURL

	cases := []struct {
		name    string
		tmpl    *messaging.Template
		answers map[string]template.MediaInfo
		errs    map[string]error
		want    []string // failing fields
		probed  []string // URLs probed, sorted
	}{
		{name: "image 1 MB", tmpl: image(imgURL), answers: map[string]template.MediaInfo{imgURL: ok(1 << 20)}, probed: []string{imgURL}},
		{name: "image 1 MB + 1", tmpl: image(imgURL), answers: map[string]template.MediaInfo{imgURL: ok(1<<20 + 1)},
			want: []string{"typeSpecificConfig.imageUrl"}, probed: []string{imgURL}},
		{name: "image size unknown", tmpl: image(imgURL), answers: map[string]template.MediaInfo{imgURL: ok(-1)}, probed: []string{imgURL}},
		{name: "image 404", tmpl: image(imgURL), answers: map[string]template.MediaInfo{imgURL: {StatusCode: 404, ContentLength: -1}},
			want: []string{"typeSpecificConfig.imageUrl"}, probed: []string{imgURL}},
		{name: "image 301 left unresolved", tmpl: image(imgURL), answers: map[string]template.MediaInfo{imgURL: {StatusCode: 301, ContentLength: -1}},
			want: []string{"typeSpecificConfig.imageUrl"}, probed: []string{imgURL}},
		{name: "image 204", tmpl: image(imgURL), answers: map[string]template.MediaInfo{imgURL: {StatusCode: 204, ContentLength: -1}},
			probed: []string{imgURL}},
		{name: "image unreachable", tmpl: image(imgURL), errs: map[string]error{imgURL: errDown},
			want: []string{"typeSpecificConfig.imageUrl"}, probed: []string{imgURL}},
		{name: "image http: not probed", tmpl: image("http://cdn.example.com/a.jpg"), want: []string{"typeSpecificConfig.imageUrl"}},
		{name: "image plus text", tmpl: chatTemplate(messaging.TypeImagePlusText),
			answers: map[string]template.MediaInfo{imgURL: ok(2 << 20)}, want: []string{"typeSpecificConfig.imageUrl"}, probed: []string{imgURL}},
		{name: "carousel item 1 missing", tmpl: carousel(), answers: map[string]template.MediaInfo{item1: {StatusCode: 404}},
			want: []string{"typeSpecificConfig.items[1].imageUrl"}, probed: sortedItemURLs(3)},
		{name: "video 200 MB with thumbnail", tmpl: video(thumbURL),
			answers: map[string]template.MediaInfo{videoURL: ok(200 << 20), thumbURL: ok(1 << 20)}, probed: []string{thumbURL, videoURL}},
		{name: "video 200 MB + 1", tmpl: video(""), answers: map[string]template.MediaInfo{videoURL: ok(200<<20 + 1)},
			want: []string{"typeSpecificConfig.videoUrl"}, probed: []string{videoURL}},
		{name: "thumbnail 1 MB + 1", tmpl: video(thumbURL),
			answers: map[string]template.MediaInfo{videoURL: ok(10), thumbURL: ok(1<<20 + 1)},
			want:    []string{"typeSpecificConfig.thumbnailUrl"}, probed: []string{thumbURL, videoURL}},
		{name: "thumbnail unreachable, video fine", tmpl: video(thumbURL), errs: map[string]error{thumbURL: errDown},
			want: []string{"typeSpecificConfig.thumbnailUrl"}, probed: []string{thumbURL, videoURL}},
		{name: "file 200 MB", tmpl: file(fileURL), answers: map[string]template.MediaInfo{fileURL: ok(200 << 20)}, probed: []string{fileURL}},
		{name: "file 200 MB + 1", tmpl: file(fileURL), answers: map[string]template.MediaInfo{fileURL: ok(200<<20 + 1)},
			want: []string{"typeSpecificConfig.fileUrl"}, probed: []string{fileURL}},
		{name: "file 500", tmpl: file(fileURL), answers: map[string]template.MediaInfo{fileURL: {StatusCode: 500}},
			want: []string{"typeSpecificConfig.fileUrl"}, probed: []string{fileURL}},
		{name: "file url with placeholders: not probed", tmpl: file("https://files.example.com/{{id}}.pdf")},
		{name: "sms template: nothing probed", tmpl: smsTemplate()},
		{name: "simple text: nothing probed", tmpl: chatTemplate(messaging.TypeSimpleText)},
		{name: "survey: nothing probed", tmpl: chatTemplate(messaging.TypeSurvey)},
		{name: "button url never probed", tmpl: chatTemplate(messaging.TypeButtonPlusText)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProber{answers: tc.answers, errs: tc.errs}
			err := template.ValidateMedia(context.Background(), p, tc.tmpl)
			slices.Sort(p.calls)
			require.Equal(t, tc.probed, p.calls)
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			var e *messaging.Error
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, messaging.Invalid, e.Code)
			require.Equal(t, tc.want, slices.Sorted(maps.Keys(e.Fields)))
			for _, cause := range tc.errs {
				require.ErrorIs(t, err, cause, "the probe error is kept for logs")
				for _, msg := range e.Fields {
					require.NotContains(t, msg, cause.Error(), "field messages do not echo probe errors")
				}
			}
		})
	}
}

// An address the prober refused says so, and tells nothing more.
func TestValidateMediaAddressNotAllowed(t *testing.T) {
	tm := chatTemplate(messaging.TypeImageOnly)
	tm.Config.ImageURL = imgURL
	refused := fmt.Errorf("dial tcp 10.0.0.1:443: %w: 10.0.0.1 is private-use", egress.ErrNotAllowed)
	err := template.ValidateMedia(context.Background(), &fakeProber{errs: map[string]error{imgURL: refused}}, tm)
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "got %v", err)
	require.Equal(t, "imageUrl must point at a public internet address", e.Fields["typeSpecificConfig.imageUrl"])
	require.ErrorIs(t, err, egress.ErrNotAllowed)
}

func sortedItemURLs(n int) []string {
	var out []string
	for _, it := range items(n) {
		out = append(out, it.ImageURL)
	}
	slices.Sort(out)
	return out
}

func TestValidateMediaFillsVideoSize(t *testing.T) {
	tm := chatTemplate(messaging.TypeVideo)
	tm.Config.FileSize, tm.Config.Duration = 5, 42
	p := &fakeProber{answers: map[string]template.MediaInfo{videoURL: ok(123456)}}
	require.NoError(t, template.ValidateMedia(context.Background(), p, tm))
	require.EqualValues(t, 123456, tm.Config.FileSize)
	require.Equal(t, 42, tm.Config.Duration, "duration is the caller's")

	tm.Config.FileSize = 7
	p = &fakeProber{answers: map[string]template.MediaInfo{videoURL: ok(-1)}}
	require.NoError(t, template.ValidateMedia(context.Background(), p, tm))
	require.EqualValues(t, 7, tm.Config.FileSize, "an unknown length keeps the given size")

	p = &fakeProber{answers: map[string]template.MediaInfo{videoURL: {StatusCode: 404, ContentLength: 99}}}
	require.Error(t, template.ValidateMedia(context.Background(), p, tm))
	require.EqualValues(t, 7, tm.Config.FileSize, "a failed probe sets nothing")
}

func TestValidateMediaProbesOncePerURL(t *testing.T) {
	tm := chatTemplate(messaging.TypeCarousel)
	for i := range tm.Config.Items {
		tm.Config.Items[i].ImageURL = imgURL
	}
	p := &fakeProber{answers: map[string]template.MediaInfo{imgURL: {StatusCode: 404}}}
	fe, err := template.CheckMedia(context.Background(), p, tm)
	require.NoError(t, err)
	require.Equal(t, []string{imgURL}, p.calls)
	require.Len(t, fe, 3, "every item using the URL is reported")
}

// barrierProber answers only once n probes are in flight together.
type barrierProber struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

func (b *barrierProber) Probe(ctx context.Context, _ string) (template.MediaInfo, error) {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return ok(10), nil
	case <-ctx.Done():
		return template.MediaInfo{}, ctx.Err()
	}
}

func TestValidateMediaProbesConcurrently(t *testing.T) {
	tm := chatTemplate(messaging.TypeCarousel)
	tm.Config.Items = items(5)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := &barrierProber{n: 5, all: make(chan struct{})}
	require.NoError(t, template.ValidateMedia(ctx, p, tm), "five probes must run at the same time")
}

func TestValidateMediaContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &barrierProber{n: 2, all: make(chan struct{})}
	err := template.ValidateMedia(ctx, p, chatTemplate(messaging.TypeImageOnly))
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, messaging.IsCode(err, messaging.Invalid), "a cancelled check is not a validation failure")
}

func TestValidateMediaNeedsProber(t *testing.T) {
	require.Error(t, template.ValidateMedia(context.Background(), nil, chatTemplate(messaging.TypeImageOnly)))
	require.NoError(t, template.ValidateMedia(context.Background(), nil, chatTemplate(messaging.TypeSimpleText)))
}
