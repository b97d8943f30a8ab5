package survey_test

// must returns v, and panics on err: for tests whose setup cannot fail.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
