package retry

import (
	"math"
	"testing"
	"time"
)

func TestSatAdd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b, want time.Duration
	}{
		{0, 0, 0},
		{time.Second, time.Hour, time.Hour + time.Second},
		{-time.Second, time.Second, 0},
		{maxDuration, 0, maxDuration},
		{maxDuration, -1, maxDuration - 1},
		{maxDuration, minDuration, -1},
		{maxDuration - time.Second, time.Second, maxDuration},
		{maxDuration - time.Second, time.Second + 1, maxDuration},
		{maxDuration, 1, maxDuration},
		{maxDuration, maxDuration, maxDuration},
		{time.Second, maxDuration, maxDuration},
		{minDuration, 0, minDuration},
		{minDuration, -1, minDuration},
		{minDuration + 1, -1, minDuration},
		{minDuration + 1, -2, minDuration},
		{minDuration, minDuration, minDuration},
		{minDuration, 1, minDuration + 1},
	}
	for _, tt := range tests {
		if got := satAdd(tt.a, tt.b); got != tt.want {
			t.Errorf("satAdd(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := satAdd(tt.b, tt.a); got != tt.want {
			t.Errorf("satAdd(%d, %d) = %d, want %d (commuted)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestSatMul(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		f    float64
		want time.Duration
	}{
		{time.Second, 1.5, 1500 * time.Millisecond},
		{time.Second, 0, 0},
		{time.Second, -2, -2 * time.Second},
		{10 * time.Millisecond, 0.75, 7500 * time.Microsecond},
		{3, 0.5, 1}, // rounds toward zero
		{-3, 0.5, -1},
		{maxDuration, 1, maxDuration}, // 2^63 as a float64
		{maxDuration, 0.5, 1 << 62},
		{maxDuration, 2, maxDuration},
		{maxDuration, -1, minDuration},
		{minDuration, 1, minDuration},
		{minDuration, -1, maxDuration},
		{time.Hour, 1e300, maxDuration},
		{time.Hour, math.Inf(1), maxDuration},
		{time.Hour, math.Inf(-1), minDuration},
		{-time.Hour, math.Inf(1), minDuration},
		{0, math.Inf(1), 0}, // NaN
		{time.Hour, math.NaN(), 0},
		{1, math.MaxFloat64, maxDuration},
	}
	for _, tt := range tests {
		if got := satMul(tt.d, tt.f); got != tt.want {
			t.Errorf("satMul(%d, %v) = %d, want %d", tt.d, tt.f, got, tt.want)
		}
	}
}

func TestSatDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ns   float64
		want time.Duration
	}{
		{0, 0},
		{math.Copysign(0, -1), 0},
		{1.9, 1},
		{-1.9, -1},
		{1e9, time.Second},
		{1 << 62, 1 << 62},
		{math.Nextafter(1<<63, 0), 1<<63 - 1024}, // the largest float64 that fits
		{1 << 63, maxDuration},
		{math.MaxInt64, maxDuration}, // the constant rounds to 2^63
		{1e30, maxDuration},
		{math.MaxFloat64, maxDuration},
		{math.Inf(1), maxDuration},
		{-1 << 63, minDuration}, // fits exactly
		{math.Nextafter(-1<<63, 0), -1<<63 + 1024},
		{-1e30, minDuration},
		{math.Inf(-1), minDuration},
		{math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := satDuration(tt.ns); got != tt.want {
			t.Errorf("satDuration(%v) = %d, want %d", tt.ns, got, tt.want)
		}
	}
}
