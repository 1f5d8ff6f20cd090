package grpcretry

// Pushback exposes the trailer parser to the tests.
var Pushback = pushback
