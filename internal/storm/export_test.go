package storm

// Seconds formats a latency as the storm demo's table prints it, for the
// tests that hold the README's copies of that table.
var Seconds = seconds
