package otelretry

// Seams for the tests of the attribute values.
var (
	ErrorType    = errorType
	GiveUpReason = giveUpReason
)
