package survey_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/survey"
)

func TestNewNeedsAStore(t *testing.T) {
	_, err := survey.New(survey.Config{})
	require.ErrorContains(t, err, "Store is required")
}
