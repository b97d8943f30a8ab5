package messaging

// NormalizePhone checks a phone number against the API's rule
// `^\+?\d{10,15}$` and returns it without the leading '+'. ok is false for
// anything else (spaces, dashes, parentheses, wrong length).
func NormalizePhone(s string) (normalized string, ok bool) {
	digits := s
	if len(digits) > 0 && digits[0] == '+' {
		digits = digits[1:]
	}
	if len(digits) < 10 || len(digits) > 15 {
		return "", false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", false
		}
	}
	return digits, true
}
